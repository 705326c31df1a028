#!/bin/bash
# The checks that need a GPU, for a short lease of a GPU machine that has a pip torch 2.11+cu130 but no Debian
# packages (docs/performance.md, "GPU"). Two steps:
#
#   scripts/device-checks.sh prepare        here, on Debian 12: builds attnscope-cli, attnscope-train and engine_tests
#                                           against LibTorch 2.11 with a static OpenCV (make libtorch2-headless
#                                           STATIC_OPENCV=1's build folder), strips them, and puts into .device/ what
#                                           they need beside that torch (libzip) and a Fashion-MNIST subset; prints
#                                           the paths to carry.
#   scripts/device-checks.sh quick [SECONDS]  there: the CUDA tests, a Kineto profile of ViT-S batches of 64, two in
#                                           flight, one, and replayed from a CUDA graph (tests/benchmarks/gpu_profile;
#                                           a Chrome trace in $OUT), the ViT-S bench
#                                           at batch 64 and 128 with both peers, within SECONDS (290 by default): a
#                                           lease's first five minutes.
#   scripts/device-checks.sh run [SECONDS]  there, in the checkout's root, with $OUT the folder that comes back: the
#                                           CUDA tests, make bench-gpu's runner, the precision deviations, the CUDA
#                                           trainer; every phase bounded so that the whole ends within SECONDS
#                                           (540 by default), the logs in $OUT.
#   scripts/device-checks.sh prepare-zoo ZOO  here: builds and strips attnscope-train and engine_tests as prepare does,
#                                           puts ZOO's training states and logs (scripts/train-deep-zoo.sh's OUT) into
#                                           .device/zoo and the whole Fashion-MNIST, xz-compressed (26 MB), into
#                                           .device/fmnist-xz; prints the paths to carry. With the working tree they
#                                           are over a lease's 64 MiB: move resources/models, docs/figures,
#                                           docs/screenshots, tests/golden and resources/samples aside for the call.
#   scripts/device-checks.sh zoo [SECONDS]  there: the device-moving trainer test, then the zoo's four models side by
#                                           side on the GPU (train-deep-zoo.sh, BF16=1 EPOCHS=60, going on from the
#                                           carried states), interrupted before SECONDS (540) so that each keeps its
#                                           last whole epoch; the states come back in $OUT, to go on with here.
#
# The binaries' RUNPATH names this checkout's third_party/libtorch-2.11.0-cu130 under /work/main; `run` links that
# to the machine's torch and nvidia folders (the same wheels) and /work/main to the checkout.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
B=build/libtorch2-headless
D=.device

# Builds and strips the given programs (paths under $B) against LibTorch 2.11 and a static OpenCV, and puts what they
# need beside that torch (libzip, libbz2) into $D/lib.
build_for_device() {
    set -e
    # What the headless build needs from Debian (nlohmann-json, libzip, zlib, CLI11, GoogleTest/GMock, ...): a fresh
    # machine has none of it, and this step had to be helped by hand once.
    ./scripts/install-deps.sh --headless
    ./scripts/get-libtorch.sh
    # OPENCV_DIR: a static OpenCV's CMake folder already built elsewhere (default: get-opencv.sh's, built once).
    local opencv=${OPENCV_DIR:-$root/third_party/opencv-4.6.0-static/lib/cmake/opencv4}
    [ -n "${OPENCV_DIR:-}" ] || ./scripts/get-opencv.sh
    cmake --preset libtorch2-headless -DOpenCV_DIR="$opencv" -DATTNSCOPE_BUILD_BENCHMARKS=ON -DATTNSCOPE_BENCH_BASELINE=OFF >/dev/null
    local p targets=()
    for p in "$@"; do targets+=(--target "$(basename "$p")"); done
    cmake --build $B -j "${JOBS:-$(nproc)}" "${targets[@]}"
    (cd $B && strip -s "$@")
    mkdir -p $D/lib
    cp -L "$(ldconfig -p | awk '/libzip.so.4 /{print $NF; exit}')" $D/lib/
    cp -L "$(ldconfig -p | awk '/libbz2.so.1.0 /{print $NF; exit}')" $D/lib/
}

