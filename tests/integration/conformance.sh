#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# mpnvme-target against a third host: tests/conformance/minihost.py, a
# Python NVMe/TCP host that takes only the mandatory NVMe-oF steps (no Set
# Features Number of Queues before the I/O queue Connect), with CC.CSS 000b
# and 110b, over TCP and MPTCP. The kernel lab runs the same host against
# the Linux target (kernel_conformance_host_vs_nvmet), the reference. Also:
# refusals and CFS causes are logged with host, queue, command and reason,
# once per cause per connection.
source "$(dirname "$0")/lib.sh"
HOST="$root/tests/conformance/minihost.py"
lab_up --paths 1
start_target --listen 10.1.1.1 --subnqn "$NQN" --ns ram:64m --log-level info
for case in "--css 0" "--css 6" "--css 6 --mptcp" "--css 0 --mptcp"; do
  if in_host python3 "$HOST" 10.1.1.1 4420 "$NQN" $case >"$work/minihost.out" 2>&1; then
    pass "minihost $case: $(grep -c '^ok:' "$work/minihost.out") steps"
  else
    cat "$work/minihost.out"; fail "minihost $case"
  fi
  # Every case, not only the last one, must reach the I/O queue.
  grep -q "I/O queue 1 connected without Set Features" "$work/minihost.out" ||
    fail "minihost $case: the I/O Connect step did not run"
done
# Each run made one MDTS refusal per direction on its own connection: four
# runs, four lines per direction (once per cause per connection).
for dir in Read Write; do
  n=$(grep -c "refused $dir .*from host nqn.2014-08.org.nvmexpress:uuid:.*Invalid Field in Command.*above MDTS" "$work/target.log")
  ((n == 4)) && pass "$dir above MDTS logged with host, queue and reason ($n times)" ||
    fail "$dir above MDTS logged $n times, 4 expected: $(grep -m3 'refused' "$work/target.log")"
done
in_host python3 "$HOST" 10.1.1.1 4420 "$NQN" --css 1 --expect-cfs >"$work/cfs.out" 2>&1 && pass "CC.CSS 001b: CSTS.CFS" ||
  { cat "$work/cfs.out"; fail "CC.CSS 001b was not refused with CFS"; }
grep -q "CSTS.CFS (fatal status) on enable: CC.CSS 001b" "$work/target.log" && pass "the CFS cause is logged" ||
  fail "no log line names the CFS cause: $(grep -m3 CFS "$work/target.log")"
stop_target || fail "target exit status"

# The discovery log lists an MPTCP port as TCP (trtype 3) unless asked for
# the NVMe-over-MPTCP series' trtype 4; a TCP port stays 3 either way.
discovery_trtypes() { # TARGET-ARGS...: "ADDR:PORT trtype N" per entry
  start_target --listen 10.1.1.1:4420 --subnqn "$NQN" --ns ram:16m --log-level warn "$@"
  in_host python3 "$HOST" 10.1.1.1 4420 nqn.2014-08.org.nvmexpress.discovery --discovery 2>&1 |
    sed -n 's/^entry: \([^ ]*\) [^ ]* trtype \([0-9]*\) .*/\1 trtype \2/p' | tr '\n' ';'
  stop_target || fail "target exit status ($*)"
}
got=$(discovery_trtypes)
[[ $got == "10.1.1.1:4420 trtype 3;" ]] && pass "discovery: an MPTCP port is trtype 3 (TCP) by default" || fail "discovery by default: '$got'"
got=$(discovery_trtypes --discovery-trtype-mptcp)
[[ $got == "10.1.1.1:4420 trtype 4;" ]] && pass "discovery --discovery-trtype-mptcp: the MPTCP port is trtype 4" ||
  fail "discovery with --discovery-trtype-mptcp: '$got'"
got=$(discovery_trtypes --discovery-trtype-mptcp --transport tcp)
[[ $got == "10.1.1.1:4420 trtype 3;" ]] && pass "discovery --discovery-trtype-mptcp: a TCP port stays trtype 3" ||
  fail "discovery of a TCP port with --discovery-trtype-mptcp: '$got'"
finish
