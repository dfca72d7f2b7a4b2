#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Priority pairs on the wire: nftables counters in the sending namespace see
# skb->priority and DSCP per path. Per-queue values (admin vs I/O), MPTCP
# subflows that joined later, the TOS/priority collision warning, and the
# target's own --sk-priority.
source "$(dirname "$0")/lib.sh"
lab_up --paths 4 --rate 1000mbit
start_target --listen 10.1.1.1,10.1.2.1,10.1.3.1,10.1.4.1 --subnqn "$NQN" --ns ram:256m --log-level warn --sk-priority 5

rules() { # NS: counters per path for priorities 1, 5, 6 and DSCP ef
  local ns=$1 pfx=$2 i
  {
    echo "table inet prio_test {"
    echo "  chain output { type filter hook output priority 10; policy accept;"
    for i in 1 2 3 4; do
      echo "    oifname \"$pfx$i\" meta priority 0:1 counter comment \"p1-$i\""
      echo "    oifname \"$pfx$i\" meta priority 0:5 counter comment \"p5-$i\""
      echo "    oifname \"$pfx$i\" meta priority 0:6 counter comment \"p6-$i\""
      echo "    oifname \"$pfx$i\" ip dscp ef counter comment \"ef-$i\""
    done
    echo "  }"
    echo "}"
  } | "$LAB" -n "$lab" exec "$ns" nft -f -
}
# Recreate the table: anonymous rule counters cannot be reset on every nft.
reset() {
  "$LAB" -n "$lab" exec "$1" nft delete table inet prio_test
  if [[ $1 == host ]]; then rules host h; else rules target t; fi
}
count() { # NS COMMENT: packets
  "$LAB" -n "$lab" exec "$1" nft -j list table inet prio_test |
    jq --arg c "$2" '[.nftables[] | select(.rule.comment? == $c) | .rule.expr[] | select(.counter?) | .counter.packets] | add // 0'
}
rules host h
rules target t
# Runs last 4 s: Linux MPTCP sometimes carries almost nothing for the first
# 0.5..2 s while subflows join (see docs/measurements.md, "MPTCP start-up stalls").
job=(--traddr=10.1.1.1 --rw=randwrite --bs=64k --iodepth=16 --size=64m --time_based=1 --runtime=4)

# 1. Per-queue SO_PRIORITY over MPTCP: I/O queue at 6 on every path (joined
#    subflows included), admin queue at 1.
reset host; reset target
run_fio prio "${job[@]}" --sk_priority=admin:1,io:6 || fail "fio exited $?"
for i in 1 2 3 4; do
  n=$(count host "p6-$i")
  echo "host path $i: $n packets at priority 6, $(count host "p1-$i") at priority 1"
  ((n > 100)) || fail "path $i: I/O queue packets without priority 6"
done
a=0; for i in 1 2 3 4; do a=$((a + $(count host "p1-$i"))); done
((a > 0)) && pass "admin queue packets at priority 1 ($a)" || fail "no admin queue packet at priority 1"
# The target's --sk-priority 5 on every path it sends on.
bad=0
for i in 1 2 3 4; do
  n=$(count target "p5-$i")
  ((n > 0)) || { fail "target path $i: no packet at priority 5"; bad=1; }
done
((bad)) || pass "target --sk-priority 5 on all paths"

# 2. Per-queue TOS over MPTCP: DSCP EF (TOS 0xb8) on every path.
reset host
run_fio tos "${job[@]}" --tos=io:0xb8 || fail "fio exited $?"
for i in 1 2 3 4; do
  n=$(count host "ef-$i")
  echo "host path $i: $n packets with DSCP ef"
  ((n > 100)) || fail "path $i: I/O packets without DSCP ef"
done

# 3. Both on one MPTCP socket: Linux drops the priority on subflows; the
#    engine must say so.
reset host
run_fio both "${job[@]}" --sk_priority=io:6 --tos=io:0xb8 || fail "fio exited $?"
grep -q "lose SO_PRIORITY when IP_TOS is set" "$work/both.log" && pass "TOS/priority collision reported" ||
  fail "no warning about the MPTCP TOS/priority collision"
p=0; e=0
for i in 1 2 3 4; do
  pi=$(count host "p6-$i") ei=$(count host "ef-$i")
  echo "MPTCP with both set, path $i: $pi packets at priority 6, $ei with DSCP ef"
  p=$((p + pi)) e=$((e + ei))
done
echo "MPTCP with both set: $p packets at priority 6, $e with DSCP ef (kernel behaviour the warning describes)"

# 4. Plain TCP keeps both (TOS set first, then priority).
reset host
run_fio tcp "${job[@]}" --transport=tcp --sk_priority=io:6 --tos=io:0xb8 || fail "fio exited $?"
p=$(count host p6-1); e=$(count host ef-1)
echo "TCP with both set: $p packets at priority 6, $e with DSCP ef on path 1"
((p > 100 && e > 100)) && pass "TCP carries priority and TOS together" || fail "TCP lost priority or TOS"
grep -q "lose SO_PRIORITY" "$work/tcp.log" && fail "collision warning on plain TCP"

# 5. The target reflects the host's TOS on every path (--reflect-tos). The
#    reads must be more than one 1 Gbit path carries, or MPTCP's scheduler
#    may rightly keep them on the first subflow.
stop_target || fail "target exit status"
old=$(in_target sysctl -n net.ipv4.tcp_reflect_tos)
start_target --listen 10.1.1.1,10.1.2.1,10.1.3.1,10.1.4.1 --subnqn "$NQN" --ns ram:256m --log-level warn --reflect-tos
reset target
run_fio reflect --traddr=10.1.1.1 --rw=randread --bs=128k --iodepth=64 --size=64m --time_based=1 --runtime=6 --tos=0xb8 ||
  fail "fio exited $?"
for i in 1 2 3 4; do
  n=$(count target "ef-$i")
  echo "target path $i: $n packets with DSCP ef (reflected)"
  ((n > 100)) || fail "target path $i did not reflect the host's TOS"
done
stop_target || fail "target exit status"
[[ $(in_target sysctl -n net.ipv4.tcp_reflect_tos) == "$old" ]] && pass "tcp_reflect_tos restored at exit" ||
  fail "tcp_reflect_tos left changed"
finish
