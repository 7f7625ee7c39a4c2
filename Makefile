# The two user commands: `make run` (install, build, train) and `make test` (install, build, run every test).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# the main job: document 001's MLP trained on Fashion-MNIST (scripts/demo_tensors.lua is the tensor tour)
MAIN ?= scripts/train_mnist.lua

.PHONY: run test deps build build-asan test-asan clean

run: deps build
	$(BUILD)/nnrepl $(MAIN)

test: deps build
	@bash tests/run_tests.sh $(BUILD)

deps:
	@bash scripts/install_deps.sh

build:
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The C and Lua tests once more under AddressSanitizer + UndefinedBehaviorSanitizer (.ci/run does this).
test-asan: deps
	@$(MAKE) --no-print-directory build BUILD=build-asan CMAKE_FLAGS="-DNNREPL_SANITIZE=ON -DNNREPL_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug"
	@ASAN_OPTIONS=detect_leaks=1 NNREPL_SANITIZED=1 bash tests/run_tests.sh build-asan

clean:
	rm -rf $(BUILD) build-asan
