# attnscope: the README's two commands.
#   make run    install missing Debian packages, build, and open attnscope on the embedded model and samples
#   make test   install missing Debian packages, build, and run every test
PRESET ?= release
BUILD_DIR := build/$(PRESET)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
OUT ?= attnscope-out

.PHONY: all deps configure build test run clean install screenshots bench

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD_DIR)/CMakeCache.txt: | deps
	cmake --preset $(PRESET)

configure: deps $(BUILD_DIR)/CMakeCache.txt

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

screenshots: build
	@./scripts/screenshots.sh $(BUILD_DIR)

# `make bench`: the benchmarks and the Python peer in one run, then the table (docs/performance.md). Always the
# release preset; BENCH_ARGS=--quick for a short smoke run.
bench: deps
	@./scripts/install-deps.sh $$(grep -v '^#' scripts/bench-packages.txt)
	cmake --preset release -DATTNSCOPE_BUILD_BENCHMARKS=ON -DATTNSCOPE_BENCH_BASELINE=OFF
	cmake --build --preset release -j $(JOBS) --target engine_bench dataset_bench click_bench attnscope
	/usr/bin/python3 tests/benchmarks/run_bench.py build/release --json build/release/bench-results.json $(BENCH_ARGS)
