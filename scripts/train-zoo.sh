#!/bin/sh
# Retrains attnscope's embedded model zoo (resources/models) from Debian's dataset-fashion-mnist and builds the
# convolution-as-attention model. A manual command, not part of CI: about 15 minutes per model on one core;
# two models train at a time. Usage: scripts/train-zoo.sh [BUILD_DIR]   (default build/release)
set -eu
build=${1:-build/release}
train="$build/app/attnscope-train"
zoo=resources/models
mkdir -p "$zoo"
common="--epochs 10 --seed 0 --threads 1 --no-augment"
# One thread each, two at a time: LibTorch's OpenMP spin-waiting makes two threads per run slower on two cores.
"$train" --name fmnist-vit-d4 --variant vit --out "$zoo/fmnist-vit-d4" $common > "$zoo/fmnist-vit-d4.log" 2>&1 &
"$train" --name fmnist-neutreno-d4 --variant neutreno --neutreno-lambda 0.6 --out "$zoo/fmnist-neutreno-d4" $common > "$zoo/fmnist-neutreno-d4.log" 2>&1 &
wait
"$train" --name fmnist-boost-d4 --variant boost --boost-t 0.3 --out "$zoo/fmnist-boost-d4" $common > "$zoo/fmnist-boost-d4.log" 2>&1 &
"$train" --name fmnist-bilateral-d4 --variant bilateral --out "$zoo/fmnist-bilateral-d4" $common > "$zoo/fmnist-bilateral-d4.log" 2>&1 &
wait
"$train" --name fmnist-quadratic --variant quadratic --heads 9 --width 72 --mlp 144 --out "$zoo/fmnist-quadratic" $common > "$zoo/fmnist-quadratic.log" 2>&1
"$train" conv --out "$zoo/conv3x3-as-attention" --image-size 28
for log in "$zoo"/*.log; do tail -n 1 "$log"; rm -f "$log"; done
