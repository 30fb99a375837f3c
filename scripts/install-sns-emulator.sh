#!/usr/bin/env bash
# Installs the SNS emulator of the notify tests: moto's server mode
# (moto_server, with its SNS backend), in a Python virtual environment in the
# project's tool cache, linked as $ROCKLAKE_CACHE/bin/moto_server.
# Idempotent: does nothing when the pinned version is already installed.
#
# moto rather than goaws: goaws binds 0.0.0.0 whatever it is configured
# with, and test servers here listen on 127.0.0.1 only; moto_server takes
# -H 127.0.0.1. internal/testenv/snsserver starts it and reads back what
# was published.
set -euo pipefail

VERSION=5.2.5
CACHE="${ROCKLAKE_CACHE:-$HOME/.cache/rocklake-migrate}"
VENV="$CACHE/moto-$VERSION"
BIN="$CACHE/bin"
DONE="$VENV/.installed" # written last: a half-finished install is redone

if [ -f "$DONE" ] && [ -x "$VENV/bin/moto_server" ] &&
	[ "$(readlink "$BIN/moto_server" 2>/dev/null)" = "$VENV/bin/moto_server" ]; then
	exit 0
fi

. "$(dirname "$0")/lib.sh"
venv_install install-sns-emulator "$VENV" "moto[server]==$VERSION"
"$VENV/bin/moto_server" --help >/dev/null
mkdir -p "$BIN"
ln -sfn "$VENV/bin/moto_server" "$BIN/moto_server"
touch "$DONE"
