#!/usr/bin/env bash
# cfn-lint (PyPI, pinned) in a venv under the cache: $ROCKLAKE_CACHE/cfn-lint/bin/cfn-lint.
set -euo pipefail
VERSION=1.58.0
CACHE=${ROCKLAKE_CACHE:-$HOME/.cache/rocklake-migrate}
VENV=$CACHE/cfn-lint
if [ -x "$VENV/bin/cfn-lint" ] && [ "$("$VENV/bin/cfn-lint" --version 2>/dev/null | awk '{print $2}')" = "$VERSION" ]; then
	exit 0
fi
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "cfn-lint==$VERSION"
"$VENV/bin/cfn-lint" --version
