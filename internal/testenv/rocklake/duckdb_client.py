# DuckDB as a DuckLake client of `rocklake serve`, driven by internal/testenv/rocklake.
# Input (stdin, JSON): {"port": P, "data_path": DIR, "statements": [...],
# "queries": [...]}. It attaches the catalog as DuckDB's DuckLake extension
# does for any PostgreSQL-backed catalog, runs the statements, then the
# queries, and prints {"results": [[row, ...], ...]} with every value as
# text. Extensions load from the PyPI wheels' files: no network.
import importlib.util
import json
import os
import sys

import duckdb


def extension(package, name):
    root = os.path.dirname(importlib.util.find_spec(package).origin)
    path = os.path.join(root, "extensions", "v" + duckdb.__version__, name + ".duckdb_extension")
    if not os.path.exists(path):
        sys.exit("duckdb client: no extension file " + path)
    return path


req = json.load(sys.stdin)
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
