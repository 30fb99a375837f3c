#!/usr/bin/env bash
# Installs protoc from Debian's protobuf-compiler, the compiler the committed
# proto/**/*.pb.go files were generated with (their header names its version;
# proto's staleness test compares byte for byte). Idempotent: does nothing
# when protoc is already on PATH.
set -euo pipefail

if command -v protoc >/dev/null 2>&1; then
	exit 0
fi

. "$(dirname "$0")/lib.sh"
apt_install protobuf-compiler
