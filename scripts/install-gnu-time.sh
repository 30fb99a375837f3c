#!/usr/bin/env bash
# Installs GNU time (/usr/bin/time, Debian's package `time`), with which
# scripts/bench-pipeline.sh and scripts/bench-migrate.sh read each stage's
# peak RSS. Idempotent: does nothing when /usr/bin/time is there.
set -euo pipefail

if [ -x /usr/bin/time ]; then
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
echo "installing GNU time with apt-get" >&2
$sudo apt-get update
$sudo apt-get install -y --no-install-recommends time
