#!/bin/sh
# make test-fresh (and CI): the README's promise checked as a new user meets it. A bare Debian 12 root
# (debootstrap --variant=minbase bookworm), a clean clone of this repository's HEAD in it with ../shared beside it,
# then, as root inside it: `apt-get install git make ca-certificates` and the README's commands. Nothing of the
# host's packages, build or caches reaches the root: a package that only the host has makes this fail.
#
#   scripts/test-fresh.sh [STEPS]     STEPS (default: all) is any of:
#     headless   make test-headless first, before anything of Qt is installed (proves the build without Qt)
#     avx2       make test-avx2 on that build: its engine and CLI tests as an AVX2 CPU runs them (after headless)
#     python     make python: the Python module pip-installed into .venv and its tests (docs/python.md; after headless,
#                whose CLI its comparisons use)
#     test       make test (the README's command)
#     compare    the headless CLI's data files against the Qt build's, byte for byte (scripts/compare-builds.sh)
#     deps       make deps alone (the packages, no build): to time the install
#
# Only the bare debootstrap result is cached between runs (ATTNSCOPE_CI_CACHE, default /var/cache/attnscope-ci,
# renewed after a week); each run unpacks it into a new folder that is removed afterwards (KEEP=1 keeps it).
# The mirror is the host's own Debian mirror (its apt sources), so this works wherever apt works.
set -eu
# The whole script is one function, read before it runs: editing this file during a run cannot derail it.
main() {

repo=$(cd "$(dirname "$0")/.." && pwd)
steps=${*:-headless avx2 python test compare}
cache=${ATTNSCOPE_CI_CACHE:-/var/cache/attnscope-ci}
base="$cache/bookworm-minbase.tar"
say() { echo "test-fresh: $*"; }
die() { echo "test-fresh: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mounts); run it as root or with sudo"
command -v git >/dev/null || die "needs git on the host to clone the repository"
[ -d "$repo/.git" ] || [ -f "$repo/.git" ] || die "$repo is not a git checkout"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
    say "note: uncommitted changes are not tested; this tests the commit HEAD ($(git -C "$repo" rev-parse --short HEAD))"
fi

# The host's Debian mirror: the first URI of its apt sources (deb822 or one-line form).
mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}')
if [ -z "$mirror" ]; then
    mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; exit}}')
fi

# retry CMD...: once more after a pause, so that one network hiccup is not a failure.
retry() {
    "$@" && return 0
    say "failed, retrying once in 20 s: $*"
    sleep 20
    "$@"
}

make_base() {
    if ! command -v debootstrap >/dev/null; then
        say "installing debootstrap on the host"
        retry apt-get update -qq
        DEBIAN_FRONTEND=noninteractive retry apt-get install -y -q --no-install-recommends debootstrap
    fi
    mkdir -p "$cache"
    tmp=$(mktemp -d "$cache/debootstrap.XXXXXX")
    say "debootstrap --variant=minbase bookworm ${mirror:-(debootstrap's default mirror)}"
    # shellcheck disable=SC2086
    if ! retry sh -c "rm -rf '$tmp/root' && debootstrap --variant=minbase bookworm '$tmp/root' $mirror > '$tmp/log' 2>&1"; then
        tail -n 20 "$tmp/log" >&2
        rm -rf "$tmp"
        die "debootstrap failed (log above)"
    fi
    tar -C "$tmp/root" -cf "$tmp/base.tar" .
    mv "$tmp/base.tar" "$base"
    rm -rf "$tmp"
}

start=$(date +%s)
if [ ! -f "$base" ] || [ -n "$(find "$base" -mtime +7 2>/dev/null)" ]; then
    make_base
else
    say "bare root from the cache ($base)"
fi

