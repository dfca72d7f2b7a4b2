#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Engine <-> mpnvme-target over MPTCP on 1 and 4 paths: data verifies, the
# connection really uses every path (per-path byte counters roughly
# balanced), and plain TCP stays on one path.
#   mptcp-paths.sh 1|4|tcp
source "$(dirname "$0")/lib.sh"
mode=$1
paths=$([[ $mode == 1 ]] && echo 1 || echo 4)
lab_up --paths "$paths" --rate 1000mbit
traddr=$(seq -s, -f '10.1.%g.1' 1 "$paths")
# Four paths also run the target with two event loops (connections handed
# from the accepting loop to the other one).
threads=$([[ $mode == 4 ]] && echo 2 || echo 1)
start_target --listen "$traddr" --subnqn "$NQN" --ns ram:1g --log-level warn --threads "$threads"
transport=$([[ $mode == tcp ]] && echo tcp || echo mptcp)

run_fio verify --traddr=10.1.1.1 --transport="$transport" --log_level=info --rw=randrw --bsrange=512-512k \
  --iodepth=32 --size=128m --verify=crc32c --verify_fatal=1 --do_verify=1 ||
  fail "verify job exited $?"
[[ $(json verify | jq '[.jobs[].read.io_bytes] | add') -gt 0 ]] || fail "verify read nothing"
want=$([[ $transport == mptcp ]] && echo MPTCP || echo TCP)
grep -q "transport in effect: $want" "$work/verify.log" && pass "transport in effect: $want" || fail "engine did not report $want"

before=$(path_bytes)
run_fio spread --traddr=10.1.1.1 --transport="$transport" --rw=randread --bs=128k --iodepth=64 --size=512m \
  --time_based=1 --runtime=4 || fail "throughput job exited $?"
after=$(path_bytes)
bw=$(json spread | jq '.jobs[0].read.bw_bytes / 1048576 | floor')
echo "read bandwidth: $bw MiB/s over $paths path(s) ($transport)"
declare -A b0
while read -r p b; do b0[$p]=$b; done <<<"$before"
total=0
declare -A d
while read -r p b; do d[$p]=$((b - b0[$p])); total=$((total + d[$p])); done <<<"$after"
for p in $(seq 1 "$paths"); do echo "path $p: ${d[$p]} bytes ($((100 * d[$p] / (total > 0 ? total : 1)))%)"; done
if [[ $mode == 4 ]]; then
  # Roughly balanced: every path carries at least half of its even share.
  bad=0
  for p in 1 2 3 4; do
    ((d[$p] * 4 * 2 >= total)) || { fail "path $p carried ${d[$p]} of $total bytes"; bad=1; }
  done
  ((total > 0 && !bad)) && pass "all 4 paths carry traffic" || ((bad)) || fail "no bytes crossed the paths"
elif [[ $mode == tcp ]]; then
  ((total > 0 && d[1] * 100 >= total * 95)) && pass "TCP stays on path 1" ||
    fail "TCP spread over paths or moved nothing (path 1: ${d[1]} of $total)"
fi
if [[ $mode == 4 ]]; then
  # mptcp_join_wait: each I/O queue waits for its subflows to settle before
  # I/O (the start-up stall mitigation); the log says how many it got.
  run_fio joinwait --traddr=10.1.1.1 --transport=mptcp --mptcp_join_wait=1000 --log_level=info --rw=randread --bs=128k \
    --iodepth=16 --size=64m || fail "mptcp_join_wait job exited $?"
  n=$(grep -c 'MPTCP subflow(s) after .* ms (mptcp_join_wait=1000)' "$work/joinwait.log" || true)
  low=$(grep -o '[0-9]* MPTCP subflow(s) after' "$work/joinwait.log" | awk '$1 < 2' | wc -l)
  ((n >= 1 && low == 0)) && pass "mptcp_join_wait: $n I/O queue(s) started with their joins up" ||
    fail "mptcp_join_wait: $n wait line(s), $low with fewer than 2 subflows: $(grep -m3 'subflow' "$work/joinwait.log")"
  grep -q 'mptcp_join_wait=' "$work/verify.log" && fail "the engine waited for joins without mptcp_join_wait"
  # The one-subflow warning: silent while the joins come up, and naming the
  # setting that stops them when they cannot.
  grep -h 'MPTCP used one subflow' "$work/verify.log" "$work/spread.log" && fail "one-subflow warning with joins up"
  one_subflow() { # NAME NEEDLE...: a short job whose log must warn with each NEEDLE
    local name=$1 needle
    shift
    run_fio "$name" --traddr=10.1.1.1 --transport=mptcp --rw=randread --bs=128k --iodepth=8 --size=16m ||
      fail "$name job exited $?"
    for needle in "$@"; do
      grep -q "MPTCP used one subflow per connection.*$needle" "$work/$name.log" && pass "$name: warns '$needle'" ||
        fail "$name: no one-subflow warning naming '$needle': $(grep -m2 -i 'subflow' "$work/$name.log")"
    done
  }
  "$LAB" -n "$lab" exec host ip mptcp limits set subflows 0 add_addr_accepted 0
  one_subflow nolimit 'ip mptcp limits set subflows 8'
  "$LAB" -n "$lab" exec host ip mptcp limits set subflows 8 add_addr_accepted 0
  "$LAB" -n "$lab" exec host ip mptcp endpoint flush
  one_subflow noendpoint 'endpoint add ADDR dev IFACE signal' 'limits set add_addr_accepted 8'
fi
stop_target || fail "target exited with $?"
grep -q "port 1 mptcp 10.1.1.1:4420: connections 0" "$work/target.log" || fail "target counters missing at exit"
finish
