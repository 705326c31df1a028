# attnscope: the README's two commands.
#   make run    install missing Debian packages, build, and open attnscope on the embedded model and Fashion-MNIST samples
#   make test   install missing Debian packages, build, and run every test
# Reliability (docs/fuzzing.md): make fuzz [FUZZ_SECONDS=60], make test-asan, make test-tsan.
# LibTorch 2.11 with CUDA 13.0 (README): make libtorch2 [LIBTORCH_DIR=a torch folder already there].
PRESET ?= release
BUILD_DIR := build/$(PRESET)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
OUT ?= attnscope-out

.PHONY: all deps deps-headless python python-torch test-fresh configure build test run clean install screenshots bench bench-builds bench-gpu fuzz test-asan test-tsan headless test-headless test-avx2 libtorch2 libtorch2-headless get-libtorch get-opencv

all: build

deps:
	@./scripts/install-deps.sh

# The packages of the build without Qt only (scripts/debian-packages.txt less those marked gui).
deps-headless:
	@./scripts/install-deps.sh --headless

# The generated Makefile is the stamp: a failed configure leaves a CMakeCache.txt but no Makefile.
$(BUILD_DIR)/Makefile: | deps
	cmake --preset $(PRESET)

configure: deps $(BUILD_DIR)/Makefile

build: configure
	cmake --build --preset $(PRESET) -j $(JOBS)

test: build
	ctest --preset $(PRESET) -j $(JOBS)

run: build
	@./scripts/run.sh $(BUILD_DIR) $(OUT)

install: build
	cmake --install $(BUILD_DIR)

clean:
	rm -rf build

# `make python`: the Python module as a new user installs it (docs/python.md): a venv in $(VENV) that sees Debian's
# numpy, Pillow and torch, `pip install .` into it (scikit-build-core; build/python is kept), then the module's tests
# with that venv's python. The CLI comparisons use build/release's attnscope-cli when it is built, and skip otherwise.
VENV ?= .venv
python: deps-headless
	@test -x $(VENV)/bin/python || /usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check .
	cd tests/python && env -u PYTHONPATH $(CURDIR)/$(VENV)/bin/python -m pytest -q -p no:cacheprovider .

