# DuckDB as a DuckLake client of `rocklake serve`, driven by internal/testenv/rocklake.
# It attaches the catalog as DuckDB's DuckLake extension does for any
# PostgreSQL-backed catalog; extensions load from the PyPI wheels' files: no
# network. Two modes:
#
#   duckdb_client.py              input (stdin, JSON): {"port": P, "data_path": DIR,
#                                 "statements": [...], "queries": [...]}; runs the
#                                 statements, then the queries, and prints
#                                 {"results": [[row, ...], ...]} with every value as text.
#   duckdb_client.py session STOP a session that keeps its one connection, as an
#                                 application holds it (DuckDBSession). Input (one
#                                 JSON line): {"port": P, "data_path": DIR, "every": S}.
#                                 Every S seconds it inserts the next id into
#                                 lake.main.acks and reads the count, printing one JSON
#                                 line per statement: {"op": "write"|"read", "id": N,
#                                 "at": UNIX, "ok": bool, "error": "..."}; a statement
#                                 that fails is not retried (the next one is the
#                                 client's retry). When the file STOP appears it reads
#                                 every id back ({"op": "final", "ids": [...]}) and exits.
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
        sys.exit("duckdb client: no extension file " + path)
    return path


def connect(req):
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
    return con


def once():
    req = json.load(sys.stdin)
    con = connect(req)
    for s in req.get("statements") or []:
        try:
            con.execute(s)
        except Exception as e:
            sys.exit("duckdb client: %s: %s" % (s, e))
    results = []
    for q in req.get("queries") or []:
        try:
            rows = con.execute(q).fetchall()
        except Exception as e:
            sys.exit("duckdb client: %s: %s" % (q, e))
        results.append([[None if v is None else str(v) for v in r] for r in rows])
    con.close()
    json.dump({"results": results}, sys.stdout)


def emit(**kw):
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


def session(stop):
    req = json.loads(sys.stdin.readline())
    con = connect(req)
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


if len(sys.argv) > 2 and sys.argv[1] == "session":
    session(sys.argv[2])
else:
    once()
