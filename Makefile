# The two set-up commands of the README:
#   make run   installs missing packages (what building and running need), builds, runs the
#              demo pipeline (`neat run`) on its built-in input: videotestsrc 1920x1080 NV12
#              (the ball) -> letterbox preprocess -> infer (generated detector) -> yolo -> appsink
#   make test  installs missing packages (test tools too), builds, runs the normal (with the
#              ONNX conformance suite), ASan+UBSan and TSan suites, then every fuzz target for
#              FUZZ_SECONDS (60) each
# Both are idempotent: a second run with nothing changed only re-checks.

SHELL := /bin/bash
JOBS      ?= $(shell nproc)
GENERATOR ?= Ninja
CMAKE_ARGS ?=
# Line tables only (-g1): backtraces, sanitizer reports and profiles name the
# file and line; full debug info (-g) took 40% of each compile and four builds
# run in CI. For a debugger's view of variables: DEBUG_INFO=-g.
DEBUG_INFO ?= -g1
FLAGS_RELWITHDEBINFO := -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 $(DEBUG_INFO) -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 $(DEBUG_INFO) -DNDEBUG"
FLAGS_DEBUG := -DCMAKE_CXX_FLAGS_DEBUG="$(DEBUG_INFO)" -DCMAKE_C_FLAGS_DEBUG="$(DEBUG_INFO)"

BUILD      := build
BUILD_ASAN := build-asan
BUILD_TSAN := build-tsan
BUILD_FUZZ := build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := layout dlpack gst_caps pipeline trace
FUZZ_CC  ?= clang-16
FUZZ_CXX ?= clang++-16

.PHONY: run demo soak bench-preprocess bench-memory bench-python bench-streams bench-report test deps deps-test build build-tests build-asan build-tsan build-fuzz test-normal test-asan test-tsan fuzz bench format clean

# `make run` installs what building and running needs; test tools (GoogleTest,
# Google Benchmark, clang, promtool, the ONNX test data) come with `make test`.
deps:
	@bash scripts/install-deps.sh run

deps-test:
	@bash scripts/install-deps.sh test

# First configuration without the test and benchmark programs (their tools may
# be missing); `make test` turns them on.
$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(FLAGS_RELWITHDEBINFO) \
	  -DNEAT_BUILD_TESTS=OFF -DNEAT_BUILD_BENCH=OFF $(CMAKE_ARGS)

$(BUILD_ASAN)/build.ninja: | deps-test
	cmake -S . -B $(BUILD_ASAN) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=Debug $(FLAGS_DEBUG) \
	  -DNEAT_SANITIZE=address -DNEAT_BUILD_BENCH=OFF $(CMAKE_ARGS)

$(BUILD_TSAN)/build.ninja: | deps-test
	cmake -S . -B $(BUILD_TSAN) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(FLAGS_RELWITHDEBINFO) \
	  -DNEAT_SANITIZE=thread -DNEAT_BUILD_BENCH=OFF -DNEAT_BUILD_TOOLS=OFF $(CMAKE_ARGS)

