#!/bin/sh
# The training states in tests/engine/data/train-state (Trainer.StatesOfEitherLibTorchGoOn): the first of two epochs of a
# tiny model on 256 Fashion-MNIST images, written by attnscope-train built against each LibTorch, so that each build's
# test goes on from the other's state.
#
#   scripts/make-train-state-goldens.sh BUILD_DIR NAME [BUILD_DIR NAME ...]
#   e.g. scripts/make-train-state-goldens.sh build/release libtorch-1.13 build/libtorch2-headless libtorch-2.11
#
# before-fingerprints.train-state beside them is the state of the same model on 4096 images after its first epoch,
# written by the trainer of commit 980dafa (before states named their images by content; it has no --epochs-this-run:
# the run was killed once the state appeared): --width 16 --depth 1 --heads 2 --mlp 32 --epochs 2 --limit-train 4096
# --limit-test 64 --seed 0 --threads 1.
set -eu
dest=tests/engine/data/train-state
mkdir -p "$dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
while [ $# -ge 2 ]; do
    "$1/app/attnscope-train" --name golden --out "$work/$2" --width 16 --depth 1 --heads 2 --mlp 32 --epochs 2 \
        --limit-train 256 --limit-test 64 --seed 0 --threads 1 --epochs-this-run 1
    cp "$work/$2.train-state" "$dest/$2.train-state"
    shift 2
done
ls -l "$dest"
