# mpnvme top level: deps, all, check, demo, bench, install, format.
#   make deps       Debian packages + fio source (apt-get source fio)
#   make            build fio-mpnvme.so and libmpnvme (warnings are errors)
#   make check      unit tests + kernel-lab integration tests (ASan/UBSan build)
#   make demo       run jobs/demo.fio and print the result
#   make install    PREFIX=/usr DESTDIR=...
SHELL := /bin/bash
MAKEFLAGS += --no-print-directory
PREFIX ?= /usr/local
DESTDIR ?=
DEB_HOST_MULTIARCH ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
BUILD ?= build
BUILD_CHECK ?= build-check
JOBS ?= $(shell nproc)
FIO_SRC ?= $(shell cat .deps/fio-src 2>/dev/null)
CMAKE_ARGS = -DFIO_SRC="$(FIO_SRC)"

.PHONY: all deps build check unit kernel-tests demo install format clean

all: build

deps:
	@./scripts/deps.sh

# A stamp-free configure: cmake reruns itself when its inputs change.
$(BUILD)/CMakeCache.txt: | deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) -DFIO_SRC="$$(cat .deps/fio-src)" >/dev/null

build: $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j$(JOBS)

$(BUILD_CHECK)/CMakeCache.txt: | deps
	@cmake -S . -B $(BUILD_CHECK) -DCMAKE_BUILD_TYPE=Debug -DMPNVME_SANITIZE=ON -DFIO_SRC="$$(cat .deps/fio-src)" >/dev/null

check: deps $(BUILD_CHECK)/CMakeCache.txt
	@cmake --build $(BUILD_CHECK) -j$(JOBS)
	@cd $(BUILD_CHECK) && ctest --output-on-failure $(if $(CTEST_ARGS),$(CTEST_ARGS),)

demo: deps build
	@./scripts/demo.sh $(BUILD)

install: build
	install -D -m 0755 $(BUILD)/engine/fio-mpnvme.so $(DESTDIR)$(PREFIX)/lib/$(DEB_HOST_MULTIARCH)/mpnvme/fio-mpnvme.so
	install -D -m 0755 $(BUILD)/toolkit/target/mpnvme-target $(DESTDIR)$(PREFIX)/bin/mpnvme-target
	install -D -m 0755 toolkit/lab/mpnvme-lab $(DESTDIR)$(PREFIX)/bin/mpnvme-lab
	install -D -m 0755 $(BUILD)/toolkit/iopolicy/mpnvme-iopolicy $(DESTDIR)$(PREFIX)/bin/mpnvme-iopolicy
	install -D -m 0755 $(BUILD)/toolkit/nvmet/mpnvme-nvmet $(DESTDIR)$(PREFIX)/bin/mpnvme-nvmet
	install -d $(DESTDIR)$(PREFIX)/share/mpnvme/jobs $(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0644 jobs/*.fio $(DESTDIR)$(PREFIX)/share/mpnvme/jobs/
	install -m 0644 man/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/
	install -m 0644 man/*.8 $(DESTDIR)$(PREFIX)/share/man/man8/

format:
	@git ls-files '*.cpp' '*.hpp' '*.c' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(BUILD_CHECK)
