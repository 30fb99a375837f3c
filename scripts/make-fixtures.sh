#!/usr/bin/env bash
# Writes a small catalog with the real RockLake binary, over the PostgreSQL
# wire (jackc/pgx's pgconn), into OUT (default: testdata/rocklake-v0.47.11):
#   OUT/catalog/       the SlateDB database (rocklake serve's catalog root)
#   OUT/expected.json  what the workload wrote (rocklake.Expected)
#   OUT/verify.txt     `rocklake verify catalog` on it
#   OUT/inspect.txt    `rocklake inspect snapshot` on it
#   OUT/duckdb/        the same for a catalog DuckDB 1.5.3 wrote
#                      (rocklake.DuckDBWorkload), with answers.json
# The workloads are WriteSampleCatalog and DuckDBWorkload of
# internal/testenv/rocklake. The catalog directories must not exist or be
# empty. Needs `make tools` (rocklake, duckdb). The helpers are test rigs
# (internal/testenv), run through `go test`: nothing of the product writes
# fixtures. pkg/catalog's fixture tests read the result.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/testdata/rocklake-v0.47.11}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

cd "$repo"
go test -count=1 -run '^TestWriteFixture$' -v ./internal/testenv/rocklake/ -args -rocklake.fixture="$out"
echo "wrote $out" >&2
