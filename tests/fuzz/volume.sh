#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# make fuzz: every fuzzer for a given time (or a given number of
# executions), each from its seed corpus and then from the corpus it grew
# in earlier runs (kept in the build directory, never in the checkout),
# with libFuzzer's -jobs across the CPUs. One table row per fuzzer:
# executions, executions per second, coverage (cov: edges, ft: features),
# corpus size and findings. A finding stops nothing: every fuzzer runs,
# the command fails at the end, and the reproducer stays in the fuzzer's
# directory (keep it as a seed once fixed).
#   volume.sh SOURCE_DIR BUILD_DIR SECONDS [RUNS]
# RUNS (executions per fuzzer) ends a fuzzer early once reached.
# FUZZERS="control reservations" (names without fuzz_) runs only those.
set -uo pipefail
(($# >= 3)) || { echo "usage: volume.sh SOURCE_DIR BUILD_DIR SECONDS [RUNS]" >&2; exit 2; }
src=$1 out=$2 secs=$3 runs=${4:-}
[[ $secs =~ ^[1-9][0-9]*$ ]] || { echo "volume.sh: SECONDS '$secs': a whole number of seconds" >&2; exit 2; }
[[ -z $runs || $runs =~ ^[1-9][0-9]*$ ]] || { echo "volume.sh: RUNS '$runs': a whole number of executions" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
fuzzers=(target_pdus:seeds.py host_queue:seeds_host.py dhchap:seeds_dhchap.py tls_server:seeds_tls.py
  control:seeds_control.py reservations:seeds_reservations.py)
# The longest input each fuzzer is given. A PDU stream, an authentication
# exchange or a TLS flight is bounded by its format (64 KiB covers the
# largest). The two that read a sequence of commands are not: libFuzzer
# lets their inputs grow for as long as it runs, and each costs time
# linearly (fuzz_control reached 12 KB of lines and 530 executions/s per
# job, fuzz_reservations 22 KB and 1000/s). 4 KiB is about 60 control
# lines, beyond the 4 subsystems and 8 namespaces its registry holds;
# 1 KiB is 256 reservation commands among 4 hosts and 4 keys.
declare -A max_len=([control]=4096 [reservations]=1024)
cmake -S "$src" -B "$out" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMPNVME_FUZZ=ON >/dev/null || exit 1
targets=("${fuzzers[@]%%:*}")
cmake --build "$out" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null || exit 1
out=$(cd "$out" && pwd) # the fuzzers run from their log directories
jobs=$(nproc)
found=0
printf '| fuzzer | max input | seconds | executions | executions/s | cov | ft | corpus | findings |\n|---|---|---|---|---|---|---|---|---|\n'
for f in "${fuzzers[@]}"; do
  [[ -z ${FUZZERS:-} || " $FUZZERS " == *" ${f%%:*} "* ]] || continue
  name=fuzz_${f%%:*} seeds=$here/${f#*:} limit=${max_len[${f%%:*}]:-65536}
  work=$out/volume/$name
  mkdir -p "$work/corpus" "$work/seeds" "$work/logs"
  python3 "$seeds" "$work/seeds" >/dev/null
  rm -f "$work"/logs/*
  start=$SECONDS
  # -jobs: one process per CPU, each for SECONDS (or RUNS / jobs
  # executions), merging into one corpus; the seeds are read, not written.
  (cd "$work/logs" && "$out/tests/fuzz/$name" -jobs="$jobs" -workers="$jobs" -max_total_time="$secs" \
    ${runs:+-runs=$(((runs + jobs - 1) / jobs))} -max_len="$limit" -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/" "$work/corpus" "$work/seeds" >/dev/null 2>&1)
  took=$((SECONDS - start))
  execs=$(cat "$work"/logs/fuzz-*.log 2>/dev/null | awk '/stat::number_of_executed_units/ { s += $2 } END { print s + 0 }')
  # A fuzzer that could not start (or printed no statistics) is a failure
  # of this run, not a row of zeros.
  ((execs > 0)) || { echo "FAIL: $name ran no executions: $(tail -3 "$work"/logs/fuzz-0.log 2>/dev/null)" >&2; found=1; }
  cov=$(cat "$work"/logs/fuzz-*.log 2>/dev/null | grep -o 'cov: [0-9]*' | awk '{ if ($2 > m) m = $2 } END { print m + 0 }')
  ft=$(cat "$work"/logs/fuzz-*.log 2>/dev/null | grep -o 'ft: [0-9]*' | awk '{ if ($2 > m) m = $2 } END { print m + 0 }')
  findings=$(find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  ((findings)) && found=1
  printf '| %s | %d | %d | %d | %d | %d | %d | %d | %s |\n' "$name" "$limit" "$took" "$execs" "$((execs / (took > 0 ? took : 1)))" \
    "$cov" "$ft" "$(find "$work/corpus" -type f | wc -l)" "$( ((findings)) && echo "**$findings** in $work" || echo 0)"
done
((found)) && { echo "FAIL: a fuzzer found a problem; the reproducers are beside its corpus"; exit 1; }
exit 0
