#!/usr/bin/env bash
# bench-pipeline.sh [ROWS...]: wall time, rows/s, peak RSS and CPU/wall of each
# Strategy B stage (seed, export, transform, import, verify) on file://, as
# separate processes so that each RSS is its own; then the raw SlateDB put and
# scan rates measured in the same run, for the ratio. BENCH_REPS (default 1)
# runs each stage after seed that many times: seconds are best / median,
# rows/s from the best, RSS the highest. BENCH_BIN (default bin) is the
# directory of the rocklake-migrate binary to time, and may list several
# (BENCH_BIN="/tmp/old bin"): each stage then runs with each binary in turn,
# on the same data, for an A/B in one run (the binary is the table's first
# column). Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench-pipeline: needs GNU time (scripts/install-gnu-time.sh; make bench runs it)" >&2; exit 2; }
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(100000 1000000)
read -r -a bins <<< "${BENCH_BIN:-bin}"
for b in "${bins[@]}"; do
  [ -x "$b/rocklake-migrate" ] || { echo "bench-pipeline: no $b/rocklake-migrate (make build, or set BENCH_BIN)" >&2; exit 2; }
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
SHARDS=${BENCH_SHARDS:-8}
REPS=${BENCH_REPS:-1}

# measure BIN NAME ROWS REPS PREP CMD...: runs PREP (a shell command clearing
# the stage's output) then CMD, REPS times, and prints
# "| BIN | NAME | ROWS | best / median s | rows/s | MiB | CPU/wall |".
measure() {
  local bin=$1 name=$2 rows=$3 reps=$4 prep=$5; shift 5
  : > "$work/times"
  for _ in $(seq "$reps"); do
    eval "$prep"
    /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$@" >/dev/null
    cat "$work/time" >> "$work/times"
  done
  sort -n "$work/times" | awk -v b="$bin" -v n="$name" -v r="$rows" '
    { s[NR] = $1; if ($2 > k) k = $2; c[NR] = ($1 > 0 ? ($3 + $4) / $1 : 0) }
    END {
      for (i = 2; i <= NR; i++) for (j = i; j > 1 && c[j - 1] > c[j]; j--) { t = c[j]; c[j] = c[j - 1]; c[j - 1] = t }
      med = s[int((NR + 1) / 2)]; cpu = c[int((NR + 1) / 2)]
      printf "| %s | %s | %d | %.2f / %.2f | %.0f | %.0f | %.2f |\n", b, n, r, s[1], med, (s[1] > 0 ? r / s[1] : 0), k / 1024, cpu
    }'
}

echo "| binary | stage | rows | seconds (best / median) | rows/s | peak RSS MiB | CPU/wall |"
echo "|---|---|---|---|---|---|---|"
# stage NAME ROWS REPS PREP ARGS...: the stage with every binary in turn.
stage() {
  local name=$1 rows=$2 reps=$3 prep=$4; shift 4
  for b in "${bins[@]}"; do
    measure "$b" "$name" "$rows" "$reps" "$prep" "$b/rocklake-migrate" "$@"
  done
}
for n in "${sizes[@]}"; do
  d="$work/$n"; mkdir -p "$d"
  M=${bins[0]}/rocklake-migrate
  measure "${bins[0]}" seed "$n" 1 "rm -rf $d/src" "$M" seed --catalog "file://$d/src" --rows "$n" --seed 1
  stage export "$n" "$REPS" "rm -rf $d/v1" export --catalog "file://$d/src" --format v1 --output "$d/v1" --shards "$SHARDS" --compression none
  stage transform "$n" "$REPS" "rm -rf $d/v2" transform --input "$d/v1" --output "$d/v2" --to v2
  stage import "$n" "$REPS" "rm -rf $d/dst" import --format v2 --input "$d/v2" --catalog "file://$d/dst"
  stage verify "$n" "$REPS" ":" verify --catalog "file://$d/dst" --input "$d/v2"
  rm -rf "$d"
done
echo
echo "raw pkg/slatedb, same run:"
go test -run '^$' -bench . -benchtime 1x ./pkg/slatedb/ | grep -E '^Benchmark'
