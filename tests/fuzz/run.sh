#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Build a libFuzzer target with clang (ASan + UBSan) and run it for a
# bounded time from its seed corpus: make check's fuzz steps.
#   run.sh SOURCE_DIR BUILD_DIR SECONDS TARGET SEEDS_SCRIPT
set -euo pipefail
src=$1 out=$2 secs=$3 target=$4 seeds=$5
cmake -S "$src" -B "$out" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMPNVME_FUZZ=ON >/dev/null
cmake --build "$out" --target "$target" -j"$(nproc)" >/dev/null
work="$out/$target"
mkdir -p "$work/corpus"
python3 "$seeds" "$work/corpus"
rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*
rc=0
"$out/tests/fuzz/$target" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" >"$work/fuzz.log" 2>&1 || rc=$?
grep -E 'stat::number_of_executed_units|stat::peak_rss|DONE' "$work/fuzz.log" || true
if ((rc != 0)) || ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* >/dev/null 2>&1; then
  grep -E -A30 'ERROR|SUMMARY|==[0-9]+==' "$work/fuzz.log" | head -80
  echo "FAIL: the fuzzer found a problem (exit $rc); reproducer in $work"
  exit 1
fi
echo PASS
