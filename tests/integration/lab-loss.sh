#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# mpnvme-lab's loss is the loss a network makes, judged by the sender's own
# TCP (the kernel's counters, read by `counters --json` through nstat), not
# by the lab's rules: a packet dropped where a wire drops it is one the
# sender sent and must send again after loss recovery or a timeout. A drop
# that is a local send error (what an output-hook rule in the sender's
# namespace makes) is queued again by TCP without either, and fails here.
#   - per segment (the default unit), 1 % each direction in turn: the
#     sender's retransmitted segments are at least half the drops and at
#     most 4x them, and every drop is one wire segment (<= 1500 bytes);
#   - per packet: a drop takes a whole GSO packet (several segments);
#   - a 3 s blackhole (loss 100) mid-stream: the sender's TCP times out or
#     sends loss probes, what they send leaves its device (and vanishes),
#     and the stream carries on afterwards;
#   - a blackhole scheduled in its rule (loss 1 100 --at 3 --for 2): nothing
#     vanishes before its window, the sender's timers see it inside, and
#     after it the stream flows again with nothing dropped.
source "$(dirname "$0")/lib.sh"
FLOOR=$MPNVME_BUILD/bench/mpnvme-floor
PORT=5201

# sink: mpnvme-floor's sink on path 1 (TCP), ready when it says so.
sink() {
  in_target "$FLOOR" sink --listen 10.1.1.1:$PORT --transport tcp >"$work/sink.log" 2>&1 &
  for _ in $(seq 50); do grep -q 'sink ready' "$work/sink.log" && return 0; sleep 0.1; done
  cat "$work/sink.log"
  echo "FAIL: the sink did not start"; exit 1
}
# stream DIRECTION SECONDS: a TCP stream on path 1 (write: host to target).
stream() {
  in_host "$FLOOR" stream --connect 10.1.1.1:$PORT --transport tcp --direction "$1" --ramp 0 --seconds "$2" >"$work/stream.json" ||
    fail "mpnvme-floor stream $1 failed"
}
counters() { "$LAB" -n "$lab" counters --json; }
# delta BEFORE AFTER JQ: the change of one figure between two counters --json.
delta() { echo $(($(jq "$3" <<<"$2") - $(jq "$3" <<<"$1"))); }

# 1. Per segment, each direction. The stream's own direction only: the
# other direction carries the ACKs, whose drops the sender of the data does
# not retransmit.
lab_up --paths 1 --rate 300mbit --loss 1 --cc cubic
sink
[[ $(in_host ethtool -k h1 | awk '/^tcp-segmentation-offload:/ {print $2}') == off ]] &&
  pass "segment unit: TSO off on the lossy path" || fail "TSO still on with --loss-unit segment"
for dir in write read; do
  [[ $dir == write ]] && way=to_target || way=to_host
  before=$(counters)
  stream $dir 3
  after=$(counters)
  drops=$(delta "$before" "$after" ".directions.$way.dropped_packets")
  bytes=$(delta "$before" "$after" "[.paths[].$way.dropped_bytes] | add")
  retrans=$(delta "$before" "$after" ".directions.$way.sender_tcp.TcpRetransSegs")
  echo "$dir ($way): $(jq -r .mib_s "$work/stream.json") MiB/s, $drops drops ($bytes bytes), sender retransmitted $retrans segments"
  ((drops >= 50)) || fail "$dir: only $drops drops at 1 % (too few to judge)"
  ((2 * retrans >= drops && retrans <= 4 * drops)) && pass "$dir: retransmissions $retrans within drops/2..4x drops ($drops)" ||
    fail "$dir: the sender retransmitted $retrans segments for $drops drops: not a loss its TCP saw"
  ((drops > 0 && bytes <= 1500 * drops)) && pass "$dir: a drop is one segment ($((bytes / (drops > 0 ? drops : 1))) bytes each)" ||
    fail "$dir: $drops drops of $bytes bytes are larger than one segment"
done

# 2. Per packet: GSO packets are dropped whole.
lab_up --paths 1 --rate 300mbit --loss 1 --loss-unit packet --cc cubic
sink
before=$(counters)
stream write 3
after=$(counters)
drops=$(delta "$before" "$after" '.directions.to_target.dropped_packets')
bytes=$(delta "$before" "$after" '.paths[0].to_target.dropped_bytes')
retrans=$(delta "$before" "$after" '.directions.to_target.sender_tcp.TcpRetransSegs')
echo "packet unit: $drops drops of $bytes bytes, sender retransmitted $retrans segments"
((drops > 0 && bytes > 3000 * drops)) && pass "packet unit: a drop takes a GSO packet ($((bytes / drops)) bytes each)" ||
  fail "packet unit: $drops drops of $bytes bytes are not GSO packets"
