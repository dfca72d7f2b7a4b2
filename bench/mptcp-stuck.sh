# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Sourced by the guest runners (guest-bench.sh, mptcp-rcvbuf-stall.guest.sh):
# how a kernel host's fio run is watched for a stalled queue, and what a
# stalled MPTCP connection looks like from both ends. $LAB is the caller's
# mpnvme-lab command.

# no_progress PID FROM SECONDS: wait while PID lives; true when, from FROM
# seconds on, the NVMe block devices (the multipath heads and every path's
# device: /sys/block/nvme*/stat, reads and writes completed) completed no
# I/O for SECONDS. A lossy TCP cell may drain its queue for minutes after
# its time, but it completes I/O; a stalled queue, its siblings drained,
# completes none.
no_progress() {
  local pid=$1 from=$2 quiet=$3 t=0 last="" now idle=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    t=$((t + 1))
    ((t < from)) && continue
    now=$(cat /sys/block/nvme*/stat 2>/dev/null | awk '{n += $1 + $5} END {print n + 0}')
    if [[ $now == "$last" ]]; then idle=$((idle + 1)); else idle=0 last=$now; fi
    ((idle >= quiet)) && return 0
  done
  return 1
}

# mptcp_stuck: one line per MPTCP connection of the lab's target side with
# data queued that its reader cannot have, beside the sender's view of the
# same connection (ss -Mmi in both namespaces): "PEER -> LOCAL: receiver
# Recv-Q N, rcvbuf N, rcv_nxt:X; sender write_seq:Y snd_una:Z
# unacknowledged N bytes". A receiver whose rcv_nxt stands at the
# sender's snd_una, with data queued beyond it, is waiting for a byte
# that does not come (bench/mptcp-rcvbuf-stall-repro).
mptcp_stuck() {
  $LAB exec target ss -MnmiH >/tmp/ss-target 2>&1
  $LAB exec host ss -MnmiH >/tmp/ss-host 2>&1
  local recvq laddr peer info rb rcv sender
  while read -r _ recvq _ laddr peer; do
    read -r info
    ((recvq > 0)) || continue
    rb=$(grep -o ',rb[0-9]*' <<<"$info" | tr -d ,)
    rcv=$(grep -o 'rcv_nxt:[0-9a-f]*' <<<"$info")
    sender=$(grep -A1 -F " $peer " /tmp/ss-host | tail -1)
    echo "$peer -> $laddr: receiver Recv-Q $recvq, ${rb/rb/rcvbuf }, $rcv; sender" \
      "$(grep -o 'write_seq:[0-9a-f]*' <<<"$sender") $(grep -o 'snd_una:[0-9a-f]*' <<<"$sender")" \
      "$(grep -o ',w[0-9]*' <<<"$sender" | sed 's/^,w/unacknowledged /') bytes"
  done </tmp/ss-target
}
