#!/bin/sh
# Install the Debian packages cuco needs (slurm-wlm, munge and Open MPI:
# tests/cli/t1401 starts a one-node Slurm cluster and launches ranks).  Idempotent and quiet when
# everything is already there.  Used by README's commands and .ci/run.
set -e
PKGS="build-essential pkg-config libcurl4-openssl-dev libjansson-dev
libsqlite3-dev libmicrohttpd-dev libinih-dev libxxhash-dev libcmocka-dev libiberty-dev libseccomp-dev
clang-format cppcheck sqlite3 python3 curl xxd bubblewrap procps
chromium chromium-driver
slurm-wlm munge openmpi-bin libopenmpi-dev"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing="$missing $p"
done
# Node and npm for the browser tests: Debian's, unless some node is there
# already (a NodeSource node brings its own npm and conflicts with Debian's).
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
