#!/bin/sh
# docs/papers.md: the papers' claims measured on the embedded zoo through attnscope-cli, over the first COUNT (1000)
# Fashion-MNIST test images. Writes the figures (PNG, with the CSV of what each plots) and tables.md into OUT.
#
#   scripts/reproduce-papers.sh [BUILD_DIR] [OUT]      (defaults: build/release, docs/figures/papers)
#
# Needs dataset-fashion-mnist and python3 (standard library: scripts/papers_tables.py makes the tables).
set -eu
build=${1:-build/release}
out=${2:-docs/figures/papers}
count=${COUNT:-1000}
cli="$build/app/attnscope-cli"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
"$build/app/attnscope-train" export-images --split test --count "$count" --out "$tmp/images"

analyze() { # NAME OPTIONS...: one analyze run into $tmp/NAME
    name=$1
    shift
    if ! "$cli" analyze --images "$tmp/images" --out "$tmp/$name" --formats png "$@" > "$tmp/$name.log" 2>&1; then
        cat "$tmp/$name.log" >&2
        exit 1
    fi
}
noise="--noise gaussian:sigma=8 --noise fgsm:eps=1"
# NeuTRENO (seed 003): the trained model beside the baseline, and the baseline with the fidelity term added at inference.
analyze neutreno --model builtin:fmnist-vit --compare builtin:fmnist-neutreno --neutreno 0.6 --analyses similarity,attention,snr $noise
# ... and the NeuTRENO-trained model with the term taken out.
analyze neutreno-off --model builtin:fmnist-neutreno --neutreno 0 --analyses similarity
# The filtering paper (seeds 000, 001): Boost's residual and bilateral attention against the baseline.
analyze boost --model builtin:fmnist-vit --compare builtin:fmnist-boost --analyses similarity,snr $noise
analyze bilateral --model builtin:fmnist-vit --compare builtin:fmnist-bilateral --analyses similarity,attention,snr $noise
# Over-smoothing against depth: 12 layers and the 4-layer model of the first zoo.
analyze depth --model builtin:fmnist-vit --compare builtin:fmnist-vit-d4 --analyses similarity
# Cordonnier et al. (seed 002) and the kernel view (seed 004): the quadratic heads against their learned centres.
analyze quadratic --model builtin:fmnist-quadratic --analyses centres
"$cli" info builtin:fmnist-quadratic --json > "$tmp/quadratic/info.json"

keep() { # RUN FIGURE NAME: figures/FIGURE.{png,csv} of RUN as NAME.{png,csv} in OUT
    for ext in png csv; do
        cp "$tmp/$1/figures/$2.$ext" "$out/$3.$ext"
    done
}
keep neutreno token_similarity oversmoothing_neutreno
keep neutreno attention_similarity attention_similarity_neutreno
keep boost token_similarity oversmoothing_boost
keep boost snr snr_boost
keep bilateral token_similarity oversmoothing_bilateral
keep depth token_similarity oversmoothing_depth
keep quadratic head_centres quadratic_head_centres
keep quadratic head_kernels quadratic_head_kernels
python3 "$(dirname "$0")/papers_tables.py" "$tmp" > "$out/tables.md"
echo "reproduce-papers: figures and tables.md in $out ($count images)"
