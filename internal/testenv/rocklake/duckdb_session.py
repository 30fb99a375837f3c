# A DuckDB session that keeps its DuckLake catalog attached through
# `rocklake serve` (one connection, as an application holds it), driven by
# internal/testenv/rocklake's DuckDBSession. Input (stdin, JSON, one line):
# {"port": P, "data_path": DIR, "every": SECONDS}. Every `every` seconds it
# inserts the next id into lake.main.acks and reads the table's count,
# printing one JSON line per statement: {"op": "write"|"read", "id": N,
# "at": UNIX, "ok": bool, "error": "..."}. A statement that fails on a
# closed connection is not retried: the next one is the client's retry, as
# an application's would be. When the file named by argv[1] appears it
# reads every id back ({"op": "final", "ids": [...]}) and exits.
import importlib.util
import json
import os
import sys
import time

import duckdb


def extension(package, name):
    root = os.path.dirname(importlib.util.find_spec(package).origin)
    path = os.path.join(root, "extensions", "v" + duckdb.__version__, name + ".duckdb_extension")
    if not os.path.exists(path):
        sys.exit("duckdb session: no extension file " + path)
    return path


def emit(**kw):
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


req = json.loads(sys.stdin.readline())
stop = sys.argv[1]
con = duckdb.connect(config={
    "allow_unsigned_extensions": "true",
    "autoinstall_known_extensions": "false",
    "autoload_known_extensions": "false",
})
for package, name in [("duckdb_extension_parquet", "parquet"),
                      ("duckdb_extension_postgres_scanner", "postgres_scanner"),
                      ("duckdb_extension_ducklake", "ducklake")]:
    con.execute("LOAD '%s'" % extension(package, name).replace("'", "''"))
con.execute(
    "ATTACH 'ducklake:postgres:host=127.0.0.1 port=%d user=rocklake dbname=rocklake sslmode=disable' "
    "AS lake (DATA_PATH '%s', DATA_INLINING_ROW_LIMIT 0)" % (int(req["port"]), req["data_path"].replace("'", "''")))
con.execute("CREATE TABLE IF NOT EXISTS lake.main.acks (id BIGINT)")
emit(op="ready", at=time.time())
n = 0
every = float(req.get("every", 0.2))
while not os.path.exists(stop):
    n += 1
    at = time.time()
    try:
        con.execute("INSERT INTO lake.main.acks VALUES (%d)" % n)
        emit(op="write", id=n, at=at, ok=True)
    except Exception as e:
        emit(op="write", id=n, at=at, ok=False, error=str(e)[:300])
    at = time.time()
    try:
        c = con.execute("SELECT count(*) FROM lake.main.acks").fetchone()[0]
        emit(op="read", id=n, at=at, ok=True, count=c)
    except Exception as e:
        emit(op="read", id=n, at=at, ok=False, error=str(e)[:300])
    time.sleep(max(0.0, every - (time.time() - at)))
ids = None
for _ in range(50):
    try:
        ids = [r[0] for r in con.execute("SELECT id FROM lake.main.acks ORDER BY id").fetchall()]
        break
    except Exception as e:
        emit(op="final-retry", at=time.time(), error=str(e)[:300])
        time.sleep(0.2)
emit(op="final", at=time.time(), ids=ids)
con.close()
