#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The ThreadSanitizer build of mpnvme-target for the tests that run it
# (make check's fixture tsan_build): tsan-build.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 out=$2
cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPNVME_TSAN=ON -DMPNVME_TESTS=OFF >/dev/null
cmake --build "$out" --target mpnvme-target -j"$(nproc)" >/dev/null
test -x "$out/mpnvme-target/mpnvme-target"
echo PASS
