#!/usr/bin/env bash
# Installs GNU time (/usr/bin/time, Debian's package `time`), with which
# scripts/bench-pipeline.sh and scripts/bench-migrate.sh read each stage's
# peak RSS. Idempotent: does nothing when /usr/bin/time is there.
set -euo pipefail

if [ -x /usr/bin/time ]; then
	exit 0
fi

. "$(dirname "$0")/lib.sh"
apt_install time
