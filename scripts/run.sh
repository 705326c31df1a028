#!/bin/sh
# `make run`: analyses the sample images with the default model and says where the results are.
# (The desktop window arrives with issue 5; the embedded models with issue 3. Until then the torchvision
# golden fixture, a small randomly initialised ViT, stands in for the model.)
set -eu
build=$1
out=$2
model=tests/golden/fixtures/tv_timm
"$build/app/attnscope-cli" info "$model"
"$build/app/attnscope-cli" analyze --model "$model" --images resources/samples --out "$out" --dump-tensors
echo "attnscope: results in $out/ (manifest.json, predictions.csv, tensors/<image>/*.npy)"
