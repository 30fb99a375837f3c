#!/usr/bin/env bash
# The demo: a format-1 catalog on a local S3 (versitygw on 127.0.0.1) migrated
# to format 2 by hand, Strategy B: export, transform, import, verify, check.
# Starts the stack itself and stops it on exit, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=bin
ROWS=${DEMO_ROWS:-100000}
work=$(mktemp -d)
stack_pid=""
cleanup() {
  if [ -n "$stack_pid" ]; then kill "$stack_pid" 2>/dev/null || true; wait "$stack_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "start the local S3 stack (versitygw, versioned buckets, loopback only)"
"$BIN/localstack" --buckets rocklake,rocklake-staging --env-file "$work/stack.env" &
stack_pid=$!
for _ in $(seq 1 300); do [ -f "$work/stack.env" ] && break; kill -0 "$stack_pid" 2>/dev/null || exit 1; sleep 0.1; done
[ -f "$work/stack.env" ] || { echo "local stack did not come up" >&2; exit 1; }
# shellcheck disable=SC1091
. "$work/stack.env"
echo "S3 endpoint $AWS_ENDPOINT"

M="$BIN/rocklake-migrate"
SRC=s3://rocklake/catalogs/demo-v1
DST=s3://rocklake/catalogs/demo-v2
STAGING=s3://rocklake-staging/demo

step "seed a format-1 catalog with $ROWS rows"
run "$M" seed --catalog "$SRC" --rows "$ROWS" --seed 1
run "$M" check --catalog "$SRC"

step "a format-2 binary refuses it (exit 3)"
printf '$ %s\n' "$M check --catalog $SRC --expect v2"
if "$M" check --catalog "$SRC" --expect v2; then echo "expected a refusal" >&2; exit 1; fi

step "export to 8 shards, transform v1 → v2, import into a fresh catalog"
run "$M" export --catalog "$SRC" --format v1 --output "$STAGING/v1" --shards 8
run "$M" transform --input "$STAGING/v1" --output "$STAGING/v2" --to v2
run "$M" import --format v2 --input "$STAGING/v2" --catalog "$DST"

step "verify the new catalog against the shards, and check it"
run "$M" verify --catalog "$DST" --input "$STAGING/v2"
run "$M" check --catalog "$DST" --expect v2
run "$M" inspect --catalog "$DST"

step "the source is untouched: still format 1"
run "$M" check --catalog "$SRC" --expect v1
echo
echo "demo done; stopping the local stack"
