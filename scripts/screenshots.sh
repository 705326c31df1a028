#!/bin/sh
# `make screenshots`: the window under Xvfb in a few states, saved into docs/screenshots/.
set -eu
build=${1:-build/release}
mkdir -p docs/screenshots
samples=resources/samples/fashion-mnist
photos=resources/samples/photos # with the samples, the 14 images of the image-set picture
run() {
    out=$1
    shift
    # A fresh settings folder each time: the pictures show the default layout, not a saved one.
    XDG_CONFIG_HOME=$(mktemp -d) xvfb-run -a -s "-screen 0 1400x950x24" "$build/app/attnscope" --screenshot "docs/screenshots/$out" "$@"
}
# The default, 12-layer model (what `make run` opens); the others show the 4-layer one they were first taken with.
run main-cls.png builtin:fmnist-vit $samples --layer 11
run patch-query-head.png builtin:fmnist-vit $samples --layer 1 --head 2 --query 24 --variant 0.6,0.3
run compare.png builtin:fmnist-vit-d4 $samples --compare builtin:fmnist-quadratic --layer 1 --head 1 --query 24 --figure 4
run image-set-snr.png builtin:fmnist-vit-d4 $photos $samples --analyse-set --variant 0.6,0.3 --set-figure 1
run rollout.png builtin:fmnist-neutreno-d4 $samples --head rollout --figure 3
run logit-decomposition.png builtin:fmnist-vit-d4 $samples --layer 1 --head 0 --figure 5
# The small screen of issue 32: a 1280 x 800 screen, the window bounded by it.
run_small() {
    out=$1
    shift
    XDG_CONFIG_HOME=$(mktemp -d) xvfb-run -a -s "-screen 0 1280x800x24" "$build/app/attnscope" --screenshot "docs/screenshots/$out" "$@"
}
run_small main-1280x800.png builtin:fmnist-vit $samples --layer 11
run_small compare-variant-1280x800.png builtin:fmnist-vit $samples --compare builtin:fmnist-quadratic --variant 0.6,0.3 --figure 1
run_small snr-diagnostics-1280x800.png builtin:fmnist-vit $samples --compare builtin:fmnist-quadratic --variant 0.6,0.3 --figure 2
run_small head-kernels-1280x800.png builtin:fmnist-vit $samples --figure 7
run_small tiles-12-layers-1280x800.png builtin:fmnist-vit $samples --layer 7 --head 2 --query 24
# A Swin (issue 46): the test fixture tests/golden/swin/timm_swin (seeded random weights: no trained Swin can be
# downloaded here) on a photo; block 2 (shifted), head 1, the patch (5, 6): its shifted window, the tiles per stage.
run_small swin-window-1280x800.png tests/golden/swin/timm_swin resources/samples/photos/chelsea.png --layer 2 --head 1 --query 86
# Head importance (issue 35): the set's ablation on the tiles, one head ablated, the Query-key map dock; and at 1600 x 1000.
run_small head-importance-1280x800.png builtin:fmnist-vit $samples --analyse-set --set-ablation --set-figure 8 --layer 2 --head 0 \
    --ablate 1,0 --query-key-map
XDG_CONFIG_HOME=$(mktemp -d) xvfb-run -a -s "-screen 0 1600x1000x24" "$build/app/attnscope" --screenshot docs/screenshots/head-importance-1600x1000.png \
    builtin:fmnist-vit $samples --analyse-set --set-ablation --set-figure 8 --layer 2 --head 0 --ablate 1,0
echo "screenshots in docs/screenshots/"
