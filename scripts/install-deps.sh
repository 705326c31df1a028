#!/bin/sh
# Installs the Debian packages of scripts/debian-packages.txt that are missing (plus any given as arguments):
# apt-get as root, sudo otherwise; a clear message when neither is possible.
#   install-deps.sh [--headless] [PACKAGE...]    --headless: leave out the packages marked `gui` (the Qt build's)
# Packages marked `ci` are left out unless ATTNSCOPE_CI_PACKAGES=1 (make test-fresh's root sets it): openssh-server,
# for the test through a real sshd, is not installed on a user's machine, where it would start an SSH server.
set -eu
here=$(dirname "$0")
skip=none
if [ "${1:-}" = "--headless" ]; then
    skip=gui
    shift
fi
ci=${ATTNSCOPE_CI_PACKAGES:-0}
wanted=$(awk -v skip="$skip" -v ci="$ci" '!/^#/ && NF && $2 != skip && ($2 != "ci" || ci == "1") {print $1}' \
    "$here/debian-packages.txt" | tr '\n' ' ')
wanted="$wanted $*"
missing=""
for p in $wanted; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
        *"install ok installed"*) ;;
        *) missing="$missing $p" ;;
    esac
done
[ -z "$missing" ] && exit 0
echo "attnscope: installing Debian packages:$missing"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
else
    echo "attnscope: missing Debian packages:$missing" >&2
    echo "attnscope: run as root or with sudo: apt-get install$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
