#!/usr/bin/env bash
# Installs DuckDB 1.5.3 with its DuckLake, postgres_scanner and parquet
# extensions from PyPI wheels (the real client of a DuckLake catalog, DESIGN
# 5) in a Python virtual environment in the project's tool cache, run as
# $ROCKLAKE_CACHE/bin/duckdb-python. internal/testenv/rocklake's DuckDB client loads the
# extensions from the wheels' files: nothing is downloaded at run time.
# Idempotent: does nothing when the pinned version is already installed.
#
# 1.5.3, not newer: 1.5.5 doubles data paths against RockLake v0.47.11, and
# RockLake's own wire corpus is recorded with 1.5.3.
set -euo pipefail

VERSION=1.5.3
CACHE="${ROCKLAKE_CACHE:-$HOME/.cache/rocklake-migrate}"
VENV="$CACHE/duckdb-$VERSION"
BIN="$CACHE/bin"
DONE="$VENV/.installed" # written last: a half-finished install is redone

# A wrapper, not a symlink: Python finds its virtual environment from the
# path it was started by.
WRAPPER="#!/bin/sh
exec \"$VENV/bin/python\" \"\$@\""
if [ -f "$DONE" ] && [ "$(cat "$BIN/duckdb-python" 2>/dev/null)" = "$WRAPPER" ]; then
	exit 0
fi
. "$(dirname "$0")/lib.sh"
venv_install install-duckdb "$VENV" "duckdb==$VERSION" "duckdb-extension-ducklake==$VERSION" \
	"duckdb-extension-postgres-scanner==$VERSION" "duckdb-extension-parquet==$VERSION"
mkdir -p "$BIN"
rm -f "$BIN/duckdb-python"
printf '%s\n' "$WRAPPER" >"$BIN/duckdb-python"
chmod +x "$BIN/duckdb-python"
touch "$DONE"