prepare() {
    build_for_device app/attnscope-cli app/attnscope-train tests/engine_tests tests/benchmarks/gpu_profile
    mkdir -p $D/fmnist
    # 12,000 training and 1,000 test images: enough to time the trainer, a tenth of the carried size.
    python3 - "$D/fmnist" <<'EOF'
import gzip, struct, sys
src, dst = "/usr/share/datasets/fashion-mnist/", sys.argv[1] + "/"
for split, n in (("train", 12000), ("t10k", 1000)):
    d = gzip.open(src + split + "-images-idx3-ubyte.gz").read()
    magic, _, r, c = struct.unpack(">IIII", d[:16])
    gzip.open(dst + split + "-images-idx3-ubyte.gz", "wb").write(struct.pack(">IIII", magic, n, r, c) + d[16:16 + n * r * c])
    d = gzip.open(src + split + "-labels-idx1-ubyte.gz").read()
    magic, _ = struct.unpack(">II", d[:8])
    gzip.open(dst + split + "-labels-idx1-ubyte.gz", "wb").write(struct.pack(">II", magic, n) + d[8:8 + n])
EOF
    echo "carry: [\"$D/lib\", \"$D/fmnist\", \"$B/app/attnscope-cli\", \"$B/app/attnscope-train\", \"$B/tests/engine_tests\", \"$B/tests/benchmarks/gpu_profile\"]"
    echo "command: bash scripts/device-checks.sh quick 290   (timeout_s 320), then if time is left: run 540 (timeout_s 590)"
    echo "the third-party tests: ln -s ../shared shared before the call (shared/ travels with the checkout)"
}

