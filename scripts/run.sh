#!/bin/sh
# `make run`: opens attnscope on the default embedded model and the Fashion-MNIST samples (what the embedded models
# classify; the photos in resources/samples/photos are for your own ImageNet-style models); with no display, writes
# the headless report instead and says where it is.
set -eu
build=$1
out=$2
model=builtin:fmnist-vit
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    exec "$build/app/attnscope" "$model" resources/samples/fashion-mnist
fi
echo "attnscope: no display; writing the headless report instead"
"$build/app/attnscope-cli" info "$model"
"$build/app/attnscope-cli" analyze --model "$model" --images resources/samples/fashion-mnist \
    --out "$out" --neutreno 0.6 --formats png,svg,pdf
echo "attnscope: report in $out/ (manifest.json, predictions.csv, *.csv, figures/)"
echo "attnscope: top predictions:"
awk -F, '$2 == 1 { printf "  %-60s %-12s %s\n", $1, $4, $5 }' "$out/predictions.csv"
