#!/usr/bin/env bash
# bench-serve.sh [ROWS...]: what a client of `rocklake-migrate serve` sees
# through `migrate --to v2` of a seeded catalog and the rollback after it,
# with the real rocklake binary on 127.0.0.1, release-built (opt-level 3:
# `scripts/install-rocklake.sh release`, not the tests' quicker build)
# and the pointer on versitygw: the longest read gap (first failed to first
# successful read), the write freeze (first refused write to the flip) and
# the rollback's write gap (one restart). Default sizes: 100000 and 1000000.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- 100000 1000000
scripts/install-rocklake.sh release
export ROCKLAKE_BIN="${ROCKLAKE_CACHE:-$HOME/.cache/rocklake-migrate}/bin/rocklake-release"
for rows in "$@"; do
  echo "== $rows rows ($(cut -d' ' -f1-3 /proc/loadavg))"
  ROCKLAKE_BENCH_ROWS=$rows timeout 1800 go test -count=1 -run '^$' -bench 'BenchmarkServeSwitch' -benchtime 1x -timeout 30m ./cmd/rocklake-migrate/ |
    grep -E 'BenchmarkServeSwitch|read gaps|read replica' || true
done
