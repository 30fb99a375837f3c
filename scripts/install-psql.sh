#!/usr/bin/env bash
# Installs the PostgreSQL client (psql), which internal/testenv/rocklake's
# TestPsql runs against `rocklake serve` (the client an operator reaches
# for), from Debian's postgresql-client. Idempotent: does nothing
# when psql is already on PATH.
set -euo pipefail

if command -v psql >/dev/null 2>&1; then
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
echo "installing postgresql-client (psql) with apt-get" >&2
$sudo apt-get update
$sudo apt-get install -y --no-install-recommends postgresql-client
