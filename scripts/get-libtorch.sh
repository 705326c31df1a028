#!/bin/sh
# Fetches LibTorch 2.11.0 with CUDA 13.0 for the libtorch2 preset (README, "LibTorch 2.x with CUDA"): PyPI's torch
# wheel carries LibTorch (torch/include, torch/lib, torch/share/cmake/Torch), and the NVIDIA wheels below carry the
# CUDA libraries that torch/lib loads at start. Every wheel is pinned by file name and sha256 (PyPI's own), and they
# are unpacked as site-packages lays them out:
#     third_party/libtorch-2.11.0-cu130/torch/{include,lib,share}
#     third_party/libtorch-2.11.0-cu130/nvidia/{cu13,cudnn,cusparselt,nccl,nvshmem}/lib
# so that LibTorch's own RPATH ($ORIGIN/../../nvidia/...) finds the CUDA libraries, whatever CUDA the host has or
# lacks. Nothing here needs a GPU or the CUDA toolkit.
#
# Usage: scripts/get-libtorch.sh [DEST]       (DEST defaults to third_party/libtorch-2.11.0-cu130)
#   LIBTORCH_WHEEL_DIR=DIR   take the wheels from DIR (no network needed when they are all there); missing ones
#                            are downloaded into DIR and kept. Without it they are downloaded and deleted after.
# A second run finds DEST's stamp and does nothing. DEST appears only complete (unpacked beside it, then renamed).
set -eu

die() {
    echo "get-libtorch.sh: $*" >&2
    exit 1
}

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/third_party/libtorch-2.11.0-cu130}

# file name, sha256. The NVIDIA wheels are those of torch 2.11.0's Requires-Dist (cuda-toolkit[...]==13.0.2 names
# them) whose libraries torch/lib NEEDs, directly or through each other: cudart and cupti (libtorch_cpu.so);
# cublas, cufft, cufile, curand, cusparse and nvJitLink (cusparse needs it), cuDNN, cuSPARSELt, NCCL and NVSHMEM
# (libtorch_cuda.so, libtorch_nvshmem.so). Left out, as nothing loads them at start, only when first used on a GPU:
# cusolver (libtorch_cuda_linalg.so, torch.linalg), NVRTC (kernels compiled at run time: PyTorch's jiterator,
# cuDNN's runtime-compiled engines); and NVTX, triton. Add a wheel here if a CUDA run reports its library missing.
wheels="
torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl 7aa2f9bbc6d4595ba72138026b2074be1233186150e9292865e04b7a63b8c67a
nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548
nvidia_cuda_cupti-13.0.85-py3-none-manylinux_2_25_x86_64.whl 4eb01c08e859bf924d222250d2e8f8b8ff6d3db4721288cf35d14252a4d933c8
nvidia_cublas-13.1.0.3-py3-none-manylinux_2_27_x86_64.whl ee8722c1f0145ab246bccb9e452153b5e0515fd094c3678df50b2a0888b8b171
nvidia_cufft-12.0.0.61-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 6c44f692dce8fd5ffd3e3df134b6cdb9c2f72d99cf40b62c32dde45eea9ddad3
nvidia_cufile-1.15.1.6-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 08a3ecefae5a01c7f5117351c64f17c7c62efa5fffdbe24fc7d298da19cd0b44
nvidia_curand-10.4.0.35-py3-none-manylinux_2_27_x86_64.whl 1aee33a5da6e1db083fe2b90082def8915f30f3248d5896bcec36a579d941bfc
nvidia_cusparse-12.6.3.3-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 2b3c89c88d01ee0e477cb7f82ef60a11a4bcd57b6b87c33f789350b59759360b
nvidia_nvjitlink-13.0.88-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl 13a74f429e23b921c1109976abefacc69835f2f433ebd323d3946e11d804e47b
nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_x86_64.whl d20e1734305e9d68889a96e3f35094d733ff1f83932ebe462753973e53a572bf
nvidia_cusparselt_cu13-0.8.0-py3-none-manylinux2014_x86_64.whl 25e30a8a7323935d4ad0340b95a0b69926eee755767e8e0b1cf8dd85b197d3fd
nvidia_nccl_cu13-2.28.9-py3-none-manylinux_2_18_x86_64.whl e4553a30f34195f3fa1da02a6da3d6337d28f2003943aa0a3d247bbc25fefc42
nvidia_nvshmem_cu13-3.4.5-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 290f0a2ee94c9f3687a02502f3b9299a9f9fe826e6d0287ee18482e78d495b80
"
wheels=$(echo "$wheels" | awk NF)
stamp=$dest/.get-libtorch-complete

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wheels" ]; then
    echo "get-libtorch.sh: LibTorch 2.11.0+cu130 already in $dest"
    exit 0
