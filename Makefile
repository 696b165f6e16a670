# The two set-up commands of the README:
#   make run   installs missing packages, builds, runs the demo pipeline (`neat run`) on its
#              built-in input (videotestsrc 1920x1080 NV12 -> fused preprocess -> appsink)
#   make test  installs missing packages, builds, runs the normal, ASan+UBSan and TSan suites
# Both are idempotent: a second run with nothing changed only re-checks.

JOBS      ?= $(shell nproc)
GENERATOR ?= Ninja
CMAKE_ARGS ?=

BUILD      := build
BUILD_ASAN := build-asan
BUILD_TSAN := build-tsan

.PHONY: run demo test deps build build-asan build-tsan test-normal test-asan test-tsan bench format clean

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

$(BUILD_ASAN)/build.ninja: | deps
	cmake -S . -B $(BUILD_ASAN) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=Debug \
	  -DNEAT_SANITIZE=address -DNEAT_BUILD_BENCH=OFF $(CMAKE_ARGS)

$(BUILD_TSAN)/build.ninja: | deps
	cmake -S . -B $(BUILD_TSAN) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DNEAT_SANITIZE=thread -DNEAT_BUILD_BENCH=OFF -DNEAT_BUILD_TOOLS=OFF $(CMAKE_ARGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps $(BUILD_ASAN)/build.ninja
	cmake --build $(BUILD_ASAN) -j $(JOBS)

build-tsan: deps $(BUILD_TSAN)/build.ninja
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

test-normal: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	cd $(BUILD_ASAN) && ctest --output-on-failure -j $(JOBS) -LE no-sanitizer

test-tsan: build-tsan
	cd $(BUILD_TSAN) && ctest --output-on-failure -j $(JOBS) -L threaded

test: test-normal test-asan test-tsan

bench: build
	./$(BUILD)/bench/neat_bench

format:
	git ls-files '*.hpp' '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN)
