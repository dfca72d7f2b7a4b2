#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The target's ceilings (issue 44): each limit reached against a target
# started with small ones, and refused as the man page's LIMITS section
# says: Controller Busy with DNR on the wire (a storm at the limit too),
# `subsystem add` refused over the subsystems, the namespaces and the RAM
# allowed, with nothing changed and nothing mapped, each with its log line,
# while a host connected before it all keeps reading what it writes
# (ceilings.py); the highest NSID and Identify's NN; and each limit at
# start-up refused with exit status 1, in the same words. The connection
# limits' refusals are admission.sh's (integration_admission_gate); here
# the keeper is served at them too.
source "$(dirname "$0")/lib.sh"
lab_up --paths 1
CAPS=(--max-controllers 3 --max-subsystems 2 --max-namespaces 2 --max-ram 64m)
# Two event loops: the Connects of a storm at the controller limit are
# counted from both (integration_tsan_ceilings runs this under TSan).
start_target --listen 10.1.1.1 --transport tcp --threads 2 --subnqn "$NQN" --ns ram:16m --control "$work/control" \
  --log-level info "${CAPS[@]}"
grep -q "holding at most 2 subsystems, 2 namespaces and 3 controllers each, RAM namespaces of 67108864 bytes (64.0 MiB) \
(16777216 bytes (16.0 MiB) taken)" "$work/target.log" && pass "the limits are logged at start" ||
  fail "no limits line at start: $(grep -m1 'holding at most' "$work/target.log")"
in_host python3 "$root/tests/integration/ceilings.py" limits 10.1.1.1 "$NQN" "$work/control" "$target_pid" \
  "$work/target.log" || fail "ceilings.py limits"
stop_target || fail "target exit status"

# The connection limits: their refusals are admission.sh's; here, the
# host connected before them is served at each.
for i in 11 12 13; do in_host ip addr add "10.1.1.$i/24" dev h1; done
start_target --listen 10.1.1.1 --transport tcp --subnqn "$NQN" --ns ram:16m --max-connections-per-address 4 \
  --max-connections 8
in_host python3 "$root/tests/integration/ceilings.py" connections 10.1.1.1 "$NQN" 10.1.1.11 10.1.1.12 10.1.1.13 4 8 \
  "$work/target.log" || fail "ceilings.py connections"
stop_target || fail "target exit status"

# At start-up: the same rules, the same words, exit status 1.
refused_at_start() { # [--exit N] WANT ARGS...: bounded, since a target that takes the configuration serves on
  local status=1 want rc
  [[ $1 == --exit ]] && status=$2 && shift 2
  want=$1
  shift
  in_target timeout -s INT 10 "$TARGET" --transport tcp "$@" >"$work/start.log" 2>&1
  rc=$?
  ((rc == status)) && grep -qF -- "$want" "$work/start.log" && pass "refused at start (exit $status): $want" ||
    fail "start with $*: exit $rc, $(tail -2 "$work/start.log")"
}
# A job file's RAM namespace counts as the command line's does.
printf '[j]\nioengine=external:/nonexistent\nsubnqn=nqn.2026-12.io.mpnvme:job\ntraddr=10.1.1.1\nsize=48m\n' >"$work/job.fio"
refused_at_start "$NQN: RAM namespaces of 33554432 bytes (32.0 MiB): --max-ram 67108864 bytes (64.0 MiB) leaves 16777216 \
bytes (16.0 MiB) (50331648 bytes (48.0 MiB) held by RAM namespaces)" --max-ram 64m --job "$work/job.fio" \
  --subnqn "$NQN" --ns ram:32m
refused_at_start "$NQN: 3 namespaces, more than the 2 --max-namespaces allows in a subsystem" --listen 10.1.1.1 \
  --max-namespaces 2 --subnqn "$NQN" --ns null:1m --ns null:1m --ns null:1m
cat >"$work/three.json" <<JSON
{"subsystems": [{"nqn": "nqn.2026-12.io.mpnvme:a"}, {"nqn": "nqn.2026-12.io.mpnvme:b"}, {"nqn": "nqn.2026-12.io.mpnvme:c"}],
 "ports": [{"portid": 1, "addr": {"trtype": "tcp", "traddr": "10.1.1.1"}}]}
JSON
refused_at_start "the target holds 2 subsystem(s), the most --max-subsystems allows" --max-subsystems 2 --config "$work/three.json"
cat >"$work/ids.json" <<JSON
{"subsystems": [{"nqn": "nqn.2026-12.io.mpnvme:a", "attr": {"cntlid_min": "6", "cntlid_max": "5"}}],
 "ports": [{"portid": 1, "addr": {"trtype": "tcp", "traddr": "10.1.1.1"}}]}
JSON
refused_at_start "nqn.2026-12.io.mpnvme:a: cntlid_min 6 and cntlid_max 5: controller IDs lie in 1..65519" --config "$work/ids.json"
# A command line error (exit 2), not the default taken without a word.
refused_at_start --exit 2 "--max-ram: a size is required" --listen 10.1.1.1 --subnqn "$NQN" --ns null:1m --max-ram ''
refused_at_start "nsid 4294967295 outside 1..4294967294" --listen 10.1.1.1 --subnqn "$NQN" --ns null:1m,nsid=4294967294 \
  --ns null:1m
finish