((retrans > drops)) && pass "packet unit: more segments retransmitted ($retrans) than packets dropped" ||
  fail "packet unit: $retrans retransmissions for $drops dropped GSO packets"

# 3. A silent blackhole: the link stays up, packets vanish, the sender's
# retransmission timer (or its loss probes) fires; afterwards the stream
# goes on.
lab_up --paths 1 --rate 300mbit --cc cubic
sink
stream write 8 &
streamer=$!
until_within 10 "the stream flowing before the blackhole" flowing 1
"$LAB" -n "$lab" loss 1 100 || fail "loss 1 100 refused"
# From here on nothing crosses: what leaves the sender's device is what
# its timers send.
before=$(counters)
sleep 3 # the fault: 3 s of blackhole
mid=$(counters)
"$LAB" -n "$lab" loss 1 0 || fail "loss 1 0 refused"
wait $streamer
[[ $(jq -r '.paths[0].operstate' <<<"$mid") == UP ]] && pass "blackhole: the link stays up" || fail "blackhole took the link down"
drops=$(delta "$before" "$mid" '.directions.to_target.dropped_packets')
rto=$(delta "$before" "$mid" '.directions.to_target.sender_tcp.TcpExtTCPTimeouts')
tlp=$(delta "$before" "$mid" '.directions.to_target.sender_tcp.TcpExtTCPLossProbes')
sent=$(delta "$before" "$mid" '.paths[0].tx_packets')
echo "blackhole: $drops packets dropped; sender: $rto timeouts, $tlp loss probes, $sent packets out of its device in 3 s"
((drops > 0)) || fail "the blackhole dropped nothing"
((rto + tlp > 0)) && pass "blackhole: the sender's TCP timed out ($rto) or probed ($tlp)" ||
  fail "blackhole: no timeout and no loss probe at the sender: the packets did not vanish on the wire"
# What the timers sent left the sender's device and vanished beyond it: a
# drop on the sender's own way out would keep them from the device.
((sent >= rto + tlp && sent > 0)) && pass "blackhole: the sender's retransmissions left its device ($sent packets)" ||
  fail "blackhole: $sent packets left the sender's device for $rto timeouts and $tlp probes: dropped before the wire"
awk -v m="$(jq -r .mib_s "$work/stream.json")" 'BEGIN { exit !(m > 0) }' && pass "the stream went on after the blackhole" ||
  fail "the stream moved nothing"
# 4. A scheduled blackhole: the window is in the rule (wall clock), so it
# comes on time however late the lab's next command would run.
lab_up --paths 1 --rate 300mbit --cc cubic
sink
stream write 12 &
streamer=$!
until_within 10 "the stream flowing before the window" flowing 1
"$LAB" -n "$lab" loss 1 100 --at 3 --for 2 || fail "loss 1 100 --at 3 --for 2 refused"
# Before the window the path still carries the stream (a blackhole in
# force would stop it at once), and nothing has been dropped.
flowing 1 && flowed=yes || flowed=no
before=$(counters)
looked=$(date +%s)
read -r from until < <(jq -r '.paths[0].loss_window | "\(.from) \(.until)"' <<<"$before")
((until == from + 2 && looked < from)) || fail "window $from..$until, looked at $looked: not a 2 s window still ahead"
drops=$(jq '.directions.to_target.dropped_packets + .directions.to_host.dropped_packets' <<<"$before")
[[ $flowed == yes ]] && ((drops == 0)) && pass "scheduled blackhole: before its window the stream flows, nothing dropped" ||
  fail "before the window: flowing $flowed, $drops packets dropped"
past() { (($(date +%s) >= $1)); }
until_within 10 "the window's end" past "$until"
mid=$(counters)
drops=$(delta "$before" "$mid" '.directions.to_target.dropped_packets')
rto=$(delta "$before" "$mid" '.directions.to_target.sender_tcp.TcpExtTCPTimeouts')
tlp=$(delta "$before" "$mid" '.directions.to_target.sender_tcp.TcpExtTCPLossProbes')
((drops > 0 && rto + tlp > 0)) && pass "scheduled blackhole: $drops packets dropped in its window; the sender timed out $rto times, probed $tlp" ||
  fail "scheduled blackhole: $drops drops, $rto timeouts, $tlp loss probes in its window"
until_within 8 "the stream flowing after the window" flowing 1
a=$(counters)
flowing 1 && b=$(counters) && (($(delta "$a" "$b" '.directions.to_target.dropped_packets') == 0)) &&
  pass "scheduled blackhole: after its window the stream flows and nothing is dropped" ||
  fail "scheduled blackhole: drops went on after the window"
wait $streamer
finish
