#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The bench's raw-transport control (mpnvme-floor stream against sink) ends
# only when its connections are gone, in both directions, over MPTCP on
# unequal paths: a control that left its sink still sending on the slow
# path slowed the engine run after it by a fifth, and every cell runs an
# engine run after a control.
source "$(dirname "$0")/lib.sh"
FLOOR="$MPNVME_BUILD/bench/mpnvme-floor"
port=5301
lab_up --paths 2 --rate 1000mbit,100mbit --cc cubic --endpoints all
in_target "$FLOOR" sink --listen "10.1.1.1:$port,10.1.2.1:$port" --transport mptcp >"$work/sink.log" 2>&1 &
sink_pid=$!
for _ in $(seq 50); do grep -q 'sink ready' "$work/sink.log" && break; sleep 0.1; done
grep -q 'sink ready' "$work/sink.log" || { cat "$work/sink.log"; fail "the sink did not start"; finish; }

# Connections of the sink's port still open in the target namespace.
sink_connections() { in_target ss -tnH state established "( sport = :$port )" | wc -l; }

for direction in read write; do
  out=$(in_host "$FLOOR" stream --connect "10.1.1.1:$port,10.1.1.1:$port" --direction "$direction" --transport mptcp \
    --ramp 0.5 --seconds 1.5) || { fail "$direction: stream failed: $out"; continue; }
  left=$(sink_connections)
  rate=$(jq -r '.mib_s * 10 | round / 10' <<<"$out")
  subflows=$(jq -r '.subflows | add' <<<"$out")
  if ((left == 0)); then
    pass "$direction: $rate MiB/s over $subflows subflows, no connection left when the control returned"
  else
    fail "$direction: $left subflow(s) of the sink still established after the control returned"
  fi
  [[ $(jq -r '.mptcp_in_effect' <<<"$out") == true ]] && awk -v r="$rate" 'BEGIN { exit !(r > 0) }' ||
    fail "$direction: nothing measured over MPTCP: $out"
done
kill "$sink_pid" 2>/dev/null
wait "$sink_pid" 2>/dev/null
finish
