# nodegate: the project's contract. Every target first installs what is missing.
SHELL := /bin/bash
# cmake --build runs make again; keep its output to progress lines.
MAKEFLAGS += --no-print-directory
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
DESTDIR ?=
CNI_BIN_DIR ?= /opt/cni/bin

.PHONY: all deps configure build test test-unit test-asan demo bench install format clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)
	@ls $(BUILD_DIR)/bin/portmap $(BUILD_DIR)/bin/bandwidth $(BUILD_DIR)/bin/host-local $(BUILD_DIR)/bin/nodegate >/dev/null

# Every tier: unit, netns (root, private namespaces), e2e (real runtime), then the unit tier
# again under AddressSanitizer + UndefinedBehaviorSanitizer.
test: build test-asan
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

test-unit: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -L unit -j $(JOBS)

test-asan: deps
	@JOBS=$(JOBS) bash scripts/test-asan.sh $(ASAN_DIR)

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)/bin

bench: build
	@bash bench/run.sh $(BUILD_DIR)

install: build
	@DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" CNI_BIN_DIR="$(CNI_BIN_DIR)" \
	  bash scripts/install.sh $(BUILD_DIR)/bin

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR) $(ASAN_DIR)
