#!/bin/sh
# `make run`: the default model on the sample images, headless until the desktop window exists (issue 5):
# analyses them and says where the results are.
set -eu
build=$1
out=$2
model=builtin:fmnist-vit
"$build/app/attnscope-cli" info "$model"
"$build/app/attnscope-cli" analyze --model "$model" --images resources/samples/fashion-mnist resources/samples \
    --out "$out" --dump-tensors
echo "attnscope: results in $out/ (manifest.json, predictions.csv, tensors/<image>/*.npy)"
echo "attnscope: top predictions:"
awk -F, '$2 == 1 { printf "  %-60s %-12s %s\n", $1, $4, $5 }' "$out/predictions.csv"
