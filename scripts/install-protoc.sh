#!/usr/bin/env bash
# Installs protoc from Debian's protobuf-compiler, the compiler the committed
# proto/**/*.pb.go files were generated with (their header names its version;
# proto's staleness test compares byte for byte). Idempotent: does nothing
# when protoc is already on PATH.
set -euo pipefail

if command -v protoc >/dev/null 2>&1; then
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
echo "installing protobuf-compiler (protoc) with apt-get" >&2
# A fresh machine may have no package lists yet: update once, only if needed.
if ! $sudo apt-get install -y --no-install-recommends protobuf-compiler; then
	$sudo apt-get update
	$sudo apt-get install -y --no-install-recommends protobuf-compiler
fi