# The fuzz targets need no model engine: libtorch 1.13's headers do not
# compile with clang 16 in C++20 (c10::IValue), so they are built without it.
$(BUILD_FUZZ)/build.ninja: | deps-test
	CC=$(FUZZ_CC) CXX=$(FUZZ_CXX) cmake -S . -B $(BUILD_FUZZ) -G $(GENERATOR) \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo $(FLAGS_RELWITHDEBINFO) -DNEAT_SANITIZE=fuzzer -DNEAT_BUILD_FUZZERS=ON \
	  -DNEAT_WITH_TORCH=OFF \
	  -DNEAT_BUILD_TESTS=OFF -DNEAT_BUILD_TOOLS=OFF -DNEAT_BUILD_BENCH=OFF $(CMAKE_ARGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

build-tests: deps-test $(BUILD)/build.ninja
	cmake -S . -B $(BUILD) $(FLAGS_RELWITHDEBINFO) -DNEAT_BUILD_TESTS=ON -DNEAT_BUILD_BENCH=ON > /dev/null
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps-test $(BUILD_ASAN)/build.ninja
	cmake --build $(BUILD_ASAN) -j $(JOBS)

build-tsan: deps-test $(BUILD_TSAN)/build.ninja
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target neat_threaded_tests

run: build
	./$(BUILD)/tools/neat run --trace $(BUILD)/run.jsonl --chrome $(BUILD)/run.trace.json \
	  --metrics $(BUILD)/run.prom

# The guided tour of the contract (views, donation, policies, storage backends).
demo: build
	./$(BUILD)/tools/neat-demo --trace-jsonl $(BUILD)/demo.jsonl --trace-chrome $(BUILD)/demo.trace.json
	@echo
	@echo "== neat audit $(BUILD)/demo.jsonl"
	./$(BUILD)/tools/neat audit $(BUILD)/demo.jsonl

test-normal: build-tests
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -j $(JOBS)

test-asan: build-asan
	cd $(BUILD_ASAN) && ctest --output-on-failure --timeout 900 -j $(JOBS) -LE no-sanitizer

test-tsan: build-tsan
	cd $(BUILD_TSAN) && ctest --output-on-failure --timeout 900 -j $(JOBS) -L threaded

# Only the fuzzers: their replay programs run in the normal and ASan suites.
build-fuzz: deps-test $(BUILD_FUZZ)/build.ninja
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target $(FUZZ_TARGETS:%=neat_fuzz_%)

# Each target fuzzes for FUZZ_SECONDS from its seed corpus (tests/fuzz/corpus/<t>),
# keeping what it finds in build-fuzz/corpus/<t>. A crash stops here: commit the
# reproducer to tests/fuzz/regressions/<t>/ (replayed by every test run) and fix it.
fuzz: build-fuzz
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(BUILD_FUZZ)/corpus/$$t $(BUILD_FUZZ)/artifacts; \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=allocator_may_return_null=1 \
	  ./$(BUILD_FUZZ)/tests/fuzz/neat_fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=$(BUILD_FUZZ)/artifacts/$$t- \
	    $(BUILD_FUZZ)/corpus/$$t tests/fuzz/corpus/$$t 2>&1 | grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::new_units_added|==[0-9]+==|SUMMARY|artifact_prefix|Test unit written)" ; \
	  if [ $${PIPESTATUS[0]} -ne 0 ]; then \
	    echo "fuzz $$t found a crash: see $(BUILD_FUZZ)/artifacts/; commit the input to tests/fuzz/regressions/$$t/ and fix it"; \
	    exit 1; fi; \
	done

test: test-normal test-asan test-tsan fuzz

bench: build-tests
	./$(BUILD)/bench/neat_bench

# Runs the benchmarks and writes their report (tables and plots) into docs/benchmarks.md.
bench-report: build-tests
	@bash scripts/install-deps.sh test python3-matplotlib
	/usr/bin/python3 scripts/bench_report.py $(BUILD)

# The preprocess against the strongest OpenCV and libyuv recipes at every
# detector input (sources x formats x sizes x stretch/letterbox x
# interpolations x threads): the table of docs/benchmarks.md. ARGS narrows it,
# e.g. ARGS='--sources 1080p --threads 1'; ARGS='--simd avx2' runs ours, OpenCV
# and libyuv without AVX-512 (what machines without it run).
bench-preprocess: build-tests
	./$(BUILD)/bench/neat_preprocess_table $(ARGS)

# Peak RSS, frame memory and wall time of whole pipelines (child processes),
# and a live source's capture-to-appsink latency. COMPARE=/path/to/neat adds
# another build of neat, round by round.
bench-memory: build-tests
	./$(BUILD)/bench/neat_memory $(if $(COMPARE),--compare $(COMPARE))

# The Python package's figures: appsink -> numpy per frame, and the default
# graph driven from Python against the same graph pulled in C++.
bench-python: build-tests
	PYTHONPATH=$(BUILD)/python /usr/bin/python3 bench/python_bench.py

# Four live 1080p cameras through one shared detector against four processes,
# one per camera: aggregate fps, peak RSS, per-stream p99 latency (docs/streams.md).
bench-streams: build-tests
	/usr/bin/python3 bench/streams_bench.py --neat $(BUILD)/tools/neat

# The default pipeline for 110,000 frames (about six minutes): RSS, fds, mappings.
soak: build-tests
	./$(BUILD)/bench/neat_soak $(SOAK_FRAMES)

format:
	git ls-files '*.hpp' '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN)
