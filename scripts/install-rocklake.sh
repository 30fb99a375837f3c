#!/usr/bin/env bash
# install-rocklake.sh [quick|release]: builds the real RockLake binary
# (`rocklake`, v0.47.11) from the read-only source beside the repository
# (../shared/rocklake, or $ROCKLAKE_SRC) and installs it into $ROCKLAKE_CACHE/bin.
#
#   quick (default): $ROCKLAKE_CACHE/bin/rocklake, the one the tests run
#     (internal/testenv/rocklake finds it). Cargo's release profile at
#     opt-level 0: the same source and settings (no debug assertions, no
#     overflow checks), only unoptimised. A cold build took 372 CPU-s
#     (4 min 5 s on 2 cores) against 946 at opt-level 1, and the tests
#     that run it took 100 s against 97 (docs/performance.md, "Building and
#     testing").
#   release: $ROCKLAKE_CACHE/bin/rocklake-release, RockLake's own release
#     profile (opt-level 3), for the benchmarks that time RockLake
#     (scripts/bench-serve.sh).
#
# The cargo target directory lives in the tool cache
# ($ROCKLAKE_CACHE/rocklake-target, one subdirectory per profile), so that
# reruns are quick: cargo decides what is stale (nothing, usually: about a
# second), and the binary is copied only when it changed. A build already
# running on the same target directory is waited for (cargo holds a lock on
# it), never duplicated.
set -euo pipefail

profile="${1:-quick}"
# The profile is given on the command line: the source is read-only.
case "$profile" in
quick)
	name=rocklake
	flags=(--profile quick --config 'profile.quick.inherits="release"' --config 'profile.quick.opt-level=0')
	;;
release)
	name=rocklake-release
	flags=(--release)
	;;
*)
	echo "usage: install-rocklake.sh [quick|release]" >&2
	exit 2
	;;
esac

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
fi
if [ -z "$src" ]; then
	echo "install-rocklake: no RockLake source in shared/rocklake beside $repo or above it: set ROCKLAKE_SRC to a RockLake v0.47.11 source tree" >&2
	exit 1
fi
if [ ! -f "$src/Cargo.toml" ] || [ ! -f "$src/Cargo.lock" ]; then
	echo "install-rocklake: ROCKLAKE_SRC=$src has no Cargo.toml and Cargo.lock: set ROCKLAKE_SRC to a RockLake v0.47.11 source tree" >&2
	exit 1
fi
cache="${ROCKLAKE_CACHE:-$HOME/.cache/rocklake-migrate}"
bin="$cache/bin"
# Not the Makefile's CARGO_TARGET_DIR (native/'s): RockLake has its own
# dependency versions (SlateDB 0.13 among them), so it gets its own directory.
export CARGO_TARGET_DIR="$cache/rocklake-target"

# What the installed binary was built from: the source's contents (not
# its mtimes, which a fresh checkout of the same source changes, and with
# them cargo's fingerprints: a rebuild of up to an hour for nothing), the
# toolchain and the profile. The same stamp beside an installed binary:
# nothing to do.
stamp="$bin/.$name.source"
fingerprint="$( (cd "$src" && find . -type f -not -path './target/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; cargo --version; rustc --version; echo "${flags[*]}") | sha256sum | cut -c1-64)"
if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$fingerprint" ]; then
	exit 0
fi

built="$CARGO_TARGET_DIR/$profile/rocklake"
if [ ! -x "$built" ]; then
	echo "building rocklake ($profile) from $src into $CARGO_TARGET_DIR (first time, on 2 cores: about 4 minutes for quick, 11 for release)" >&2
fi
# The source directory may be read-only: --locked never rewrites Cargo.lock,
# and every output goes to CARGO_TARGET_DIR.
(cd "$src" && cargo build "${flags[@]}" --locked -p rocklake-pgwire --bin rocklake)

mkdir -p "$bin"
if ! cmp -s "$built" "$bin/$name"; then
	# Copy then rename, so a running test never sees half a binary.
	cp "$built" "$bin/$name.tmp.$$"
	chmod 0755 "$bin/$name.tmp.$$"
	mv -f "$bin/$name.tmp.$$" "$bin/$name"
	echo "installed $bin/$name" >&2
fi
printf '%s\n' "$fingerprint" >"$stamp.tmp.$$" && mv -f "$stamp.tmp.$$" "$stamp"
