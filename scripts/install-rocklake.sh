#!/usr/bin/env bash
# Builds the real RockLake binary (`rocklake`, v0.47.11) from the read-only
# source beside the repository (../shared/rocklake, or $ROCKLAKE_SRC) and
# installs it as $ROCKLAKE_CACHE/bin/rocklake, the one internal/testenv/rocklake runs.
#
# The cargo target directory lives in the tool cache
# ($ROCKLAKE_CACHE/rocklake-target), so that reruns are quick: cargo decides
# what is stale (nothing, usually: about a second), and the binary is copied
# only when it changed. A cold build takes about 15-20 minutes on 2 cores.
# A build already running on the same target directory is waited for (cargo
# holds a lock on it), never duplicated.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# ../shared/rocklake beside the repository; a clone deeper in the same tree
# (CI's, say) finds it in the nearest ancestor that has shared/rocklake.
src="${ROCKLAKE_SRC:-}"
if [ -z "$src" ]; then
	dir="$repo"
	while [ "$dir" != "/" ]; do
		dir="$(dirname "$dir")"
		if [ -f "$dir/shared/rocklake/Cargo.toml" ]; then
			src="$dir/shared/rocklake"
			break
		fi
	done
	# Last, the workplace's own copy, for a clone made outside that tree.
	if [ -z "$src" ] && [ -f /work/shared/rocklake/Cargo.toml ]; then
		src=/work/shared/rocklake
	fi
	src="${src:-$(dirname "$repo")/shared/rocklake}"
fi
cache="${ROCKLAKE_CACHE:-$HOME/.cache/rocklake-migrate}"
bin="$cache/bin"
# Not the Makefile's CARGO_TARGET_DIR (native/'s): RockLake has its own
# dependency versions (SlateDB 0.13 among them), so it gets its own directory.
export CARGO_TARGET_DIR="$cache/rocklake-target"

if [ ! -f "$src/Cargo.toml" ] || [ ! -f "$src/Cargo.lock" ]; then
	echo "install-rocklake: no RockLake source at $src (set ROCKLAKE_SRC)" >&2
	exit 1
fi

# What the installed binary was built from: the source's contents (not
# its mtimes, which a fresh checkout of the same source changes, and with
# them cargo's fingerprints: a rebuild of up to an hour for nothing) and
# the toolchain. The same stamp beside an installed binary: nothing to do.
stamp="$bin/.rocklake.source"
fingerprint="$( (cd "$src" && find . -type f -not -path './target/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; cargo --version; rustc --version) | sha256sum | cut -c1-64)"
if [ -x "$bin/rocklake" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$fingerprint" ]; then
	exit 0
fi

built="$CARGO_TARGET_DIR/release/rocklake"
if [ ! -x "$built" ]; then
	echo "building rocklake from $src into $CARGO_TARGET_DIR (first time: about 15-20 minutes on 2 cores)" >&2
fi
# The source directory may be read-only: --locked never rewrites Cargo.lock,
# and every output goes to CARGO_TARGET_DIR.
(cd "$src" && cargo build --release --locked -p rocklake-pgwire --bin rocklake)

mkdir -p "$bin"
if ! cmp -s "$built" "$bin/rocklake"; then
	# Copy then rename, so a running test never sees half a binary.
	cp "$built" "$bin/rocklake.tmp.$$"
	chmod 0755 "$bin/rocklake.tmp.$$"
	mv -f "$bin/rocklake.tmp.$$" "$bin/rocklake"
	echo "installed $bin/rocklake" >&2
fi
printf '%s\n' "$fingerprint" > "$stamp.tmp.$$" && mv -f "$stamp.tmp.$$" "$stamp"
