#!/usr/bin/env bash
# bench-migrate.sh [ROWS]: an end-to-end local migration (the workflow under
# pkg/asl, in-process steps) of a seeded catalog on versitygw, on 127.0.0.1:
# wall time per state, the process's peak RSS and its CPU time (user + sys,
# and over wall: 2 is both cores busy throughout). BENCH_REPS (default 1)
# runs it that many times, each on a fresh stack and catalog: the total is
# then best / median, the states those of the best run. BENCH_REBUILD=1
# runs `migrate --rebuild` (v1 into a fresh v1 catalog) instead of --to v2;
# BENCH_DOWN=1 migrates the seeded catalog to v2 first (not timed) and then
# times `migrate --to v1`, the way down.
# Prints Markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench-migrate: needs GNU time (scripts/install-gnu-time.sh; make bench runs it)" >&2; exit 2; }
ROWS=${1:-1000000}
SHARDS=${BENCH_SHARDS:-16}
REPS=${BENCH_REPS:-1}
TO=(--to v2)
[ "${BENCH_REBUILD:-0}" = 1 ] && TO=(--rebuild)
[ "${BENCH_DOWN:-0}" = 1 ] && TO=(--to v1)
M=bin/rocklake-migrate
work=$(mktemp -d); stack=""
stop_stack() { [ -n "$stack" ] && { kill "$stack" 2>/dev/null || true; wait "$stack" 2>/dev/null || true; }; stack=""; }
cleanup() { stop_stack; rm -rf "$work"; }
trap cleanup EXIT
for rep in $(seq "$REPS"); do
  d="$work/$rep"; mkdir -p "$d"
  bin/run-local-s3 --buckets rocklake --env-file "$d/env" >"$d/stack.log" 2>&1 &
  stack=$!
  for _ in $(seq 1 300); do [ -f "$d/env" ] && break; sleep 0.1; done
  # shellcheck disable=SC1091
  . "$d/env"
  $M seed --catalog s3://rocklake/catalogs/prod --rows "$ROWS" --seed 1 >/dev/null
  $M init-pointer --pointer s3://rocklake/CURRENT --catalog s3://rocklake/catalogs/prod >/dev/null
  if [ "${BENCH_DOWN:-0}" = 1 ]; then
    $M migrate --pointer s3://rocklake/CURRENT --to v2 --shards "$SHARDS" --offline --json >/dev/null 2>&1
  fi
  /usr/bin/time -f "%e %M %U %S" -o "$d/time" $M migrate --pointer s3://rocklake/CURRENT "${TO[@]}" --shards "$SHARDS" --offline --json >"$d/report.json" 2>/dev/null
  echo "$(cut -d' ' -f1-3 /proc/loadavg)" > "$d/load"
  stop_stack
done
python3 - "$work" "$REPS" "$ROWS" "$SHARDS" "${TO[*]}" <<'PY'
import json, sys, os
work, reps, rows, shards, how = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
runs = []
for r in range(1, reps + 1):
    d = os.path.join(work, str(r))
    secs, kb, user, sys_ = open(os.path.join(d, "time")).read().split()
    rep = json.load(open(os.path.join(d, "report.json")))
    runs.append(dict(secs=float(secs), kb=int(kb), cpu=float(user) + float(sys_), rep=rep, load=open(os.path.join(d, "load")).read().strip()))
runs.sort(key=lambda x: x["secs"])
best, med = runs[0], runs[(len(runs) - 1) // 2]
print(f"migrate {how}: {rows} rows, {shards} shards, {reps} run(s): {best['rep']['outcome']} in {best['secs']:.1f} s best / {med['secs']:.1f} s median "
      f"({rows/best['secs']:,.0f} rows/s), peak RSS {max(r['kb'] for r in runs)/1024:.0f} MiB, "
      f"CPU {best['cpu']:.1f} s ({best['cpu']/best['secs']:.2f} of wall) in the best; load average after each run: {', '.join(r['load'] for r in runs)}")
print("| state (best run) | seconds (Map items summed) |\n|---|---|")
for name, s in sorted(best["rep"]["state_seconds"].items(), key=lambda kv: -kv[1]):
    if s >= 0.005:
        print(f"| {name} | {s:.2f} |")
PY
