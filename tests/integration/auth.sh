#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# DH-HMAC-CHAP between the engine and mpnvme-target (the kernel lab runs
# the engine against nvmet and the kernel host against the target): a host
# with a key must authenticate on every queue, unidirectional and
# bidirectional with an FFDHE group, over TCP and over MPTCP on 2 paths,
# verified I/O, and again after a reconnect; a wrong key is refused
# with the controller's reason and logged once by the target, which then
# refuses that address for a while; a host allowed without a key is not
# asked, a host neither keyed nor listed is refused (keys name the hosts
# that get in; --allow-any-host opens the door, logged); under multipath a path whose controller refuses the key is down
# with that reason while the other carries the job; no secret appears in
# any log or output.
source "$(dirname "$0")/lib.sh"
lab_up --paths 2
h1=nqn.2026-12.io.mpnvme:auth-uni h2=nqn.2026-12.io.mpnvme:auth-bidi h3=nqn.2026-12.io.mpnvme:no-key
h4=nqn.2026-12.io.mpnvme:stranger
k1=$(nvme gen-dhchap-key --hmac=1 --nqn="$h1") k2=$(nvme gen-dhchap-key --hmac=3 --nqn="$h2")
kc=$(nvme gen-dhchap-key --key-length=48 --nqn="$NQN") wrong=$(nvme gen-dhchap-key --hmac=1 --nqn="$h1")
keys=$work/keys && mkdir -m 700 "$keys"
(umask 077 && echo "$k1" >"$keys/h1" && echo "$k2" >"$keys/h2" && echo "$kc" >"$keys/ctrl" && echo "$wrong" >"$keys/wrong")
start_target --listen 10.1.1.1,10.1.2.1 --subnqn "$NQN" --ns ram:64m --dhchap-key "$h1=@$keys/h1" \
  --dhchap-key "$h2=@$keys/h2" --dhchap-ctrl-key "$h2=@$keys/ctrl" --dhchap-dhgroup ffdhe2048,null --allow-host "$h3" \
  --control "$work/control" --auth-backoff 60 --log-level info
V=(--verify=crc32c --verify_fatal=1 --do_verify=1)
IO=(--traddr=10.1.1.1 --transport=tcp --rw=randwrite --bs=16k --iodepth=8 --size=8m "${V[@]}")

run_fio uni "${IO[@]}" --hostnqn="$h1" --dhchap_secret_file="$keys/h1" >/dev/null &&
  [[ $(grep -c "host $h1 authenticated (hmac(sha256), DH group ffdhe2048)" "$work/target.log") -ge 2 ]] &&
  pass "unidirectional: admin and I/O queue authenticated (ffdhe2048, the target's first choice), data verified" ||
  fail "unidirectional authentication: $(tail -3 "$work/uni.log"; grep -m3 "$h1" "$work/target.log")"

run_fio bidi "${IO[@]}" --hostnqn="$h2" --dhchap_secret_file="$keys/h2" --dhchap_ctrl_secret_file="$keys/ctrl" \
  --dhchap_dhgroup=null >/dev/null &&
  grep -q "host $h2 authenticated (hmac(sha256), DH group null, bidirectional)" "$work/target.log" &&
  pass "bidirectional with the group the host offered (null), data verified" ||
  fail "bidirectional authentication: $(tail -3 "$work/bidi.log")"

# Both paths over MPTCP, every queue authenticated; then path 1 goes down
# and up mid-run: its reconnect authenticates again. (fio's set-up reads the
# namespace size over a short association of its own: one authentication
# more than the queues.)
authed() { grep -c "host $1 authenticated" "$work/target.log"; }
before=$(authed "$h2")
run_fio mptcp --traddr=10.1.1.1,10.1.2.1 --transport=mptcp --iopolicy=round-robin --rw=randrw --bs=16k --iodepth=8 \
  --size=8m "${V[@]}" --hostnqn="$h2" --dhchap_secret_file="$keys/h2" --dhchap_ctrl_secret_file="$keys/ctrl" >/dev/null &&
  (($(authed "$h2") - before >= 5)) &&
  pass "MPTCP, 2 paths: admin and I/O queues of both paths authenticated (bidirectional), data verified" ||
  fail "MPTCP 2 paths: $(tail -3 "$work/mptcp.log")"
