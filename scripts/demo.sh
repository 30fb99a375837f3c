#!/usr/bin/env bash
# The demo: first the last mile, the real RockLake under `rocklake-migrate
# serve` with a client committing while a catalog is migrated and rolled
# back; then a format-1 catalog on a local S3 (versitygw on 127.0.0.1)
# migrated to format 2: plan, a dry run, a gated migration and its
# approval, rollback, history and cleanup, Strategy A in place, and
# Strategy B by hand.
# Starts the stack itself and stops it on exit, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=bin
ROWS=${DEMO_ROWS:-100000}
work=$(mktemp -d)
stack_pid=""
serve_pid=""
client_pid=""
cleanup() {
  for pid in $client_pid $serve_pid $stack_pid; do
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "start the local S3 stack (versitygw, versioned buckets, loopback only)"
"$BIN/run-local-s3" --buckets rocklake,rocklake-staging --env-file "$work/stack.env" &
stack_pid=$!
for _ in $(seq 1 300); do [ -f "$work/stack.env" ] && break; kill -0 "$stack_pid" 2>/dev/null || exit 1; sleep 0.1; done
[ -f "$work/stack.env" ] || { echo "local stack did not come up" >&2; exit 1; }
# shellcheck disable=SC1091
. "$work/stack.env"
echo "S3 endpoint $AWS_ENDPOINT"

M="$BIN/rocklake-migrate"

step "the last mile: the real RockLake under rocklake-migrate serve, a client committing every 0.2 s through a migration and a rollback"
LIVE=s3://rocklake/live/CURRENT
ROCKLAKE_BIN=$(command -v rocklake) || { echo "no rocklake binary on PATH (make demo installs it)" >&2; exit 1; }
run "$M" seed --catalog "file://$work/live/prod" --rows 20000 --seed 3
run "$M" init-pointer --pointer "$LIVE" --catalog "file://$work/live/prod"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '$ %s\n' "$M serve --pointer $LIVE --rocklake 1=$ROCKLAKE_BIN --interval 500ms -- --bind 127.0.0.1:$PORT --drain-timeout 1 &"
"$M" serve --pointer "$LIVE" --rocklake "1=$ROCKLAKE_BIN" --interval 500ms -- --bind "127.0.0.1:$PORT" --drain-timeout 1 >"$work/rocklake.log" 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
printf '$ %s\n' "$BIN/demo-client --port $PORT --acked acked.txt &   # commits a schema every 0.2 s"
"$BIN/demo-client" --port "$PORT" --acked "$work/acked.txt" &
client_pid=$!
sleep 2
run "$M" migrate --pointer "$LIVE" --rebuild --target-dir "file://$work/live/" --shards 4
sleep 3
run "$M" rollback --pointer "$LIVE"
sleep 2
kill -TERM "$client_pid"; wait "$client_pid" || true; client_pid=""
run "$BIN/demo-client" --port "$PORT" --acked "$work/acked.txt" --check
run "$M" history --pointer "$LIVE"
kill -TERM "$serve_pid"; wait "$serve_pid" || true; serve_pid=""

SRC=s3://rocklake/catalogs/prod-v1
POINTER=s3://rocklake/CURRENT
STAGING=s3://rocklake-staging/by-hand

step "seed a format-1 catalog with $ROWS rows and point at it"
run "$M" seed --catalog "$SRC" --rows "$ROWS" --seed 1
run "$M" init-pointer --pointer "$POINTER" --catalog "$SRC"
run "$M" check --catalog "$SRC"

step "a format-2 binary refuses it (exit 3)"
printf '$ %s\n' "$M check --catalog $SRC --expect v2"
if "$M" check --catalog "$SRC" --expect v2; then echo "expected a refusal" >&2; exit 1; fi

step "plan: the preflight migrate runs first, the shards, duration, write freeze and AWS cost; writes nothing"
run "$M" plan --pointer "$POINTER" --to v2 --shards 8

step "dry run of the workflow (statemachine/migration.asl.json, run locally): verify, pointer untouched"
run "$M" migrate --pointer "$POINTER" --to v2 --shards 8 --dry-run
run "$M" status --pointer "$POINTER"

step "migrate to format 2 (online, the default) with a gated cut-over: Check, Snapshot, Shards (export+transform), Import, catch-up rounds, VerifyCatchUp, Fence, the last round, Finalize, Verify, then wait"
run "$M" migrate --pointer "$POINTER" --to v2 --shards 8 --postpone-flip --migration-id m-demo
run "$M" status --pointer "$POINTER"

step "approve: Flip (the pointer names the new catalog), the lock released"
run "$M" approve m-demo --pointer "$POINTER"
run "$M" status --pointer "$POINTER"
NEW=$("$M" status --pointer "$POINTER" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pointer"]["catalog"])')
run "$M" check --catalog "$NEW" --expect v2
run "$M" drift --pointer "$POINTER" --expect v2

step "roll back: the previous pointer version is current again, the old catalog checks as v1"
run "$M" rollback --pointer "$POINTER"
run "$M" check --catalog "$SRC" --expect v1
printf '$ %s\n' "$M drift --pointer $POINTER --expect v2   # the release expects v2: drift (exit 4)"
if "$M" drift --pointer "$POINTER" --expect v2; then echo "expected drift" >&2; exit 1; fi
run "$M" history --pointer "$POINTER"
run "$M" cleanup --pointer "$POINTER"

step "Strategy A on a small catalog: migrate in place (one atomic batch, the catalog as it was copied beside it), then roll back: a pointer flip to that copy"
run "$M" seed --catalog s3://rocklake/small/catalogs/prod --rows 2000 --seed 2
run "$M" init-pointer --pointer s3://rocklake/small/CURRENT --catalog s3://rocklake/small/catalogs/prod
run "$M" migrate --pointer s3://rocklake/small/CURRENT --to v2 --in-place
run "$M" check --catalog s3://rocklake/small/catalogs/prod --expect v2
run "$M" rollback --pointer s3://rocklake/small/CURRENT
run "$M" status --pointer s3://rocklake/small/CURRENT
run "$M" drift --pointer s3://rocklake/small/CURRENT --expect v1

step "Strategy B by hand, the same pieces: export, transform, import, verify"
run "$M" export --catalog "$SRC" --format v1 --output "$STAGING/v1" --shards 4
run "$M" transform --input "$STAGING/v1" --output "$STAGING/v2" --to v2
run "$M" import --format v2 --input "$STAGING/v2" --catalog s3://rocklake/catalogs/by-hand-v2
run "$M" verify --catalog s3://rocklake/catalogs/by-hand-v2 --input "$STAGING/v2"
echo
echo "demo done; stopping the local stack"
