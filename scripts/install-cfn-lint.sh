#!/usr/bin/env bash
# cfn-lint (PyPI, pinned) in a venv under the cache: $ROCKLAKE_CACHE/cfn-lint/bin/cfn-lint.
set -euo pipefail
VERSION=1.58.0
CACHE=${ROCKLAKE_CACHE:-$HOME/.cache/rocklake-migrate}
VENV=$CACHE/cfn-lint
if [ -x "$VENV/bin/cfn-lint" ] && [ "$("$VENV/bin/cfn-lint" --version 2>/dev/null | awk '{print $2}')" = "$VERSION" ]; then
	exit 0
fi
. "$(dirname "$0")/lib.sh"
venv_install install-cfn-lint "$VENV" "cfn-lint==$VERSION"
"$VENV/bin/cfn-lint" --version
