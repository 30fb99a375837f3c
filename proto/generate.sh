#!/usr/bin/env bash
# Regenerates the Go code for proto/rocklake/v*/ with Debian's protoc and the
# protoc-gen-go pinned by go.mod's tool directive, so that every checkout
# produces the same bytes. Usage: generate.sh [OUT_DIR] (default: proto/, i.e.
# next to the .proto files). The staleness test passes a temporary OUT_DIR.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here}"

if ! command -v protoc >/dev/null 2>&1; then
	echo "protoc not found: run 'make tools' (scripts/install-protoc.sh installs Debian's protobuf-compiler)" >&2
	exit 1
fi

# `go tool -n` builds the pinned plugin into the build cache and prints its path.
plugin="$(cd "$here" && go tool -n protoc-gen-go)"

cd "$here"
protoc \
	--plugin=protoc-gen-go="$plugin" \
	--proto_path=. \
	--go_out="$out" \
	--go_opt=paths=source_relative \
	rocklake/v1/*.proto rocklake/v2/*.proto