work=$(mktemp -d "${TMPDIR:-/var/tmp}/attnscope-fresh.XXXXXX")
root="$work/root"
cleanup() {
    if [ "${KEEP:-0}" = 1 ]; then
        say "kept $root"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$root"
tar -C "$root" -xf "$base"

# The root's apt sources: the host's Debian sources (the suites a Debian 12 install has: updates and security
# too), in place of debootstrap's one line; debootstrap's line stays when the host has none.
hostsources=$(grep -l "debian" /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
    2>/dev/null || true)
if [ -n "$hostsources" ]; then
    rm -f "$root/etc/apt/sources.list"
    for f in $hostsources; do cp "$f" "$root$f"; done
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# No package's service is started in the root: openssh-server (a `ci` package of scripts/debian-packages.txt, for the
# test through a real sshd, which starts its own) would otherwise start sshd on port 22 of the host's network, which
# the root shares, or fail its install where that port is taken. invoke-rc.d asks this, as in Debian's images.
printf '#!/bin/sh\n# make test-fresh: no service started in this root\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

# The clean clone and ../shared beside it.
mkdir -p "$root/work"
git clone --quiet --no-hardlinks "$repo" "$root/work/attnscope"
if [ -d "$repo/../shared" ]; then
    cp -a "$repo/../shared" "$root/work/shared"
else
    say "note: no ../shared beside $repo; the tests that read it skip"
fi

# What runs inside: the new user's steps. The environment is a login's, not the host's.
cat > "$root/work/fresh-steps.sh" <<'EOF'
set -eu
retry() { "$@" && return 0; echo "test-fresh: failed, retrying once in 20 s: $*"; sleep 20; "$@"; }
step() { echo "test-fresh: [$(date +%H:%M:%S)] $*"; }
export DEBIAN_FRONTEND=noninteractive
step "apt-get install git make ca-certificates"
retry apt-get update -qq
retry apt-get install -y -q --no-install-recommends git make ca-certificates > /tmp/apt.log 2>&1 || { tail -n 20 /tmp/apt.log; exit 1; }
cd /work/attnscope
for s in $STEPS; do
    case "$s" in
        headless) step "make test-headless (nothing of Qt installed yet)"
                  if dpkg-query -W -f='${Status}\n' libqt6core6 2>/dev/null | grep -q "ok installed"; then
                      echo "test-fresh: Qt is already installed in the root; the headless step must come first" >&2; exit 1
                  fi
                  retry make deps-headless
                  make test-headless ;;
        python)   step "make python (pip install . into a venv, then the module's tests)"
                  retry make deps-headless
                  make python ;;
        test)     step "make test"
                  retry make deps
                  make test ;;
        deps)     step "make deps (the packages only)"
                  retry make deps ;;
        avx2)     step "make test-avx2 AVX2_PRESET=headless (the engine and CLI tests as on an AVX2 CPU)"
                  make test-avx2 AVX2_PRESET=headless ;;
        compare)  step "scripts/compare-builds.sh build/release build/headless"
                  scripts/compare-builds.sh build/release build/headless ;;
        *)        echo "test-fresh: unknown step '$s' (headless, avx2, python, test, compare, deps)" >&2; exit 2 ;;
    esac
done
step "done"
EOF

# pip in the root (make python fetches scikit-build-core from PyPI) goes out through the host's network, as apt does: where
# the host's pip trusts a certificate bundle of its own (PIP_CERT, or pip.conf's cert: a proxy that inspects HTTPS has
# its CA there), the root's pip is given a copy, as resolv.conf above. Nothing is installed by it.
hostcert=${PIP_CERT:-$(python3 -m pip config get global.cert 2>/dev/null || true)}
pipcert=""
if [ -n "$hostcert" ] && [ -f "$hostcert" ]; then
    cp "$hostcert" "$root/etc/host-pip-ca.crt"
    pipcert=/etc/host-pip-ca.crt
fi

say "testing $(git -C "$repo" rev-parse --short HEAD) in $root: steps $steps"
# A private mount namespace and PID namespace: the mounts and every process started inside (Xvfb, tests) end
# with the run, whatever happens.
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb \
    STEPS="$steps" CI="${CI:-}" ROOT="$root" ${pipcert:+PIP_CERT=$pipcert} ATTNSCOPE_CI_PACKAGES=1 \
    ${OPENBLAS_CORETYPE:+OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE} ${OPENBLAS_L2_SIZE:+OPENBLAS_L2_SIZE=$OPENBLAS_L2_SIZE} \
    unshare --mount --pid --fork --kill-child sh -euc '
        mount --make-rprivate /
        mount -t proc proc "$ROOT/proc"
        mount --rbind /dev "$ROOT/dev"
        mount -t tmpfs -o mode=1777 tmpfs "$ROOT/dev/shm"
        mount --rbind /sys "$ROOT/sys"
        exec chroot "$ROOT" /bin/sh /work/fresh-steps.sh
    ' || { rc=$?; say "FAILED (status $rc) after $(( $(date +%s) - start )) s"; exit "$rc"; }
say "passed in $(( $(date +%s) - start )) s"
}
main "$@"
