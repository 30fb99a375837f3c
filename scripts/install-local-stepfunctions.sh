#!/usr/bin/env bash
# Installs the second ASL engine of the integration suite, npm
# aws-local-stepfunctions (pinned), into the project's tool cache
# ($ROCKLAKE_CACHE/node/aws-local-stepfunctions-VERSION/node_modules), not the
# repository. The suite finds it there (or through
# $ROCKLAKE_LOCAL_STEPFUNCTIONS, a node_modules directory).
# Idempotent: does nothing when the pinned version is already installed.
set -euo pipefail

VERSION=3.0.0
# The AWS SDK Lambda client the runner script uses is aws-local-stepfunctions'
# own dependency; pinned here too so that the script resolves it.
CACHE="${ROCKLAKE_CACHE:-$HOME/.cache/rocklake-migrate}"
DIR="$CACHE/node/aws-local-stepfunctions-$VERSION"
DONE="$DIR/.installed" # written last: a half-finished install is redone

if [ -f "$DONE" ] && [ -d "$DIR/node_modules/aws-local-stepfunctions" ]; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	echo "install-local-stepfunctions: needs Node.js 20 or newer with npm" >&2
	exit 2
fi
echo "installing aws-local-stepfunctions $VERSION into $DIR" >&2
rm -rf "$DIR"
mkdir -p "$DIR"
cd "$DIR"
printf '{"name":"rocklake-local-stepfunctions","private":true}\n' >package.json
npm install --no-audit --no-fund --save-exact --loglevel=error "aws-local-stepfunctions@$VERSION"
touch "$DONE"
