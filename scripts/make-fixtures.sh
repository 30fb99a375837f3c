#!/usr/bin/env bash
# Writes a small catalog with the real RockLake binary, through psql and the
# PostgreSQL wire, into OUT (default: testdata/rocklake-v0.47.11):
#   OUT/catalog/       the SlateDB database (rocklake serve's catalog root)
#   OUT/expected.json  what the workload wrote (pkg/rocklake.Expected)
#   OUT/verify.txt     `rocklake verify catalog` on it
#   OUT/inspect.txt    `rocklake inspect snapshot` on it
#   OUT/duckdb/        the same for a catalog DuckDB 1.5.3 wrote
#                      (pkg/rocklake.DuckDBWorkload), with answers.json
# The workloads are pkg/rocklake.WriteSampleCatalog and DuckDBWorkload. The
# catalog directories must not exist or be empty. Needs `make tools`
# (rocklake, psql, duckdb). pkg/catalog's fixture tests read the result.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/testdata/rocklake-v0.47.11}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

cd "$repo"
go test -count=1 -run '^TestWriteFixture$' -v ./pkg/rocklake/ -args -rocklake.fixture="$out"
echo "wrote $out" >&2
