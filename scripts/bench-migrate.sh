#!/usr/bin/env bash
# bench-migrate.sh [ROWS]: an end-to-end local migration (the workflow under
# pkg/asl, in-process steps) of a seeded catalog on versitygw, on 127.0.0.1:
# wall time per state and the process's peak RSS. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench-migrate: needs GNU time (scripts/install-gnu-time.sh; make bench runs it)" >&2; exit 2; }
ROWS=${1:-1000000}
SHARDS=${BENCH_SHARDS:-16}
work=$(mktemp -d); stack=""
cleanup() { [ -n "$stack" ] && { kill "$stack" 2>/dev/null || true; wait "$stack" 2>/dev/null || true; }; rm -rf "$work"; }
trap cleanup EXIT
bin/localstack --buckets rocklake --env-file "$work/env" >"$work/stack.log" 2>&1 &
stack=$!
for _ in $(seq 1 300); do [ -f "$work/env" ] && break; sleep 0.1; done
# shellcheck disable=SC1091
. "$work/env"
M=bin/rocklake-migrate
$M seed --catalog s3://rocklake/catalogs/prod --rows "$ROWS" --seed 1 >/dev/null
$M init-pointer --pointer s3://rocklake/CURRENT --catalog s3://rocklake/catalogs/prod >/dev/null
/usr/bin/time -f "%e %M" -o "$work/time" $M migrate --pointer s3://rocklake/CURRENT --to v2 --shards "$SHARDS" --json >"$work/report.json" 2>/dev/null
read -r secs kb < "$work/time"
python3 - "$work/report.json" "$secs" "$kb" "$ROWS" "$SHARDS" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1])); secs, kb, rows, shards = float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
print(f"{rows} rows, {shards} shards: {rep['outcome']} in {secs:.1f} s ({rows/secs:,.0f} rows/s), peak RSS {kb/1024:.0f} MiB")
print("| state | seconds (Map items summed) |\n|---|---|")
for name, s in sorted(rep["state_seconds"].items(), key=lambda kv: -kv[1]):
    print(f"| {name} | {s:.2f} |")
PY
