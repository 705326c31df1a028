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

bench: deps
	cmake --preset release -DATTNSCOPE_BUILD_BENCHMARKS=ON
	cmake --build --preset release -j $(JOBS) --target engine_bench
	OMP_NUM_THREADS=1 $(BUILD_DIR)/tests/benchmarks/engine_bench --benchmark_counters_tabular=true