prepare_zoo() {
    set -e
    local zoo=${1:?prepare-zoo needs the zoo folder of scripts/train-deep-zoo.sh}
    build_for_device app/attnscope-train tests/engine_tests
    mkdir -p $D/zoo $D/fmnist-xz
    rm -f $D/zoo/*
    cp "$zoo"/*.train-state "$zoo"/*.log $D/zoo/ 2>/dev/null || true
    local f
    for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
        [ -s $D/fmnist-xz/$f.xz ] || zcat /usr/share/datasets/fashion-mnist/$f.gz | xz -9 -T0 > $D/fmnist-xz/$f.xz
    done
    du -sh $D/zoo $D/fmnist-xz $B/app/attnscope-train $B/tests/engine_tests
    echo "carry: [\"$D/lib\", \"$D/zoo\", \"$D/fmnist-xz\", \"$B/app/attnscope-train\", \"$B/tests/engine_tests\"]"
    echo "command: bash scripts/device-checks.sh zoo 560   (timeout_s 600)"
}

# The machine's pip torch where the binaries' RUNPATH looks for LibTorch, and this checkout where it was built.
link_torch() {
    local sp
    sp=${SP:-$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')}
    mkdir -p third_party/libtorch-2.11.0-cu130 /work
    ln -sfn "$sp/torch" third_party/libtorch-2.11.0-cu130/torch
    ln -sfn "$sp/nvidia" third_party/libtorch-2.11.0-cu130/nvidia
    [ -e /work/main ] || ln -s "$root" /work/main
    export LD_LIBRARY_PATH=$root/$D/lib
}

# On the GPU machine: a clock that ends SECONDS from now (el: a heading with the seconds so far; left: the seconds
# left), the output also to $OUT/log.txt, LibTorch linked, the machine named.
begin() {
    t0=$(date +%s)
    end=$((t0 + $1))
    exec > >(tee -a "$OUT/log.txt") 2>&1
    link_torch
    # The tests' data: the carried Fashion-MNIST subset where the trainer test reads Debian's, and the third-party
    # CIFAR model and images when shared/ came with the checkout (a link to ../shared made before the call).
    if [ -d $D/fmnist ] && [ ! -e /usr/share/datasets/fashion-mnist ]; then
        mkdir -p /usr/share/datasets && ln -s "$root/$D/fmnist" /usr/share/datasets/fashion-mnist
    fi
    [ -d "$root/shared/models" ] && export ATTNSCOPE_SHARED_DIR=$root/shared
    el "machine"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
}
el() { echo "=== [$(($(date +%s) - t0)) s] $*"; }
left() { echo $((end - $(date +%s))); }

zoo() {
    begin "${1:-540}"
    echo "CPUs $(nproc); $(env | grep -E '^(OMP|MKL|OPENBLAS)_' | tr '\n' ' ')"
    # The trainer and the tests read Debian's folder; here it is made from the carried copy.
    local data=/tmp/fashion-mnist f
    mkdir -p $data
    for f in $D/fmnist-xz/*.xz; do
        python3 -c 'import gzip, lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), gzip.open(sys.argv[2], "wb", 1))' \
            "$f" "$data/$(basename "$f" .xz).gz"
    done
    mkdir -p /usr/share/datasets
    [ -e /usr/share/datasets/fashion-mnist ] || ln -s $data /usr/share/datasets/fashion-mnist
    ls -la $data $D/zoo

    el "trainer tests: a run going on on another device"
    timeout 120 $B/tests/engine_tests --gtest_brief=1 --gtest_filter='Trainer.ARunGoesOnOnAnotherDevice:Trainer.StatesOfEitherLibTorchGoOn' 2>&1 | tail -12

    el "the zoo, side by side, until $((end - t0 - 30)) s"
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader -l 15 > /tmp/gpu-use.txt &
    local smi=$!
    # The models whose states came (all four when none did).
    local only
    only=$(cd $D/zoo && ls -- *.train-state 2>/dev/null | sed 's/[.]train-state$//' | tr '\n' ' ')
    ONLY=$only BF16=1 EPOCHS=60 DEVICE=cuda FMNIST=$data setsid scripts/train-deep-zoo.sh $B $D/zoo > /tmp/zoo.txt 2>&1 &
    local zoo_pid=$!
    while [ "$(date +%s)" -lt $((end - 30)) ] && kill -0 $zoo_pid 2>/dev/null; do sleep 2; done
    pkill -INT -f "$B/app/attnscope-train" || true
    local waited=0
    while kill -0 $zoo_pid 2>/dev/null && [ $waited -lt 25 ]; do sleep 1; waited=$((waited + 1)); done
    kill $smi 2>/dev/null
    el "GPU utilisation, memory (every 15 s)"
    tr '\n' ' ' < /tmp/gpu-use.txt; echo
    el "the zoo's logs"
    cat /tmp/zoo.txt
    for f in $D/zoo/*.log; do echo "--- $f"; tail -n 40 "$f"; done
    cp $D/zoo/*.train-state "$OUT/" 2>/dev/null
    local done_models
    done_models=$(cd $D/zoo && find . -maxdepth 2 -name MODEL_CARD.md -printf '%h\n')
    [ -z "$done_models" ] || (cd $D/zoo && tar cf "$OUT/finished.tar" $done_models)
    ls -la "$OUT"
    el "done"
}

run() {
    begin "${1:-540}"
    python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())'
    ldd $B/app/attnscope-cli | grep "not found"
    echo "CPUs $(nproc); $(env | grep -E '^(OMP|MKL|OPENBLAS)_' | tr '\n' ' ')"

    el "CUDA, batching and perturbation tests"
    timeout 150 $B/tests/engine_tests --gtest_brief=1 \
        --gtest_filter='BatchedAnalyses.*:InFlight*:Batching*:PerturbationGolden*:*Cuda*:*Device*:LinkOrder*' 2>&1 | tail -25

    el "precision and CUDA against the CPU: fmnist-vit, 500 test images ($(left) s left)"
    local p=/tmp/precision a
    mkdir -p $p
    $B/app/attnscope-train --fashion-mnist-dir $D/fmnist export-images --split test --count 500 --out $p/fm >/dev/null
    a="--analyses similarity,attention,centres,snr --noise gaussian:sigma=8 --formats none --grid-images 0"
    for prec in fp32 tf32 bf16; do
        # shellcheck disable=SC2086
        timeout 40 $B/app/attnscope-cli analyze --model builtin:fmnist-vit --images $p/fm --device cuda --batch 64 \
            --precision $prec $a --out $p/$prec >/dev/null 2>$p/$prec.err || tail -2 $p/$prec.err
    done
    # shellcheck disable=SC2086
    timeout 60 $B/app/attnscope-cli analyze --model builtin:fmnist-vit --images $p/fm --device cpu $a --out $p/cpu \
        >/dev/null 2>$p/cpu.err || tail -2 $p/cpu.err
    python3 tests/benchmarks/compare_outputs.py $p/cpu $p/fp32 --markdown "cuda fp32 vs cpu"
    for prec in tf32 bf16; do python3 tests/benchmarks/compare_outputs.py $p/fp32 $p/$prec --markdown "$prec"; done

    el "trainer on the GPU ($(left) s left)"
    local tr="$B/app/attnscope-train --depth 12 --width 64 --heads 4 --mlp 128 --seed 0 --threads 1 --device cuda"
    tr="$tr --fashion-mnist-dir $D/fmnist --limit-test 1000"
    timeout 60 $tr --epochs 2 --name probe --out /tmp/probe 2>&1 | tail -3
    # The four variants side by side on the one GPU, one epoch each: whether a zoo trains in parallel there. Waited for
    # by their PIDs: a bare `wait` also waits for the `tee` that begin() put behind this shell's output, for ever.
    local pids=()
    for v in vit neutreno boost bilateral; do
        timeout 90 $tr --epochs 1 --variant $v --name "p-$v" --out "/tmp/p-$v" >"/tmp/p-$v.log" 2>&1 &
        pids+=($!)
    done
    wait "${pids[@]}"
    tail -qn 2 /tmp/p-*.log

    el "bench-gpu ($(left) s left)"
    local long=$(( ($(left) - 330) * 400 ))
    [ $long -gt 0 ] || long=0
    PYTHONUNBUFFERED=1 timeout $(( $(left) - 10 )) python3 tests/benchmarks/gpu_bench.py $B \
        --models vit_small,vit_base --batches 1,16,64,128 --images 4096 --images-b1 300 --long $long \
        --timeout 120 --json "$OUT/bench-gpu.json" --work /tmp/bench
    el "done"
}

# A lease's first five minutes: the CUDA tests, three profiles, and the bench at ViT-S/16 batch 64 and 128 beside both
# peers (DataLoader, inputs on the device). Every
# phase is bounded by `timeout` and prints as it goes (no phase waits on another's pipe).
quick() {
    begin "${1:-290}"
    python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())'
    ldd $B/app/attnscope-cli | grep "not found"
    el "CUDA, batching, perturbation and third-party tests"
    timeout 90 $B/tests/engine_tests --gtest_brief=1 \
        --gtest_filter='BatchedAnalyses.*:InFlight*:Batching*:PerturbationGolden*:*Cuda*:*Device*:ThirdParty*:LinkOrder*' 2>&1 | tail -25
    el "profile of ViT-S/16 batches of 64, two in flight as the report runs them (Kineto)"
    timeout 40 $B/tests/benchmarks/gpu_profile --batch 64 --batches 3 --top 15 --trace "$OUT/profile-b64.json" 2>&1 | tail -30
    el "the same, one batch at a time (the idle gaps that two in flight close)"
    timeout 25 $B/tests/benchmarks/gpu_profile --batch 64 --batches 3 --in-flight 1 --top 5 2>&1 | tail -12
    el "the same, two in flight, each batch replayed from a CUDA graph (--cuda-graph)"
    timeout 25 $B/tests/benchmarks/gpu_profile --batch 64 --batches 3 --cuda-graph --top 5 2>&1 | tail -12
    # 1024 images a run: the three processes a batch (both peers and attnscope) fit what is left.
    el "bench-gpu, ViT-S/16 at batch 64 and 128 ($(left) s left)"
    PYTHONUNBUFFERED=1 timeout $(( $(left) - 5 )) python3 tests/benchmarks/gpu_bench.py $B \
        --models vit_small --batches 64,128 --images 1024 --long 0 --ablation-images 128 \
        --timeout 60 --json "$OUT/bench-gpu.json" --work /tmp/bench
    el "done"
}

case "${1:-}" in
prepare) prepare ;;
quick) quick "${2:-290}" ;;
run) run "${2:-540}" ;;
prepare-zoo) prepare_zoo "${2:-}" ;;
zoo) zoo "${2:-540}" ;;
*)
    echo "usage: scripts/device-checks.sh prepare | quick [SECONDS] | run [SECONDS] | prepare-zoo ZOO | zoo [SECONDS]" >&2
    exit 2
    ;;
esac
