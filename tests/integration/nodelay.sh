#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Small PDUs are not held back by Nagle. Linux's Nagle (Minshall's variant)
# holds a small segment while an earlier small one is unacknowledged, and
# the host only ACKs at once when it has a command to send. A host that
# waits for all its completions before submitting again (fio
# iodepth_batch_complete_min=iodepth) and writes beyond the in-capsule size
# (one small R2T per command) makes every stall show: without TCP_NODELAY
# on the target's accepted sockets, 1000 of 1000 such writes took ~40 ms
# over TCP and 532 of 1000 over two MPTCP subflows.
# A functional check with a 30 ms bound on unshaped veth, not a benchmark.
source "$(dirname "$0")/lib.sh"
lab_up --paths 2
start_target --listen 10.1.1.1,10.1.2.1 --subnqn "$NQN" --ns ram:256m --log-level warn

for transport in tcp mptcp; do
  run_fio "$transport" --traddr=10.1.1.1 --transport="$transport" --log_level=info --rw=randwrite --bs=64k --iodepth=4 \
    --iodepth_batch_submit=4 --iodepth_batch_complete_min=4 --size=64m --number_ios=400 \
    --write_lat_log="$work/$transport" --log_avg_msec=0 >/dev/null || fail "$transport: fio exited $?"
  n=$(json "$transport" | jq '.jobs[0].write.total_ios')
  slow=$(cat "$work/$transport"_clat.*.log | awk -F, '$2 > 30000000 { n++ } END { print n + 0 }')
  echo "$transport: $slow of $n writes over 30 ms (max $(json "$transport" | jq '.jobs[0].write.clat_ns.max / 1000000 | floor') ms)"
  ((n > 0 && slow * 50 <= n)) && pass "$transport: no Nagle stalls" || fail "$transport: $slow of $n writes stalled over 30 ms"
done
grep -qE 'MPTCP used [2-9] subflow' "$work/mptcp.log" || fail "MPTCP did not use both paths"
stop_target || fail "target exited with $?"
finish