fi
[ ! -e "$dest" ] || [ -f "$stamp" ] || die "$dest exists and is not a folder this script made: move it away first"
command -v python3 >/dev/null 2>&1 || die "python3 is needed to unpack the wheels (apt-get install python3)"
command -v sha256sum >/dev/null 2>&1 || die "sha256sum is needed to check the wheels (apt-get install coreutils)"

mkdir -p "$(dirname "$dest")"
work=$dest.tmp-$$
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM HUP
mkdir -p "$work/unpacked"
wheel_dir=${LIBTORCH_WHEEL_DIR:-$work/wheels}
mkdir -p "$wheel_dir" || die "cannot create the wheel folder $wheel_dir"

checksum_ok() { # FILE SHA256
    [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

# pip picks the file by name, version, interpreter and platform tag: given the pinned file's own tags it downloads
# exactly that file, whatever python (and pip) the host has.
download() { # FILE
    name=$(echo "$1" | cut -d- -f1)
    version=$(echo "$1" | cut -d- -f2)
    platform=$(echo "$1" | cut -d- -f5 | sed 's/\.whl$//; s/\..*//')
    python3 -m pip --version >/dev/null 2>&1 \
        || die "$1 is not in $wheel_dir and pip is missing to download it (apt-get install python3-pip)"
    echo "get-libtorch.sh: downloading $1"
    log=$work/pip.log
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 --implementation cp \
        --abi cp311 --platform "$platform" --dest "$wheel_dir" "$name==$version" >"$log" 2>&1 \
        || die "pip could not download $name==$version: $(grep -m1 -E 'ERROR|Error' "$log" || tail -n1 "$log")"
}

echo "$wheels" | while read -r file sha; do
    checksum_ok "$wheel_dir/$file" "$sha" && continue
    download "$file"
    [ -f "$wheel_dir/$file" ] || die "pip did not fetch $file into $wheel_dir"
    checksum_ok "$wheel_dir/$file" "$sha" \
        || die "$wheel_dir/$file: sha256 $(sha256sum "$wheel_dir/$file" | cut -d' ' -f1), expected $sha"
done

echo "get-libtorch.sh: unpacking into $dest"
# Only the libraries, headers and CMake files: torch/{include,lib,share} and nvidia/*/lib (nothing of the Python
# packages, nor the NVIDIA headers).
files=$(echo "$wheels" | awk -v dir="$wheel_dir" '{ print dir "/" $1 }')
# shellcheck disable=SC2086
python3 - "$work/unpacked" $files <<'EOF' || die "could not unpack the wheels into $work/unpacked"
import re, sys, zipfile
keep = re.compile(r"^(torch/(include|lib|share)/|nvidia/[^/]+/lib/)")
out = sys.argv[1]
for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as z:
        for member in z.infolist():
            if keep.match(member.filename) and not member.filename.endswith("__init__.py"):
                z.extract(member, out)
EOF

# Every CUDA library LibTorch loads at start must come from the folder itself, not from a CUDA the host happens to
# have: ldd follows LibTorch's RPATH, so a library found elsewhere (or not at all) means a wheel is missing here.
for lib in libtorch_cpu.so libtorch_cuda.so libtorch.so; do
    outside=$(ldd "$work/unpacked/torch/lib/$lib" | awk '/ => /{print $1, $3}' | grep -E '^lib(cu|nv|nccl)' \
        | grep -v " $work/unpacked/" | head -n1) || true
    [ -z "$outside" ] || die "torch/lib/$lib loads $outside, not from $dest: a wheel is missing from the list"
done

echo "$wheels" >"$work/unpacked/.get-libtorch-complete"
if [ -e "$dest" ]; then # an earlier version's folder (its stamp differs); nothing else is replaced
    [ -f "$stamp" ] || die "$dest exists and is not a folder this script made: move it away first"
    rm -rf "$dest"
fi
mv "$work/unpacked" "$dest"
echo "get-libtorch.sh: LibTorch 2.11.0+cu130 in $dest"
