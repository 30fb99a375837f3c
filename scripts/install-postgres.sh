#!/usr/bin/env bash
# Installs the PostgreSQL server (initdb, pg_ctl, postgres, pg_dump,
# pg_restore under /usr/lib/postgresql/<ver>/bin) from Debian's postgresql,
# for scripts/bench-pgdump.sh only: issue 15 measures migrate against
# pg_dump + pg_restore of the same rows. Idempotent: does nothing when a
# server is already installed. The package also creates the `postgres`
# system user, as which the benchmark runs the server (it refuses root).
set -euo pipefail

have() {
	local bin
	for bin in /usr/lib/postgresql/*/bin; do
		[ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ] && [ -x "$bin/pg_dump" ] && [ -x "$bin/pg_restore" ] && return 0
	done
	return 1
}

if have && id -u postgres >/dev/null 2>&1; then
	exit 0
fi

. "$(dirname "$0")/lib.sh"
apt_install postgresql
have || { echo "install-postgres: no initdb/pg_ctl/pg_dump/pg_restore under /usr/lib/postgresql/*/bin after installing" >&2; exit 1; }
