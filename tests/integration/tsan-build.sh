#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The ThreadSanitizer build of mpnvme-target for the tests that run it
# (make check's fixture tsan_build): tsan-build.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 out=$2
# -O1 with line tables: a third less compile time than -O2 -g, and the
# races are reported with their lines all the same.
cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DMPNVME_TSAN=ON -DMPNVME_TESTS=OFF >/dev/null
cmake --build "$out" --target mpnvme-target -j"$(nproc)" >/dev/null
test -x "$out/mpnvme-target/mpnvme-target"
echo PASS
