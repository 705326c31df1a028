#!/bin/sh
# Redraws docs/figures from the embedded models on the first 200 Fashion-MNIST test images (manual command).
set -eu
build=${1:-build/release}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/app/attnscope-train" export-images --split test --count 200 --out "$tmp/images"
"$build/app/attnscope-cli" analyze --model builtin:fmnist-vit-d4 --compare builtin:fmnist-neutreno-d4 \
    --images "$tmp/images" --out "$tmp/zoo" --analyses similarity,attention,centres,snr,decomposition \
    --noise gaussian:sigma=8 --formats png
"$build/app/attnscope-cli" analyze --model builtin:conv3x3-as-attention --images resources/samples/fashion-mnist \
    --out "$tmp/conv" --analyses centres --formats png
# Class relevance of the first test image that fmnist-vit-d4 classifies correctly (the first, an ankle boot).
"$build/app/attnscope-cli" analyze --model builtin:fmnist-vit-d4 --images "$tmp/images/$(ls "$tmp/images" | head -1)" \
    --out "$tmp/relevance" --analyses relevance --formats png
# Token norms of the same image.
"$build/app/attnscope-cli" analyze --model builtin:fmnist-vit-d4 --images "$tmp/images/$(ls "$tmp/images" | head -1)" \
    --out "$tmp/norms" --analyses norms --formats png
# The same image at another input size: 56x44 instead of 28x28 (a 14x11 grid).
"$build/app/attnscope-cli" analyze --model builtin:fmnist-vit-d4 --images "$tmp/images/$(ls "$tmp/images" | head -1)" \
    --out "$tmp/size" --input-size 56,44 --analyses attention --grid-images 1 --query 7,5 --formats png
# Head ablation of both models over the same images in class folders (the accuracy change), and the query-key maps.
"$build/app/attnscope-train" export-images --split test --count 200 --class-folders --out "$tmp/classes"
"$build/app/attnscope-cli" analyze --model builtin:fmnist-vit --compare builtin:fmnist-neutreno --images "$tmp/classes" \
    --out "$tmp/ablation" --analyses ablation --formats png
"$build/app/attnscope-cli" analyze --model builtin:fmnist-vit --images "$tmp/images" --out "$tmp/qkmap" --analyses qkmap \
    --grid-images 0 --formats png
# A Swin's attention grid: the Swin test fixture (tests/golden/swin/timm_swin: 3 stages over a 16x16 grid, windows of
# 4, seeded random weights: no trained Swin can be downloaded here) on a photo, for a patch near the cat's eye.
"$build/app/attnscope-cli" analyze --model tests/golden/swin/timm_swin --images resources/samples/photos/chelsea.png \
    --out "$tmp/swin" --analyses attention --query 6,9 --formats png
mkdir -p docs/figures
cp "$tmp/swin/figures/attention_grid.png" docs/figures/swin_attention_grid.png
cp "$tmp/ablation/figures/head_ablation.png" docs/figures/
cp "$tmp/qkmap/figures/qkmap.png" "$tmp/qkmap/figures/qkmap_grid.png" docs/figures/
cp "$tmp/size/figures/attention_grid.png" docs/figures/input_size_grid.png
cp "$tmp/relevance/figures/relevance.png" docs/figures/relevance.png
cp "$tmp/norms/figures/token_norms.png" docs/figures/token_norms.png
for f in token_similarity snr snr_diagnostics head_centres head_kernels attention_distance attention_similarity attention_grid logit_decomposition; do
    cp "$tmp/zoo/figures/$f.png" docs/figures/
done
cp "$tmp/conv/figures/head_centres.png" docs/figures/conv_head_centres.png
echo "docs/figures redrawn"
