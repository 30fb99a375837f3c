#!/usr/bin/env bash
# Installs the versitygw S3 gateway (the local S3 of tests and `make demo`)
# into the project's tool cache. Idempotent: does nothing when the binary is
# already there, as the build takes minutes.
set -euo pipefail

VERSION=v1.8.0
BIN="${ROCKLAKE_CACHE:-$HOME/.cache/rocklake-migrate}/bin"

if [ -x "$BIN/versitygw" ]; then
	exit 0
fi

mkdir -p "$BIN"
echo "building versitygw $VERSION into $BIN (takes a few minutes)" >&2
GOBIN="$BIN" go install "github.com/versity/versitygw/cmd/versitygw@$VERSION"
