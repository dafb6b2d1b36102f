# nodegate: the project's contract. Every target first installs what is missing.
SHELL := /bin/bash
MAKEFLAGS += --no-print-directory
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
# The arm64 cross build (cmake/toolchains/debian-cross.cmake): its executables, and its unit
# tests run under qemu-user.
ARM64_DIR ?= build-arm64
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
DESTDIR ?=
CNI_BIN_DIR ?= /opt/cni/bin

.PHONY: all deps configure build test test-unit test-asan demo bench install deb image format format-check tidy clean fuzz \
  deps-arm64 configure-arm64 build-arm64 test-arm64 release release-check

all: build

deps:
	@bash scripts/install-deps.sh

# The release build has no unit tests: make test runs that tier in the sanitizer build.
configure: deps
	@bash scripts/configure.sh $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODEGATE_UNIT_TESTS=OFF

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)
	@ls $(BUILD_DIR)/bin/portmap $(BUILD_DIR)/bin/bandwidth $(BUILD_DIR)/bin/host-local \
	  $(BUILD_DIR)/bin/cluster-ipam $(BUILD_DIR)/bin/bridge $(BUILD_DIR)/bin/nodegate >/dev/null

# arm64 (issue 33): the same build description, Debian's cross toolchain and :arm64 libraries
# (install-deps.sh --arch arm64), the architecture a parameter of the toolchain file. Its unit
# tests are configured too (make test-arm64 runs them under qemu-user); this target builds the
# executables, the man page and the completions (written by nodegate under qemu-user) only.
deps-arm64:
	@bash scripts/install-deps.sh --arch arm64

configure-arm64: deps-arm64
	@bash scripts/configure.sh $(ARM64_DIR) -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/toolchains/debian-cross.cmake \
	  -DNODEGATE_ARCH=arm64 -DCMAKE_BUILD_TYPE=RelWithDebInfo

build-arm64: configure-arm64
	@cmake --build $(ARM64_DIR) -j $(JOBS) --target portmap bandwidth host-local cluster-ipam bridge nodegate \
	  nodegate_docs

# build/release/: per architecture the plugins' tarball, nodegate, the .deb (each with .sha256
# and .sha512), and the install image and the webhook's image, each as one multi-architecture
# OCI index (scripts/release.sh).
# Fails when an artifact is not static, not of its architecture, or a checksum does not verify.
release: build build-arm64
	@bash scripts/release.sh $(BUILD_DIR)/release amd64=$(BUILD_DIR)/bin arm64=$(ARM64_DIR)/bin

# The release's tarballs, executables and packages built a second time from a copy of this tree
# in another folder: byte-identical (tests/release/reproducible_test.sh; about two builds' time).
release-check: build build-arm64
	@JOBS=$(JOBS) bash tests/release/reproducible_test.sh amd64=$(BUILD_DIR)/bin arm64=$(ARM64_DIR)/bin

# Every tier (scripts/test.sh): the release build's netns, e2e, deploy and style tests while
# the sanitizer build compiles at low priority; then the unit tier under AddressSanitizer +
# UndefinedBehaviorSanitizer, and the netns tests that exec the executables (label `plugins`)
# again against their sanitizer builds. arm64 is make test-arm64's.
test: build
	@JOBS=$(JOBS) bash scripts/test.sh $(BUILD_DIR) $(ASAN_DIR)

# arm64 (tests/arm64/README.md): the cross build's unit tier under qemu-user, the netns tier of
# the portability checks in a Debian 12 arm64 VM (its own kernel, qemu-system-aarch64 under
# TCG), the install image's arm64 variant run as the DaemonSet runs it (qemu-user), and the
# release's reproducibility.
test-arm64: build build-arm64
	@JOBS=$(JOBS) bash scripts/test-arm64.sh $(BUILD_DIR) $(ARM64_DIR)

# The unit tier alone (in the sanitizer build, where make test runs it).
test-unit: test-asan

test-asan: deps
	@JOBS=$(JOBS) bash scripts/test-asan.sh $(ASAN_DIR)

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)/bin

bench: build
	@bash bench/run.sh $(BUILD_DIR)

# libFuzzer targets (tests/fuzz) built with clang and ASan+UBSan in $(FUZZ_DIR), each run for
# FUZZ_SECONDS (default 60) with FUZZ_JOBS processes (default 1); then the crash-consistency
# soak: every plugin killed at CRASH_CYCLES (default 500) random points of ADD and DEL
# (cluster-ipam's against its own three etcd members).
FUZZ_DIR ?= build-fuzz
CRASH_CYCLES ?= 500
fuzz: build
	@JOBS=$(JOBS) bash scripts/fuzz.sh $(FUZZ_DIR)
	@cd $(BUILD_DIR) && set -o pipefail && NODEGATE_CRASH_CYCLES=$(CRASH_CYCLES) \
	  ctest --output-on-failure -V -R 'crash_consistency_test|cluster_ipam_crash_test' | \
	  grep -E 'crash cycles|killed|OK|FAILED|Passed|Failed'

install: build
	@DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" CNI_BIN_DIR="$(CNI_BIN_DIR)" \
	  bash scripts/install.sh $(BUILD_DIR)/bin

# A Debian package of the built binaries: $(BUILD_DIR)/nodegate_<version>_<arch>.deb (plugins in
# /opt/cni/bin, nodegate in /usr/bin; no Depends: the executables are static).
deb: build
	@bash scripts/deb.sh $(BUILD_DIR)/bin $(BUILD_DIR)

# The OCI images (podman, FROM scratch, nothing fetched): localhost/nodegate-cni:<version>, the
# plugins and their node installer, for deploy/daemonset.yaml; localhost/nodegate:<version>,
# the static nodegate alone, for deploy/webhook/deployment.yaml (scripts/webhook-image.sh).
image: build
	@bash scripts/image.sh $(BUILD_DIR)/bin
	@bash scripts/webhook-image.sh $(BUILD_DIR)/bin

# clang-format over the tree; format-check only reports (make test runs it as format_check).
format:
	@bash scripts/format.sh

format-check:
	@bash scripts/format.sh --check

# clang-tidy with the checks .clang-tidy lists and explains, over every source; reports nothing
# on a clean tree (configures build-tidy, builds nothing).
tidy: deps
	@JOBS=$(JOBS) bash scripts/tidy.sh build-tidy

clean:
	@rm -rf $(BUILD_DIR) $(ASAN_DIR) $(ARM64_DIR) build-tidy
