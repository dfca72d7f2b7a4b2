#!/bin/bash
# Build the libFuzzer target with clang (ASan + UBSan) and run it for a
# bounded time: make check's fuzz step.
#   run.sh SOURCE_DIR BUILD_DIR SECONDS
set -euo pipefail
src=$1 out=$2 secs=$3
cmake -S "$src" -B "$out" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMPNVME_FUZZ=ON >/dev/null
cmake --build "$out" --target fuzz_target_pdus -j"$(nproc)" >/dev/null
mkdir -p "$out/corpus"
python3 "$(dirname "$0")/seeds.py" "$out/corpus"
rm -f "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-*
rc=0
"$out/tests/fuzz/fuzz_target_pdus" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$out/" "$out/corpus" >"$out/fuzz.log" 2>&1 || rc=$?
grep -E 'stat::number_of_executed_units|stat::peak_rss|DONE' "$out/fuzz.log" || true
if ((rc != 0)) || ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* >/dev/null 2>&1; then
  grep -E -A30 'ERROR|SUMMARY|==[0-9]+==' "$out/fuzz.log" | head -80
  echo "FAIL: the fuzzer found a problem (exit $rc); reproducer in $out"
  exit 1
fi
echo PASS