before=$(authed "$h1")
run_fio reconnect --traddr=10.1.1.1 --transport=mptcp --rw=randread --bs=4k --iodepth=4 --size=8m --time_based=1 --runtime=5 \
  --reconnect_delay=0.5 --hostnqn="$h1" --dhchap_secret_file="$keys/h1" >/dev/null &
fio_pid=$!
until_within 10 "I/O before port 1 goes down" flowing 1
ctl port 1 down >/dev/null
sleep 1 # the fault: 1 s with the port down
ctl port 1 up >/dev/null
wait "$fio_pid" && (($(authed "$h1") - before >= 5)) &&
  pass "a reconnect authenticates again ($(($(authed "$h1") - before)) queue authentications for one job)" ||
  fail "reconnect: $(($(authed "$h1") - before)) authentications, $(tail -3 "$work/reconnect.log")"

run_fio plain "${IO[@]}" --hostnqn="$h3" >/dev/null && ! grep -q "host $h3 authenticated" "$work/target.log" &&
  pass "a host allowed without a key is not asked to authenticate" || fail "host without a key: $(tail -3 "$work/plain.log")"

# Keys name hosts: with keys on the command line only the hosts with keys
# and the --allow-host ones get in, not a host the target never heard of.
hosts=$(grep "mpnvme-target: $NQN hosts: " "$work/target.log")
[[ $hosts == *"$h1"* && $hosts == *"$h2"* && $hosts == *"$h3"* && $hosts != *"$h4"* && $hosts != *"hosts: any"* ]] &&
  pass "the target says at start which hosts it admits: ${hosts#*hosts: }" || fail "hosts line: '$hosts'"
if run_fio stranger "${IO[@]}" --hostnqn="$h4" --ctrl_loss_tmo=0 >/dev/null; then fail "a host without a key got in beside keyed hosts"
elif grep -q "host $h4 is not allowed" "$work/stranger.log" "$work/target.log"; then pass "a host with no key and not listed is refused"
else fail "stranger: unexpected error $(tail -2 "$work/stranger.log")"; fi

if run_fio nokey "${IO[@]}" --hostnqn="$h1" >/dev/null; then fail "a host with a key configured got in without one"
elif grep -q "the controller requires DH-HMAC-CHAP authentication: set dhchap_secret=" "$work/nokey.log"; then pass "no secret: refused, saying which option is missing"
else fail "no secret: unexpected error $(tail -2 "$work/nokey.log")"; fi

# A key file others may read is refused before any connection is made.
chmod 644 "$keys/wrong"
if run_fio readable "${IO[@]}" --hostnqn="$h1" --dhchap_secret_file="$keys/wrong" >/dev/null; then fail "a world-readable key file was used"
elif grep -q "$keys/wrong can be read by other users: refused (chmod 600 it)" "$work/readable.log"; then
  pass "a world-readable secret file is refused, naming it"
else fail "world-readable key file: unexpected error $(tail -2 "$work/readable.log")"; fi
chmod 600 "$keys/wrong"
if run_fio wrong "${IO[@]}" --hostnqn="$h1" --dhchap_secret_file="$keys/wrong" >/dev/null; then fail "a wrong key was accepted"
elif grep -q "DH-HMAC-CHAP failed on path 10.1.1.1:4420 admin queue: controller sent AUTH_Failure1 after DH-HMAC-CHAP_Reply, reason 'authentication failed'" "$work/wrong.log"; then
  pass "wrong key: refused with the controller's reason"
else fail "wrong key: unexpected error $(tail -2 "$work/wrong.log")"; fi
[[ $(grep -c "host $h1 failed DH-HMAC-CHAP authentication: the host's response does not match its key" "$work/target.log") == 1 ]] &&
  pass "the target logged the failure once, with its reason" || fail "target failure log: $(grep -c 'failed DH-HMAC-CHAP' "$work/target.log") lines"

# At once again, even with the right key: the address waits first.
if run_fio retry "${IO[@]}" --hostnqn="$h1" --dhchap_secret_file="$keys/h1" --ctrl_loss_tmo=0 >/dev/null; then
  fail "a retry right after a failed authentication was let in"
