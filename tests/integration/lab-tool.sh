#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# mpnvme-lab on its own: topology, options, status, fault injection,
# refusals, and that down leaves nothing behind.
source "$(dirname "$0")/lib.sh"
links_before=$(ip -o link | wc -l)
lab_up --paths 3 --rate 100mbit --loss 1 --cc cubic --backup 3
H=$lab-host T=$lab-target
# The lab drops 1 % of every path's packets (--loss 1) on arrival: a path
# counts as reachable when one of five pings gets through (all five lost:
# about 1e-8 with the reply's loss).
reaches() { for _ in 1 2 3 4 5; do in_host busybox ping -c 1 -W 2 "$1" >/dev/null 2>&1 && return 0; done; return 1; }
[[ $(in_host ip -o -4 addr show | grep -c '10\.1\.[123]\.2/24') == 3 ]] && pass "3 paths with host addresses" || fail "host addresses"
[[ $(in_target ip -o -4 addr show | grep -c '10\.1\.[123]\.1/24') == 3 ]] && pass "target addresses" || fail "target addresses"
grep -q 'tbf.*rate 100Mbit' <<<"$(tc -n "$H" qdisc show dev h2)" && pass "rate shaping" || fail "no tbf on h2: $(tc -n "$H" qdisc show dev h2)"
[[ $(in_target sysctl -n net.ipv4.tcp_congestion_control) == cubic ]] && pass "cc cubic" || fail "cc"
grep -q '10.1.3.1 .*signal backup' <<<"$(ip -n "$T" mptcp endpoint show)" && pass "backup endpoint" || fail "endpoints: $(ip -n "$T" mptcp endpoint show)"
[[ $(ip -n "$H" mptcp endpoint show | grep -c subflow) == 2 ]] && pass "host subflow endpoints" || fail "host endpoints"
# On arrival in each namespace (prerouting), never on the way out.
grep -q 'iifname "h1" numgen random mod 100000 < 1000 counter name "drop_h1" drop' <<<"$(in_host nft list chain inet mpnvme_lab prerouting)" &&
  grep -q 'iifname "t1" numgen random mod 100000 < 1000 counter name "drop_t1" drop' <<<"$(in_target nft list chain inet mpnvme_lab prerouting)" &&
  pass "1% loss rules on arrival at both ends" || fail "loss rules: $(in_host nft list table inet mpnvme_lab)"
grep -q drop <<<"$(in_host nft list chain inet mpnvme_lab output)" && fail "a drop rule in the output hook (a local send error, not loss)"
"$LAB" -n "$lab" status --json | jq -e '.counters.paths | length == 3' >/dev/null && pass "status --json" || fail "status --json"
"$LAB" -n "$lab" counters --json | jq -e '.loss_unit == "segment" and .loss_via == "nft" and .paths[0].loss_pct == 1
  and (.directions.to_target.sender_tcp | has("TcpRetransSegs") and has("TcpExtTCPTimeouts"))' >/dev/null &&
  pass "counters --json: loss model, per-path loss and the senders' TCP counters" || fail "counters --json: $("$LAB" -n "$lab" counters --json)"
reaches 10.1.2.1 && pass "path 2 reachable" || fail "ping path 2"
"$LAB" -n "$lab" link 2 down
[[ $("$LAB" -n "$lab" counters --json | jq -r '.paths[1].operstate') == DOWN ]] && pass "link 2 down" || fail "link 2 state"
in_host busybox ping -c 1 -W 1 10.1.2.1 >/dev/null 2>&1 && fail "path 2 still carries traffic"
"$LAB" -n "$lab" link 2 up
reaches 10.1.2.1 && pass "link 2 back up" || fail "path 2 after up"
"$LAB" -n "$lab" loss 1 0
grep -q 'iifname "h1".*drop' <<<"$(in_host nft list chain inet mpnvme_lab prerouting)" && fail "loss on path 1 not removed" || pass "loss 1 0 removes the rule"
[[ $(in_host ethtool -k h1 | awk '/^tcp-segmentation-offload:/ {print $2}') == on ]] && pass "loss 1 0 turns the offloads back on" ||
  fail "TSO still off on a lossless path"
