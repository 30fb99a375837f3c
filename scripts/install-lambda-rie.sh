#!/usr/bin/env bash
# Installs the AWS Lambda Runtime Interface Emulator (aws-lambda-rie), which
# the integration suite runs each function's bootstrap under, into the
# project's tool cache as $ROCKLAKE_CACHE/bin/aws-lambda-rie.
# Idempotent: does nothing when the pinned version is already installed.
#
# The module has no tagged releases on the Go module proxy; the pin is the
# pseudo-version the proxy serves as @latest (checked 2026-12-01).
set -euo pipefail

VERSION=v0.0.0-20261030222936-bef5c4ba774d
CACHE="${ROCKLAKE_CACHE:-$HOME/.cache/rocklake-migrate}"
BIN="$CACHE/bin"
STAMP="$BIN/.aws-lambda-rie.version"

if [ -x "$BIN/aws-lambda-rie" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$VERSION" ]; then
	exit 0
fi
echo "installing aws-lambda-rie $VERSION into $BIN" >&2
mkdir -p "$BIN"
rm -f "$STAMP"
GOBIN="$BIN" CGO_ENABLED=0 go install "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$VERSION"
echo "$VERSION" >"$STAMP"
