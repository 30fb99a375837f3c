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
# column; seed runs with the first). Prints a Markdown table.
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

# stage NAME ROWS REPS PREP ARGS...: runs PREP (a shell command clearing the
# stage's output) then rocklake-migrate ARGS, REPS times with each binary of
# BINS, the binaries taking turns within each repetition (so that a change
# in the machine's load falls on all of them alike), and prints for each
# "| BIN | NAME | ROWS | best / median s | rows/s | MiB | CPU/wall | CPU s |"
# (CPU s: user + system, the median; on a shared machine, what the stage
# costs whatever share of the cores it got).
stage() {
  local name=$1 rows=$2 reps=$3 prep=$4; shift 4
  local i
  for i in "${!BINS[@]}"; do : > "$work/times.$i"; done
  for _ in $(seq "$reps"); do
    for i in "${!BINS[@]}"; do
      eval "$prep"
      /usr/bin/time -f "%e %M %U %S" -o "$work/time" "${BINS[$i]}/rocklake-migrate" "$@" >/dev/null
      cat "$work/time" >> "$work/times.$i"
    done
  done
  for i in "${!BINS[@]}"; do
    sort -n "$work/times.$i" | awk -v b="${BINS[$i]}" -v n="$name" -v r="$rows" '
      { s[NR] = $1; if ($2 > k) k = $2; c[NR] = ($1 > 0 ? ($3 + $4) / $1 : 0); u[NR] = $3 + $4 }
      END {
        for (i = 2; i <= NR; i++) for (j = i; j > 1 && c[j - 1] > c[j]; j--) { t = c[j]; c[j] = c[j - 1]; c[j - 1] = t }
        for (i = 2; i <= NR; i++) for (j = i; j > 1 && u[j - 1] > u[j]; j--) { t = u[j]; u[j] = u[j - 1]; u[j - 1] = t }
        m = int((NR + 1) / 2)
        printf "| %s | %s | %d | %.2f / %.2f | %.0f | %.0f | %.2f | %.2f |\n", b, n, r, s[1], s[m], (s[1] > 0 ? r / s[1] : 0), k / 1024, c[m], u[m]
      }'
  done
}

echo "| binary | stage | rows | seconds (best / median) | rows/s | peak RSS MiB | CPU/wall | CPU s |"
echo "|---|---|---|---|---|---|---|---|"
for n in "${sizes[@]}"; do
  d="$work/$n"; mkdir -p "$d"
  BINS=("${bins[0]}")
  stage seed "$n" 1 "rm -rf $d/src" seed --catalog "file://$d/src" --rows "$n" --seed 1
  BINS=("${bins[@]}")
  stage export "$n" "$REPS" "rm -rf $d/v1" export --catalog "file://$d/src" --format v1 --output "$d/v1" --shards "$SHARDS" --compression none
  stage transform "$n" "$REPS" "rm -rf $d/v2" transform --input "$d/v1" --output "$d/v2" --to v2
  stage import "$n" "$REPS" "rm -rf $d/dst" import --format v2 --input "$d/v2" --catalog "file://$d/dst"
  stage verify "$n" "$REPS" ":" verify --catalog "file://$d/dst" --input "$d/v2"
  rm -rf "$d"
done
echo
echo "raw pkg/slatedb, same run:"
go test -run '^$' -bench . -benchtime 1x ./pkg/slatedb/ | grep -E '^Benchmark'
