#!/usr/bin/env bash
# Installs the PostgreSQL client (psql), which internal/testenv/rocklake's
# TestPsql runs against `rocklake serve` (the client an operator reaches
# for), from Debian's postgresql-client. Idempotent: does nothing
# when psql is already on PATH.
set -euo pipefail

if command -v psql >/dev/null 2>&1; then
	exit 0
fi

. "$(dirname "$0")/lib.sh"
apt_install postgresql-client