# `make python-torch TORCH_VENV=DIR`: the module for a Python environment whose torch carries its own LibTorch (a pip
# torch 2.x; DIR also has scikit-build-core and numpy): built without build isolation, so that CMake sees that torch and
# links its LibTorch (build/python-torch), installed there, then the module's tests with that Python.
python-torch:
	@test -x "$(TORCH_VENV)/bin/python" || { echo "make python-torch: TORCH_VENV=DIR, a venv with torch, numpy and scikit-build-core" >&2; exit 1; }
	$(TORCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-build-isolation --config-settings=build-dir=build/python-torch .
	cd tests/python && env -u PYTHONPATH $(abspath $(TORCH_VENV))/bin/python -m pytest -q -p no:cacheprovider .

# The README's make test as a new user meets it: a bare Debian 12 root (debootstrap), a clean clone of HEAD with
# ../shared beside it; first the build without Qt, then make test, then the two builds' data files compared.
# CI runs exactly this (.ci/run), and the engine and CLI tests as on an AVX2 CPU (make test-avx2). Needs root.
# FRESH_STEPS: a subset of "headless avx2 python test compare".
FRESH_STEPS ?=
test-fresh:
	./scripts/test-fresh.sh $(FRESH_STEPS)

screenshots: build
	@./scripts/screenshots.sh $(BUILD_DIR)

# `make bench`: the benchmarks and the Python peer in one run, then the table (docs/performance.md). The release
# preset, or BENCH_PRESET=libtorch2 for the build against LibTorch 2.11; BENCH_ARGS=--quick for a short smoke run.
BENCH_PRESET ?= release
bench: deps $(if $(filter libtorch2,$(BENCH_PRESET)),get-libtorch)
	@./scripts/install-deps.sh $$(grep -v '^#' scripts/bench-packages.txt)
	cmake --preset $(BENCH_PRESET) $(if $(filter libtorch2,$(BENCH_PRESET)),$(LIBTORCH_ARGS)) \
	    -DATTNSCOPE_BUILD_BENCHMARKS=ON -DATTNSCOPE_BENCH_BASELINE=OFF
	cmake --build --preset $(BENCH_PRESET) -j $(JOBS) --target engine_bench dataset_bench click_bench remote_set_bench attnscope attnscope-cli
	@# The Swin peer: timm 1.0.31 (PyPI) over Debian's torch, in a venv of its own; without PyPI, the run says so.
	@test -x build/bench-venv/bin/python || (/usr/bin/python3 -m venv --system-site-packages build/bench-venv \
	    && build/bench-venv/bin/pip install -q --no-deps timm==1.0.31 safetensors huggingface_hub pyyaml) \
	    || (rm -rf build/bench-venv; echo "make bench: no timm (PyPI unreachable): the Swin row has torchvision's peer only")
	/usr/bin/python3 tests/benchmarks/run_bench.py build/$(BENCH_PRESET) --json build/$(BENCH_PRESET)/bench-results.json $(BENCH_ARGS)

# `make bench-builds`: the CPU forward of the default build (Debian's LibTorch 1.13) and of the LibTorch 2.x build
# side by side in alternating rounds, with the target that 2.x is within 5% (docs/performance.md, "LibTorch 2.x").
bench-builds: deps get-libtorch
	cmake --preset release -DATTNSCOPE_BUILD_BENCHMARKS=ON -DATTNSCOPE_BENCH_BASELINE=OFF
	cmake --build --preset release -j $(JOBS) --target engine_bench
	cmake --preset libtorch2-headless $(LIBTORCH_ARGS) -DATTNSCOPE_BUILD_BENCHMARKS=ON -DATTNSCOPE_BENCH_BASELINE=OFF
	cmake --build --preset libtorch2-headless -j $(JOBS) --target engine_bench
	/usr/bin/python3 tests/benchmarks/compare_builds.py build/release build/libtorch2-headless --json build/libtorch2-headless/bench-builds.json $(BENCH_ARGS)

# `make bench-gpu`: attnscope-cli of the headless LibTorch 2.x build against the batched PyTorch peer on one GPU, in
# the same run: images/s at batch 1/16/64/128, GPU utilisation and memory, the device's FP32 sgemm peak, a long
# flat-memory run, then the table and the targets (docs/performance.md, "GPU (make bench-gpu)"). On a GPU machine with
# a pip torch: make bench-gpu LIBTORCH_DIR=$$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))').
# BENCH_ARGS=--quick for a short smoke run; BENCH_ARGS='--device cpu --quick' tests the runner without a GPU.
bench-gpu: deps-headless get-libtorch get-opencv
	cmake --preset libtorch2-headless $(LIBTORCH_ARGS) $(OPENCV_ARGS)
	cmake --build --preset libtorch2-headless -j $(JOBS) --target attnscope-cli
	python3 tests/benchmarks/gpu_bench.py build/libtorch2-headless --json build/libtorch2-headless/bench-gpu.json $(BENCH_ARGS)

# `make libtorch2`: LibTorch 2.11 with CUDA 13.0 from PyPI's torch wheel, fetched once into third_party/
# (scripts/get-libtorch.sh), then the libtorch2 preset (build/libtorch2) built and every test run. LIBTORCH_DIR=DIR
# builds against a torch folder that is already there instead (a pip-installed torch 2.x:
# LIBTORCH_DIR=$$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')), and fetches nothing.
LIBTORCH_ARGS := $(if $(LIBTORCH_DIR),-DATTNSCOPE_LIBTORCH_DIR=$(abspath $(LIBTORCH_DIR)))
get-libtorch:
	$(if $(LIBTORCH_DIR),@echo "LibTorch: $(LIBTORCH_DIR)",./scripts/install-deps.sh --headless python3-pip && ./scripts/get-libtorch.sh)

# STATIC_OPENCV=1 (libtorch2-headless, bench-gpu): link a small static OpenCV 4.6.0 that scripts/get-opencv.sh builds
# once into third_party/, so that the programs run on a machine without Debian's OpenCV and the ~140 libraries it
# loads (a GPU node, a cluster): they then need only LibTorch, libzip and zlib (docs/performance.md, "GPU").
OPENCV_ARGS := $(if $(filter 1,$(STATIC_OPENCV)),-DOpenCV_DIR=$(CURDIR)/third_party/opencv-4.6.0-static/lib/cmake/opencv4)
get-opencv:
	$(if $(filter 1,$(STATIC_OPENCV)),./scripts/get-opencv.sh,@true)

libtorch2: deps get-libtorch
	cmake --preset libtorch2 $(LIBTORCH_ARGS)
	cmake --build --preset libtorch2 -j $(JOBS)
	ctest --preset libtorch2 -j $(JOBS)

# The same without Qt (a GPU node or a cluster: nothing of Qt needed or linked).
libtorch2-headless: deps-headless get-libtorch get-opencv
	cmake --preset libtorch2-headless $(LIBTORCH_ARGS) $(OPENCV_ARGS)
	cmake --build --preset libtorch2-headless -j $(JOBS)
	ctest --preset libtorch2-headless -j $(JOBS)

# libFuzzer harnesses (clang-14, ASan+UBSan), each run for FUZZ_SECONDS from tests/fuzz/corpus.
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?=
FUZZERS ?= safetensors config npy torch_checkpoint image
fuzz: deps
	@./scripts/install-deps.sh $$(grep -v '^#' scripts/fuzz-packages.txt)
	cmake --preset fuzz
	cmake --build --preset fuzz -j $(JOBS)
	FUZZ_RUNS=$(FUZZ_RUNS) ./tests/fuzz/run.sh build/fuzz $(FUZZ_SECONDS) $(FUZZERS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer (gcc; LibTorch/Qt stay uninstrumented),
# leaks detected, UB fatal. ASAN_EXCLUDE: a ctest regex of tests to leave out (none by default).
ASAN_EXCLUDE ?= ^$$
test-asan: deps
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS) -E '$(ASAN_EXCLUDE)' $(CTEST_ARGS)

# The threaded tests under ThreadSanitizer: the GUI and its EngineWorker (gui_tests: model/image jobs superseded
# and cancelled), the analysis runner and its cancellation (engine), the CLI's analyze runs and Ctrl-C.
TSAN_TESTS ?= ^(gui_tests|widgets_tests|GoldenParity\.CancelledRunReportsCancelled|AnalysisOracles\..*|InterOp\..*|AttentionProducts\..*|PackedLinear\.ThreadsShareOneCache|Cases/GoldenAnalyses\..*|Cli\.(Analyze.*|ShardsMergeToTheUnshardedRun|InterruptLeavesNoPartialFile))$$
# Left out under TSan: the tests whose point is an OpenMP team of two intra-op threads. LibTorch (Debian's) runs its
# teams on gcc's libgomp, which is not instrumented, so TSan cannot see the team's fork and join barriers and reports
# every hand-over of a tensor between the team and its caller (LLVM's Archer annotates only LLVM's libomp, which
# LibTorch does not use). Every other threaded test runs with OMP_NUM_THREADS=1 (the preset), so no team is made.
TSAN_EXCLUDE ?= ^(AttentionProducts\.TwoIntraOpThreadsMatchAtMatmul|InterOp\.AblatedHeadsFollowTheirInputsAcrossThreads)$$
test-tsan: deps
	cmake --preset tsan
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan -j $(JOBS) -R '$(TSAN_TESTS)' -E '$(TSAN_EXCLUDE)' $(CTEST_ARGS)

# The build without Qt (ATTNSCOPE_GUI=OFF, preset headless): the engine, attnscope-cli and attnscope-train; the CLI
# writes every data file, the figures' CSVs included, and no picture. Nothing of Qt or QCustomPlot is needed.
$(CURDIR)/build/headless/Makefile: | deps-headless
	cmake --preset headless

headless: $(CURDIR)/build/headless/Makefile
	cmake --build --preset headless -j $(JOBS)

test-headless: headless
	ctest --preset headless -j $(JOBS)

# The engine and CLI tests once more as an AVX2 CPU (every AMD Zen 1-3, Intel's desktop CPUs) runs them, whatever this
# CPU is: oneDNN held to AVX2 (its own ONEDNN_MAX_CPU_ISA) and OpenBLAS on its Haswell kernels. On an AVX-512 machine
# that is another set of kernels (docs/performance.md, "Which kernels run where"). CI runs it on the headless build
# (AVX2_PRESET), after make test-headless.
AVX2_PRESET ?= $(PRESET)
test-avx2:
	@test -f build/$(AVX2_PRESET)/CTestTestfile.cmake || { echo "make test-avx2: build/$(AVX2_PRESET) is not built (make test, or AVX2_PRESET=headless after make test-headless)" >&2; exit 1; }
	ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell ctest --preset $(AVX2_PRESET) -j $(JOBS) --no-tests=error -L '^(engine|cli)$$'
