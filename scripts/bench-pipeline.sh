#!/usr/bin/env bash
# bench-pipeline.sh [ROWS...]: wall time, rows/s and peak RSS of each Strategy B
# stage (seed, export, transform, import, verify) on file://, as separate
# processes so that each RSS is its own; then the raw SlateDB put and scan
# rates measured in the same run, for the ratio. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench-pipeline: needs GNU time (apt-get install time)" >&2; exit 2; }
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(100000 1000000)
M=bin/rocklake-migrate
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
SHARDS=${BENCH_SHARDS:-8}

measure() { # measure NAME ROWS CMD... → "| NAME | ROWS | secs | rows/s | MiB |"
  local name=$1 rows=$2; shift 2
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null
  read -r secs kb < "$work/time"
  awk -v n="$name" -v r="$rows" -v s="$secs" -v k="$kb" \
    'BEGIN { printf "| %s | %d | %.2f | %.0f | %.0f |\n", n, r, s, (s > 0 ? r / s : 0), k / 1024 }'
}

echo "| stage | rows | seconds | rows/s | peak RSS MiB |"
echo "|---|---|---|---|---|"
for n in "${sizes[@]}"; do
  d="$work/$n"; mkdir -p "$d"
  measure seed "$n" $M seed --catalog "file://$d/src" --rows "$n" --seed 1
  measure export "$n" $M export --catalog "file://$d/src" --format v1 --output "$d/v1" --shards "$SHARDS" --compression none
  measure transform "$n" $M transform --input "$d/v1" --output "$d/v2" --to v2
  measure import "$n" $M import --format v2 --input "$d/v2" --catalog "file://$d/dst"
  measure verify "$n" $M verify --catalog "file://$d/dst" --input "$d/v2"
  rm -rf "$d"
done
echo
echo "raw pkg/slatedb, same run:"
go test -run '^$' -bench . -benchtime 1x ./pkg/slatedb/ | grep -E '^Benchmark'
