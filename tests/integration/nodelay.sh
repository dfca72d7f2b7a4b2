#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Small PDUs are not held back by Nagle: every queue socket the target
# accepts has TCP_NODELAY, over TCP and over MPTCP. Linux's Nagle
# (Minshall's variant) holds a small segment while an earlier small one is
# unacknowledged, and the host only ACKs at once when it has a command to
# send; a host that waits for all its completions before submitting again
# and writes beyond the in-capsule size (one small R2T per command) then
# waits for the delayed ACK, about 40 ms, on every write. The option is read
# back from the kernel (socket_options.py duplicates the target's sockets
# with pidfd_getfd) while that workload runs; its latency is the bench's
# business, not this test's.
source "$(dirname "$0")/lib.sh"
lab_up --paths 2
start_target --listen 10.1.1.1,10.1.2.1 --subnqn "$NQN" --ns ram:256m --log-level warn

# queue_sockets TRANSPORT: the target's connected sockets on port 4420, in
# $work/sockets, when there are two of TRANSPORT (admin and I/O queue).
queue_sockets() {
  python3 "$root/tests/integration/socket_options.py" "$target_pid" 4420 >"$work/sockets" 2>&1 || return 1
  (($(grep -c "^$1 " "$work/sockets") >= 2))
}

for transport in tcp mptcp; do
  run_fio "$transport" --traddr=10.1.1.1 --transport="$transport" --log_level=info --rw=randwrite --bs=64k --iodepth=4 \
    --iodepth_batch_submit=4 --iodepth_batch_complete_min=4 --size=64m --time_based=1 --runtime=4 >/dev/null &
  fio_pid=$!
  if until_within 20 "$transport: the target's admin and I/O queue sockets" queue_sockets "$transport"; then
    cat "$work/sockets"
    grep -q "^$transport .* nodelay=0" "$work/sockets" &&
      fail "$transport: the target accepted a queue socket without TCP_NODELAY" ||
      pass "$transport: every queue socket the target accepted has TCP_NODELAY"
  else
    cat "$work/sockets"
  fi
  wait "$fio_pid" || fail "$transport: fio exited $?"
  n=$(json "$transport" | jq '.jobs[0].write.total_ios')
  ((n > 0)) && pass "$transport: $n writes over R2T completed" || fail "$transport: no write completed"
done
grep -qE 'MPTCP used [2-9] subflow' "$work/mptcp.log" || fail "MPTCP did not use both paths"
stop_target || fail "target exited with $?"
finish
