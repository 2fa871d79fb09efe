# SPDX-License-Identifier: Apache-2.0
# Thin wrapper for humans; the build itself is CMake (see README.md).
#   make deps   install the Debian packages the build, tests and demo need (root)
#   make build  configure + build into build/
#   make test   deps + build + every test (ctest)
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

.PHONY: all deps build test demo bench clean

all: build

deps:
	@./scripts/deps.sh $(DEB_PACKAGES)

build:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# Every test, then the unit and integration tests again under AddressSanitizer
# + UndefinedBehaviorSanitizer (a second build; valgrind runs are in the first).
test: deps build
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -j 1
	cmake -S . -B $(BUILD)-asan -DIOQOS_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ctest --output-on-failure --timeout 900 -j 1 -L 'unit|integration' -E valgrind

demo: deps build
	./scripts/demo.sh $(BUILD)

bench: deps build
	./scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-asan
