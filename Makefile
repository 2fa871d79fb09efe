# SPDX-License-Identifier: Apache-2.0
# Thin wrapper for humans; the build itself is CMake (see README.md).
#   make deps   install the Debian packages the build, tests and demo need (root)
#   make build  configure + build into build/
#   make test   deps + build + every test (ctest, in stages: scripts/test.sh)
#   make fuzz   deps + build + each libFuzzer target for FUZZ_SECONDS (600)
#   make demo   deps + build + the protection demo
#   make bench  deps + build + the long benchmarks (results in bench-results/)

BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

# Exactly the Debian 12 packages ioqos needs to build, test and demo.
DEB_PACKAGES := build-essential cmake pkg-config libgrpc-dev protobuf-c-compiler \
	libprotobuf-c-dev protobuf-compiler libcurl4-openssl-dev libjson-c-dev libyajl-dev libyaml-dev \
	libcriterion-dev libmicrohttpd-dev python3-grpcio python3-protobuf python3-yaml \
	qemu-system-x86 busybox-static fio kmod cpio e2fsprogs util-linux gnuplot-nox valgrind \
	clang libclang-rt-14-dev ca-certificates openssl \
	prometheus iptables conntrack libseccomp-dev

.PHONY: all deps build test fuzz demo bench clean

all: build

deps:
	@./scripts/deps.sh $(DEB_PACKAGES)

build:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# Every test, in stages (scripts/test.sh: host tests in parallel, the VM and cluster
# tests one at a time), then the unit and integration tests again under AddressSanitizer
# + UndefinedBehaviorSanitizer (a second build; valgrind runs are in the first). Prints a
# wall-time table per stage at the end.
test:
	DEB_PACKAGES="$(DEB_PACKAGES)" BUILD="$(BUILD)" JOBS="$(JOBS)" CMAKE_FLAGS="$(CMAKE_FLAGS)" \
		./scripts/test.sh

# The libFuzzer targets for FUZZ_SECONDS each (make test runs each for a few seconds).
FUZZ_SECONDS ?= 600
fuzz: deps build
	cd $(BUILD) && IOQOS_FUZZ_SECONDS=$(FUZZ_SECONDS) ctest --output-on-failure -L fuzz -j 1 \
		--timeout $$(($(FUZZ_SECONDS) + 300))

demo: deps build
	./scripts/demo.sh $(BUILD)

bench: deps build
	./scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-asan