"$LAB" -n "$lab" loss 2 100 || fail "loss 2 100 refused"
in_host busybox ping -c 1 -W 1 10.1.2.1 >/dev/null 2>&1 && fail "path 2 not blackholed" || pass "loss 2 100 blackholes path 2"
"$LAB" -n "$lab" loss 2 0
reaches 10.1.2.1 && pass "path 2 back after the blackhole" || fail "path 2 after loss 0"
"$LAB" -n "$lab" rate 3 20mbit || fail "rate 3 20mbit refused"
grep -q 'tbf.*rate 20Mbit' <<<"$(tc -n "$T" qdisc show dev t3)" && pass "rate 3 20mbit on both ends" || fail "rate: $(tc -n "$T" qdisc show dev t3)"
refuse() { # TEXT ARGS...
  local want=$1; shift
  out=$("$LAB" -n "$lab" "$@" 2>&1) && { fail "accepted: $*"; return; }
  grep -q -- "$want" <<<"$out" && pass "refused: $out" || fail "'$*' lacks '$want': $out"
}
refuse "path 7 does not exist" link 7 down
refuse "down or up, not 'sideways'" link 1 sideways
refuse "loss must be a percentage" loss 1 lots
refuse "--loss-unit must be segment or packet, not 'byte'" up --paths 1 --loss 1 --loss-unit byte
refuse "--loss-via must be nft or netem, not 'magic'" up --paths 1 --loss 1 --loss-via magic
refuse "--paths must be 1..8" up --paths 9
refuse "--rate: 2 rates for 3 paths" up --paths 3 --rate 10mbit,20mbit
"$LAB" -n "$lab" down >/dev/null
lab_up --paths 2 --rate 300mbit,30mbit
grep -q 'rate 300Mbit' <<<"$(tc -n "$H" qdisc show dev h1)" && grep -q 'rate 30Mbit' <<<"$(tc -n "$T" qdisc show dev t2)" &&
  pass "one rate per path" || fail "per-path rates: $(tc -n "$H" qdisc show)"
"$LAB" -n "$lab" down >/dev/null
# --classes: HTB with the first-served class, and the packets of a socket
# with SO_PRIORITY 6 land in it while unmarked ones do not.
lab_up --paths 1 --rate 100mbit --classes priority:6
grep -q 'class htb 1:10 parent 1:1 prio 0 rate 90Mbit ceil 100Mbit' <<<"$(tc -n "$H" class show dev h1)" &&
  grep -q 'class htb 1:20 parent 1:1 prio 1 rate 10Mbit ceil 100Mbit' <<<"$(tc -n "$T" class show dev t1)" &&
  pass "HTB classes on both ends" || fail "classes: $(tc -n "$H" class show dev h1)"
class_bytes() { tc -n "$H" -s class show dev h1 classid "$1" | awk '/Sent/ {print $2; exit}'; }
send_udp() { # PRIORITY BYTES: one datagram to the target's side of path 1
  in_host python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, int(sys.argv[1]))
s.sendto(b"x" * int(sys.argv[2]), ("10.1.1.1", 9))' "$@"
}
before10=$(class_bytes 1:10) before20=$(class_bytes 1:20)
send_udp 6 1000 # (1:20 may see the ARP exchange it starts: well under 1000 bytes)
(($(class_bytes 1:10) > before10 + 1000 && $(class_bytes 1:20) < before20 + 1000)) && pass "priority 6 goes to 1:10" ||
  fail "priority 6: 1:10 $before10 -> $(class_bytes 1:10), 1:20 $before20 -> $(class_bytes 1:20)"
before20=$(class_bytes 1:20)
send_udp 0 1000
(($(class_bytes 1:20) > before20 + 1000)) && pass "unmarked goes to 1:20" || fail "unmarked: 1:20 $before20 -> $(class_bytes 1:20)"
"$LAB" -n "$lab" rate 1 50mbit || fail "rate with classes refused"
grep -q 'class htb 1:10 parent 1:1 prio 0 rate 45Mbit ceil 50Mbit' <<<"$(tc -n "$H" class show dev h1)" &&
  pass "rate keeps the classes" || fail "rate with classes: $(tc -n "$H" class show dev h1)"
refuse "--classes needs --rate" up --paths 1 --classes dscp:ef
refuse "--classes: priority:N or dscp:VALUE, not 'tos:3'" up --paths 1 --rate 10mbit --classes tos:3
"$LAB" -n "$lab" down >/dev/null
if modprobe -n sch_netem 2>/dev/null && tc qdisc add dev lo root netem delay 1ms 2>/dev/null; then
  tc qdisc del dev lo root
  echo "netem available: delay accepted here"
else
  refuse "--delay needs the netem qdisc" up --paths 1 --delay 5
  refuse "--loss-via netem needs the netem qdisc" up --paths 1 --loss 1 --loss-via netem
  grep -q "^$lab-" <<<"$(ip netns list)" && fail "failed up left namespaces behind" || pass "failed up left nothing"
fi
"$LAB" -n "$lab" down >/dev/null && "$LAB" -n "$lab" down >/dev/null && pass "down twice is fine" || fail "down twice failed"
grep -q "^$lab-" <<<"$(ip netns list)" && fail "namespaces left" || pass "no namespace left"
[[ -e /run/mpnvme-lab/$lab.state ]] && fail "down left the lab's state file" || pass "no state file left"
[[ $(ip -o link | wc -l) == "$links_before" ]] && pass "no interface left in the root namespace" || fail "interfaces left"
finish
