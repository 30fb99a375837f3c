#!/usr/bin/env bash
# asl-validator (npm, pinned) under the cache, never in the repo:
# $ROCKLAKE_CACHE/asl-validator/node_modules/.bin/asl-validator.
set -euo pipefail
VERSION=4.0.0
CACHE=${ROCKLAKE_CACHE:-$HOME/.cache/rocklake-migrate}
DIR=$CACHE/asl-validator
BIN=$DIR/node_modules/.bin/asl-validator
if [ -x "$BIN" ] && grep -qs "\"version\": \"$VERSION\"" "$DIR/node_modules/asl-validator/package.json"; then
	exit 0
fi
rm -rf "$DIR"
mkdir -p "$DIR"
echo '{"name":"rocklake-asl-validator","private":true}' > "$DIR/package.json"
npm install --prefix "$DIR" --no-audit --no-fund --silent --save-exact "asl-validator@$VERSION"
"$BIN" --version 2>/dev/null || true
