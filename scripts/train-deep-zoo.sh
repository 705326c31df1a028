#!/bin/sh
# The second generation of the zoo (issue 18): 12-layer Fashion-MNIST ViTs with standard augmentation (random 2-pixel
# shifts, horizontal flips) for the baseline, NeuTRENO (lambda 0.6), Boost (t 0.3) and bilateral attention, written to
# OUT (not into resources/models: look at the cards first). A manual command, not part of CI.
#
#   scripts/train-deep-zoo.sh [BUILD_DIR] [OUT]      (defaults: build/release, deep-zoo)
#
# Environment: DEVICE (cpu, or cuda on a GPU machine: the four models then train side by side on the one GPU), BF16 (1:
# matrix products in bfloat16, --bf16; 1.45x faster on an AMX CPU), EPOCHS (30), WIDTH (64), HEADS (4), MLP (2 x
# WIDTH), FMNIST (the Fashion-MNIST folder, default Debian's; a GPU machine without apt needs a copy carried with the
# checkout), ONLY (names of the models to train, e.g. "fmnist-vit fmnist-neutreno"; default all four). On the CPU two
# models train at a time, one thread each (docs/performance.md, "Training": about 215 s per epoch and model on a quiet
# core of a Sapphire Rapids, 160 s with BF16=1), or all four at once with TOGETHER=1 (when their epochs left differ, as
# after a GPU lease). The embedded zoo was made with BF16=1 EPOCHS=16 (docs/models.md).
set -eu
build=${1:-build/release}
out=${2:-deep-zoo}
train="$build/app/attnscope-train"
device=${DEVICE:-cpu}
epochs=${EPOCHS:-30}
width=${WIDTH:-64}
heads=${HEADS:-4}
mlp=${MLP:-$((2 * width))}
fmnist=${FMNIST:-/usr/share/datasets/fashion-mnist}
bf16=
[ "${BF16:-0}" = 1 ] && bf16=--bf16
mkdir -p "$out"
common="--depth 12 --width $width --heads $heads --mlp $mlp --epochs $epochs --seed 0 --threads 1 --device $device --fashion-mnist-dir $fmnist $bf16"
# Interrupted (a kill, the end of a session), the same command goes on: a finished model (its card written, no state
# left beside it) is skipped, an unfinished one goes on after its last whole epoch (attnscope-train keeps
# <out>.train-state) to the weights of a run never stopped.
run() { # NAME VARIANT [OPTIONS...]
    name=$1
    shift
    case " ${ONLY:-$name} " in *" $name "*) ;; *) return 0 ;; esac
    if [ -f "$out/$name/MODEL_CARD.md" ] && [ ! -f "$out/$name.train-state" ]; then
        echo "$name: done already ($out/$name)"
        return 0
    fi
    "$train" --name "$name" --out "$out/$name" $common "$@" >> "$out/$name.log" 2>&1
}
if [ "$device" = cpu ] && [ "${TOGETHER:-0}" != 1 ]; then
    run fmnist-vit --variant vit &
    run fmnist-neutreno --variant neutreno --neutreno-lambda 0.6 &
    wait
    run fmnist-boost --variant boost --boost-t 0.3 &
    run fmnist-bilateral --variant bilateral &
    wait
else
    run fmnist-vit --variant vit &
    run fmnist-neutreno --variant neutreno --neutreno-lambda 0.6 &
    run fmnist-boost --variant boost --boost-t 0.3 &
    run fmnist-bilateral --variant bilateral &
    wait
fi
for log in "$out"/*.log; do tail -n 1 "$log"; done
