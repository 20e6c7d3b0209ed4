#!/bin/sh
# Install the Debian packages modegate needs. Idempotent and quick when all
# are present; needs root otherwise.
#
#   deploy/install-deps.sh          build, tests and the local default
#   deploy/install-deps.sh test     + promtool (package prometheus: the
#                                   alert rules' checks and unit tests)
#   deploy/install-deps.sh bench    + the benchmark tools (wrk, Node peer)
#   deploy/install-deps.sh valgrind + valgrind (make valgrind)
set -eu

PKGS="build-essential pkg-config libevent-dev libcurl4-openssl-dev \
libjson-c-dev libpq-dev libssl-dev libcmocka-dev postgresql \
postgresql-client python3 curl postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl \
slowhttptest"
[ "${1:-}" = bench ] && PKGS="$PKGS wrk nodejs npm"
[ "${1:-}" = test ] && PKGS="$PKGS prometheus"
[ "${1:-}" = valgrind ] && PKGS="$PKGS valgrind"

missing=""
for p in $PKGS; do
	case "$p" in
	nodejs | npm) command -v "${p%js}" >/dev/null 2>&1 && continue ;;
	esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "install-deps: installing:$missing" >&2
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: not root; install these packages first:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
