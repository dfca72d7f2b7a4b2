# SPDX-License-Identifier: GPL-2.0-only
# mpnvme top level: deps, all, check, demo, bench, install, format.
#   make deps       Debian packages + fio source (apt-get source fio)
#   make            build fio-mpnvme.so and libmpnvme (warnings are errors)
#   make check      unit tests + kernel-lab integration tests (ASan/UBSan build)
#   make demo       run jobs/demo.fio and print the result
#   make bench      bench/run all: floors, the matrix, priority pairs, the qemu lab; report and plots
#   make fuzz       every fuzzer (or FUZZERS="control ...") for FUZZ_SECONDS (600) across the CPUs, or until FUZZ_RUNS executions;
#                   a table of executions, executions/s and coverage (corpus kept in $(BUILD_FUZZ))
#   make interop    blktests' NVMe tests against nvmet (both modes) and mpnvme-target (MPNVME_BLKTESTS=a
#                   blktests checkout); the table in $(INTEROP_OUT)/blktests.md
#   make install    PREFIX=/usr DESTDIR=...
#   make deb        Debian binary package in ../ from the checkout
#   make dist       Debian source package (with fio's source as a component) in ../
#   make package-check  build from the .dsc without network, lintian, autopkgtest
SHELL := /bin/bash
MAKEFLAGS += --no-print-directory
PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build
BUILD_CHECK ?= build-check
JOBS ?= $(shell nproc)
# ctest runs one test more than there are CPUs: many tests spend part of
# their time waiting (a guest's boot, a fault's window, ctrl_loss_tmo), and
# the faults that tests inject are scheduled in the lab's rules, so a busy
# CPU delays no fault (docs/measurements.md, "make check's lanes").
# CHECK_JOBS=N to change it. Tests that must not share a lane hold a
# RESOURCE_LOCK (tests/kernel/CMakeLists.txt).
CHECK_JOBS ?= $(shell echo $$(($(JOBS) + 1)))
FIO_SRC ?= $(shell cat .deps/fio-src 2>/dev/null)
CMAKE_ARGS = -DFIO_SRC="$(FIO_SRC)"

INTEROP_OUT ?= /tmp/mpnvme-interop
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_RUNS ?=

.PHONY: all deps build check demo bench fuzz interop install deb dist package-check format clean

all: build

deps:
	@./scripts/deps.sh

# A stamp-free configure: cmake reruns itself when its inputs change.
$(BUILD)/CMakeCache.txt: | deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) -DFIO_SRC="$$(cat .deps/fio-src)" >/dev/null

build: $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j$(JOBS)

$(BUILD_CHECK)/CMakeCache.txt: | deps
	@cmake -S . -B $(BUILD_CHECK) -DCMAKE_BUILD_TYPE=Debug -DMPNVME_SANITIZE=ON -DCMAKE_UNITY_BUILD=ON -DFIO_SRC="$$(cat .deps/fio-src)" >/dev/null

check: deps $(BUILD_CHECK)/CMakeCache.txt
	@cmake --build $(BUILD_CHECK) -j$(JOBS)
	@before=$$(mktemp) && ./scripts/checkout-writes.sh snapshot $$before && \
	  (cd $(BUILD_CHECK) && ctest --output-on-failure -j$(CHECK_JOBS) $(if $(CTEST_ARGS),$(CTEST_ARGS),)); rc=$$?; \
	  ./scripts/checkout-writes.sh verify $$before || rc=1; rm -f $$before; exit $$rc

demo: deps build
	@./scripts/demo.sh $(BUILD)

bench: deps build
	@./bench/run all $(BENCH_ARGS)

fuzz: deps
	@./tests/fuzz/volume.sh . $(BUILD_FUZZ) $(FUZZ_SECONDS) $(FUZZ_RUNS)

interop: deps build
	@./tests/kernel/blktests/run.sh $(BUILD) --out $(INTEROP_OUT) $(INTEROP_ARGS)

install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix $(PREFIX) >/dev/null

deb: deps
	@dpkg-query -W -f='$${Status}' debhelper 2>/dev/null | grep -q 'ok installed' || apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends debhelper >/dev/null
	FIO_SRC="$$(cat .deps/fio-src)" dpkg-buildpackage -us -uc -b

dist: deps
	@./scripts/dist.sh ..

package-check: deps
	@./scripts/package-check.sh

format:
	@git ls-files '*.cpp' '*.hpp' '*.c' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(BUILD_CHECK) $(BUILD_FUZZ)
