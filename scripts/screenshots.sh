#!/bin/sh
# `make screenshots`: the window under Xvfb in a few states, saved into docs/screenshots/.
set -eu
build=${1:-build/release}
mkdir -p docs/screenshots
# A fresh settings folder: the pictures show the default layout, not a saved one.
XDG_CONFIG_HOME=$(mktemp -d)
export XDG_CONFIG_HOME
run() {
    out=$1
    shift
    xvfb-run -a -s "-screen 0 1400x950x24" "$build/app/attnscope" --screenshot "docs/screenshots/$out" "$@"
}
run main-cls.png builtin:fmnist-vit resources/samples/fashion-mnist
run patch-query-head.png builtin:fmnist-vit resources/samples/fashion-mnist --layer 1 --head 2 --query 24
run rollout.png builtin:fmnist-neutreno resources/samples/fashion-mnist --head -2
run quadratic.png builtin:fmnist-quadratic resources/samples/fashion-mnist --layer 1 --head 4 --query 24
echo "screenshots in docs/screenshots/"
