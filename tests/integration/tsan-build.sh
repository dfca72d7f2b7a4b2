#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The ThreadSanitizer builds of mpnvme-target and the engine for the tests
# that run them (make check's fixture tsan_build):
#   tsan-build.sh SOURCE_DIR BUILD_DIR FIO_SRC
set -euo pipefail
src=$1 out=$2 fio_src=$3
cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPNVME_TSAN=ON -DMPNVME_TESTS=OFF -DFIO_SRC="$fio_src" >/dev/null
cmake --build "$out" --target mpnvme-target fio-mpnvme -j"$(nproc)" >/dev/null
test -x "$out/mpnvme-target/mpnvme-target"
test -f "$out/engine/fio-mpnvme.so"
echo PASS
