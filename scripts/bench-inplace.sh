#!/usr/bin/env bash
# bench-inplace.sh [ROWS...]: Strategy A (migrate --in-place) against Strategy
# B (the workflow: export, transform, import, verify, flip) on the same seeded
# catalogs on versitygw (127.0.0.1), and A's rollback (a pointer flip to the
# way back A copied beside the catalog): wall time, peak RSS
# (GNU time) and the bytes each run wrote to S3 (new or rewritten objects in
# the gateway's data directory: catalog, staging, pointer and lock). Prints a
# Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench-inplace: needs GNU time (apt-get install time)" >&2; exit 2; }
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000)
SHARDS=${BENCH_SHARDS:-8}
M=bin/rocklake-migrate
work=$(mktemp -d); stack=""
cleanup() { [ -n "$stack" ] && { kill "$stack" 2>/dev/null || true; wait "$stack" 2>/dev/null || true; }; rm -rf "$work"; }
trap cleanup EXIT
bin/run-local-s3 --dir "$work/s3" --buckets rocklake --env-file "$work/env" >"$work/stack.log" 2>&1 &
stack=$!
for _ in $(seq 1 300); do [ -f "$work/env" ] && break; sleep 0.1; done
# shellcheck disable=SC1091
. "$work/env"

snapshot() { find "$work/s3/data" -type f -printf '%p %s %T@\n' | sort; }
# run NAME CMD...: runs CMD under GNU time; prints "secs MiB written_bytes".
run() {
  local name=$1; shift
  snapshot >"$work/before"
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/$name.json" 2>"$work/$name.err" ||
    { echo "bench-inplace: $name failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
  snapshot >"$work/after"
  read -r secs kb <"$work/time"
  written=$(comm -13 "$work/before" "$work/after" | awk '{ s += $(NF-1) } END { print s + 0 }')
  echo "$secs $((kb / 1024)) $written"
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

echo "| rows | catalog (v2 keys+values) | A: migrate --in-place (way back copied) | A: rollback (pointer flip) | B: migrate ($SHARDS shards) |"
echo "|---|---|---|---|---|"
for n in "${sizes[@]}"; do
  for s in a b; do
    $M seed --catalog "s3://rocklake/$s-$n/prod" --rows "$n" --seed 1 >/dev/null
    $M init-pointer --pointer "s3://rocklake/$s-$n/CURRENT" --catalog "s3://rocklake/$s-$n/prod" >/dev/null
  done
  read -r a_s a_m a_w < <(run "a-$n" $M migrate --pointer "s3://rocklake/a-$n/CURRENT" --to v2 --in-place --in-place-max-bytes $((256 << 20)) --json)
  read -r bytes wb < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["in_place"]; print(r["bytes"], r["way_back"]["bytes"])' "$work/a-$n.json")
  read -r r_s r_m r_w < <(run "r-$n" $M rollback --pointer "s3://rocklake/a-$n/CURRENT" --json)
  read -r b_s b_m b_w < <(run "b-$n" $M migrate --pointer "s3://rocklake/b-$n/CURRENT" --to v2 --shards "$SHARDS" --json)
  echo "| $n | $(mib "$bytes") MiB | $a_s s, $a_m MiB RSS, $(mib "$a_w") MiB written ($(mib "$wb") MiB of it the way back) | $r_s s, $r_m MiB RSS, $(mib "$r_w") MiB written | $b_s s, $b_m MiB RSS, $(mib "$b_w") MiB written |"
done
