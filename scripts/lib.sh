# Functions the install scripts share; sourced, not run:
#   . "$(dirname "$0")/lib.sh"

# apt_install PACKAGE...: installs Debian packages with apt-get (through
# sudo when not root), reading the package lists first only when the install
# fails without them (a fresh machine may have none yet).
apt_install() {
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		sudo="sudo"
	fi
	echo "installing $* with apt-get" >&2
	# Through env, so that the setting reaches apt-get past sudo's reset.
	local apt=($sudo env DEBIAN_FRONTEND=noninteractive apt-get)
	if ! "${apt[@]}" install -y --no-install-recommends "$@"; then
		"${apt[@]}" update
		"${apt[@]}" install -y --no-install-recommends "$@"
	fi
}

# venv_install NAME VENV REQUIREMENT...: makes a fresh Python virtual
# environment at VENV and installs the requirements (pinned, from PyPI)
# into it; NAME is the calling script's, for its one error: no Python 3.9
# or newer with venv and ensurepip (exit 2).
venv_install() {
	local name=$1 venv=$2
	shift 2
	if ! python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
		echo "$name: needs Python 3.9 or newer with venv and ensurepip (apt-get install python3-venv)" >&2
		exit 2
	fi
	echo "installing $* into $venv" >&2
	rm -rf "$venv"
	python3 -m venv "$venv"
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}