elif grep -q "refusing connections from 10.1.1.2 for a while" "$work/target.log"; then pass "an immediate retry from that address is refused (rate limit)"
else fail "retry: $(tail -2 "$work/retry.log")"; fi
forgive 10.1.1.2
run_fio later "${IO[@]}" --hostnqn="$h1" --dhchap_secret_file="$keys/h1" >/dev/null && pass "forgiven by the control socket, the right key gets in again" ||
  fail "forgiven: $(tail -2 "$work/later.log")"

# A host that refuses the controller's answer (it checks the controller
# with another key: AUTH_Failure2) proved its own key first: no wait for
# its address (blktests' nvme/044 connects right after such a refusal).
if run_fio refusing "${IO[@]}" --hostnqn="$h2" --dhchap_secret_file="$keys/h2" --dhchap_ctrl_secret_file="$keys/wrong" \
  --ctrl_loss_tmo=0 >/dev/null; then fail "the host took the controller's answer to another key"
elif grep -q "host $h2 failed DH-HMAC-CHAP authentication: the host refused the controller: AUTH_Failure2" "$work/target.log"; then
  run_fio after-refusal "${IO[@]}" --hostnqn="$h2" --dhchap_secret_file="$keys/h2" --dhchap_ctrl_secret_file="$keys/ctrl" >/dev/null &&
    pass "a host refusing the controller's answer may connect again at once" ||
    fail "after the host refused the controller: $(tail -2 "$work/after-refusal.log")"
else fail "the host's refusal of the controller: $(tail -2 "$work/refusing.log")"; fi

# Multipath: a second target on path 2 knows another key for h1. Its path
# is down with the controller's reason; the job runs on path 1. (The same
# subsystem and namespace identity on both: the engine takes them for two
# controllers of one subsystem.)
(umask 077 && nvme gen-dhchap-key --hmac=1 --nqn="$h1" >"$keys/other")
"$LAB" -n "$lab" exec target "$TARGET" --transport tcp --listen 10.1.2.1:4421 --subnqn "$NQN" --ns ram:64m \
  --dhchap-key "$h1=@$keys/other" --log-level info >"$work/target2.log" 2>&1 &
target2=$!
until_within 10 "the second target ready" grep -q 'mpnvme-target: ready' "$work/target2.log"
run_fio mp --traddr=10.1.1.1,10.1.2.1:4421 --transport=tcp --iopolicy=round-robin --rw=randread --bs=4k --size=8m \
  --hostnqn="$h1" --dhchap_secret_file="$keys/h1" >/dev/null &&
  grep -q "path 10.1.2.1:4421 admin queue: controller sent AUTH_Failure1 after DH-HMAC-CHAP_Reply, reason 'authentication failed'" "$work/mp.log" &&
  [[ $(json mp | jq '.jobs[0].read.io_bytes') -gt 0 ]] &&
  pass "multipath: the path that refuses the key is down with the reason, the other carries the job" ||
  fail "multipath with one refusing path: $(tail -4 "$work/mp.log")"
kill -INT "$target2"; wait "$target2"

# --allow-any-host keeps the door open on purpose, and says so at start.
stop_target
start_target --listen 10.1.1.1 --subnqn "$NQN" --ns ram:64m --dhchap-key "$h1=@$keys/h1" --allow-any-host --log-level info
grep -q "mpnvme-target: $NQN hosts: any" "$work/target.log" &&
  grep -q "any host may connect (allow_any_host): hosts without a key get in without authentication" "$work/target.log" &&
  pass "--allow-any-host: logged at start" || fail "--allow-any-host not logged: $(head -8 "$work/target.log")"
run_fio anyhost "${IO[@]}" --hostnqn="$h4" >/dev/null && pass "--allow-any-host admits a host without a key" ||
  fail "--allow-any-host: $(tail -2 "$work/anyhost.log")"

for k in "$k1" "$k2" "$kc" "$wrong"; do
  if grep -qF -- "${k:10:24}" "$work"/*.log "$work"/*.json; then fail "a secret appears in a log or in fio's output"; break; fi
done
pass "no secret in the target's log, the engine's logs or fio's output"
finish
