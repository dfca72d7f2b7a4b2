#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# mpnvme-blktests-control as blktests calls it (common/nvme with
# NVME_TARGET_CONTROL; blktests itself runs in the kernel lab): config
# answers from the settings file, setup makes the test's subsystem with the
# namespace UUID blktests looks for, open to its host only and with the
# host and controller keys it passes (spelled --ctrkey, as unpatched
# blktests does), cleanup removes it and a later setup without keys leaves
# none behind; the commands of the blktests patch series: set-dhchap
# changes one attribute and keeps the others, list-ports, setup --ports
# and add-ports hand out the target's ports in order and refuse more than
# it has, set-ana sets a port's ANA state; the settings and the target's
# refusals are reported with what is wrong, never with a key.
source "$(dirname "$0")/lib.sh"
lab_up --paths 1
control=$root/toolkit/blktests/mpnvme-blktests-control
host=nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349 subsys=blktests-subsystem-1
uuid=3a5c104c-ee41-38a1-8ccf-0968003d54e7
k=$(nvme gen-dhchap-key --hmac=1 --nqn="$host") kc=$(nvme gen-dhchap-key --hmac=1 --nqn="$subsys")
keys=$work/keys && mkdir -m 700 "$keys"
(umask 077 && echo "$k" >"$keys/host" && echo "$kc" >"$keys/ctrl")
start_target --listen 10.1.1.1:4420,10.1.1.1:4421 --transport tcp --subnqn nqn.2026-12.io.mpnvme:idle --ns ram:1m --control "$work/control" \
  --auth-backoff 0 --log-level info
cat >"$work/settings" <<EOF
# as a lab guest would have it, with the machine's socket at hand
control=unix:$work/control
traddr=10.1.1.1
hostnqn=$host
hostid=0f01fb42-9f7f-4856-b0b3-51e60b8de349
namespace=ram:64m
EOF
export MPNVME_BLKTESTS_CONF=$work/settings PATH=$MPNVME_BUILD/mpnvme-target:$PATH
bt() { in_target env MPNVME_BLKTESTS_CONF="$MPNVME_BLKTESTS_CONF" MPNVME_BLKTESTS_STATE="$work/state" PATH="$PATH" "$control" "$@"; }

got=$(for w in trtype traddr trsvid subsysnqn subsys-uuid hostnqn blkdev-type; do bt config --show-$w; done | tr '\n' ' ')
[[ $got == "tcp 10.1.1.1 4420 $subsys 91fdba0d-f87b-4c25-b80f-db7be1418b9e $host device " ]] &&
  pass "config answers blktests' questions from the settings" || fail "config: $got"

IO=(--traddr=10.1.1.1 --transport=tcp --subnqn="$subsys" --hostnqn="$host" --rw=randwrite --bs=16k --iodepth=8
  --size=8m --verify=crc32c --verify_fatal=1 --do_verify=1)
bt setup --subsysnqn "$subsys" --subsys-uuid "$uuid" --hostnqn "$host" --hostkey "$k" --ctrkey "$kc" ||
  fail "setup with keys exited $?"
ctl subsystems | grep -qx "$subsys namespaces 1=ram:67108864 hosts $host" &&
  pass "setup: the subsystem with its namespace, open to blktests' host only" ||
  fail "after setup: $(ctl subsystems)"
run_fio keyed "${IO[@]}" --dhchap_secret_file="$keys/host" --dhchap_ctrl_secret_file="$keys/ctrl" >/dev/null &&
  grep -q "host $host authenticated (.*bidirectional)" "$work/target.log" &&
  pass "the host authenticates both ways with the keys setup passed, data verified" ||
  fail "keyed I/O: $(tail -3 "$work/keyed.log")"
run_fio stranger "${IO[@]}" --hostnqn=nqn.2026-12.io.mpnvme:stranger >/dev/null &&
  fail "another host got into blktests' subsystem" || pass "another host is refused"

# set-dhchap: the attributes given, the others kept (blktests' nvme/043-045).
bt set-dhchap --hostnqn "$host" --hash "hmac(sha384)" --dhgroup ffdhe3072 || fail "set-dhchap --hash --dhgroup exited $?"
run_fio rehashed "${IO[@]}" --dhchap_secret_file="$keys/host" --dhchap_ctrl_secret_file="$keys/ctrl" >/dev/null &&
  grep -q "host $host authenticated (hmac(sha384), DH group ffdhe3072, bidirectional)" "$work/target.log" &&
  pass "set-dhchap changes the hash and group: both keys kept, both new ones used" ||
  fail "after set-dhchap --hash --dhgroup: $(tail -3 "$work/rehashed.log"; grep "$host" "$work/target.log" | tail -2)"

# Ports: handed out in order, as many as the target has.
[[ $(bt list-ports | tr '\n' ' ') =~ ^1\ tcp\ 10.1.1.1\ 4420\ 2\ tcp\ 10.1.1.1\ 4421\ $ ]] &&
  pass "list-ports: the target's ports as hosts reach them" || fail "list-ports: $(bt list-ports)"
[[ $(bt list-ports --subsysnqn "$subsys") == "1 tcp 10.1.1.1 4420" ]] && pass "setup gives a subsystem one port" ||
  fail "list-ports after setup: $(bt list-ports --subsysnqn "$subsys")"
# Fewer ports than the target has: a reader that stopped early failed
# list-ports now and then (SIGPIPE); ten in a row must all succeed.
rc=0; for _ in $(seq 10); do bt list-ports --subsysnqn "$subsys" >/dev/null || rc=$?; done
((rc == 0)) && pass "list-ports of a subsystem with fewer ports than the target succeeds" || fail "list-ports: status $rc"
rc=0; bt add-ports --ports 1 --subsysnqn "blktests-subsystem.1" 2>/dev/null || rc=$?
((rc == 1)) && pass "add-ports takes the NQN as written, not as a pattern" || fail "add-ports to a pattern: status $rc"
for bad in 9223372036854775808 0 1e3; do
  rc=0; bt add-ports --ports "$bad" --subsysnqn "$subsys" 2>/dev/null || rc=$?
  ((rc == 2)) || fail "--ports $bad: status $rc"
done
pass "--ports out of 1..9999 is a usage error"
bt add-ports --ports 1 --subsysnqn "$subsys" --subsys-uuid "$uuid" --hostnqn "$host" || fail "add-ports exited $?"
[[ $(bt list-ports --subsysnqn "$subsys" | wc -l) == 2 ]] && pass "add-ports gives it the next" ||
  fail "list-ports after add-ports: $(bt list-ports --subsysnqn "$subsys")"
rc=0; out=$(bt add-ports --ports 1 --subsysnqn "$subsys" 2>&1) || rc=$?
((rc == 1)) && grep -q "the target has 2 port(s) and 2 are given to $subsys already" <<<"$out" &&
  pass "a port more than the target has is refused, saying so" || fail "third port: status $rc: $out"
run_fio second-port "${IO[@]}" --traddr=10.1.1.1 --trsvcid=4421 --dhchap_secret_file="$keys/host" \
  --dhchap_ctrl_secret_file="$keys/ctrl" >/dev/null && pass "the subsystem serves verified I/O on the added port" ||
  fail "I/O on the second port: $(tail -3 "$work/second-port.log")"

# set-ana: the port's ANA group state, as the target reports it.
bt set-ana --port 2 --anagrpid 1 --anastate inaccessible || fail "set-ana exited $?"
ctl stats | grep -q "^port 2 .* ana1=inaccessible" && ! ctl stats | grep -q "^port 1 .* ana1=inaccessible" &&
  pass "set-ana sets one port's ANA state" || fail "after set-ana: $(ctl stats)"
rc=0; bt set-ana --port 2 --anagrpid 1 --anastate sleepy 2>/dev/null || rc=$?
((rc == 1)) && pass "a state that is not an ANA state is refused" || fail "bad ANA state: status $rc"

bt cleanup --subsysnqn "$subsys" || fail "cleanup exited $?"
ctl subsystems | grep -q "^$subsys " && fail "cleanup left the subsystem" ||
  pass "cleanup removes the subsystem"
[[ -z $(ls -A "$work/state") ]] && pass "cleanup forgets the subsystem's ports" || fail "cleanup left $(ls "$work/state")"
# As blktests removes a test's ports: a host reconnecting is refused at the
# transport and keeps trying (nvme/061), until a setup gives them again.
ctl stats | grep -q "^port 1 tcp 10.1.1.1:4420 (down)" && ctl stats | grep -q "^port 2 tcp 10.1.1.1:4421 (down)" &&
  pass "cleanup takes the ports no subsystem holds down" || fail "ports after cleanup: $(ctl stats)"
bt setup --subsysnqn "$subsys" --subsys-uuid "$uuid" --hostnqn "$host" || fail "setup without keys exited $?"
ctl stats | grep -q "^port 1 tcp 10.1.1.1:4420:" && ctl stats | grep -q "^port 2 tcp 10.1.1.1:4421 (down)" &&
  pass "setup brings the ports it gives up again, and no more" || fail "ports after setup: $(ctl stats)"
run_fio unkeyed "${IO[@]}" >/dev/null && pass "a setup without keys leaves none from the test before" ||
  fail "unkeyed I/O after a keyed test: $(tail -3 "$work/unkeyed.log")"

# TLS as nvme/062 sets it: the port TLS-only and the host's PSK given;
# cleanup makes the port plaintext again.
tk=$(nvme gen-tls-key --hmac=1) && (umask 077 && echo "$tk" >"$keys/tls")
bt cleanup --subsysnqn "$subsys" >/dev/null || fail "cleanup before the TLS setup"
bt setup --subsysnqn "$subsys" --subsys-uuid "$uuid" --hostnqn "$host" --tls required --tlskey "$tk" ||
  fail "setup --tls required --tlskey exited $?"
run_fio tls-plain "${IO[@]}" --ctrl_loss_tmo=0 >/dev/null && fail "plaintext got through setup --tls required"
run_fio tls "${IO[@]}" --tls=1 --tls_key_file="$keys/tls" >/dev/null &&
  grep -q "identity 'NVMe1R01 $host $subsys " "$work/target.log" &&
  pass "setup --tls required --tlskey: plaintext refused, the host's TLS with that PSK verified" ||
  fail "setup with TLS: $(tail -3 "$work/tls.log")"
bt cleanup --subsysnqn "$subsys" >/dev/null && bt setup --subsysnqn "$subsys" --subsys-uuid "$uuid" --hostnqn "$host" ||
  fail "cleanup and setup after TLS"
run_fio after-tls "${IO[@]}" >/dev/null && pass "after cleanup the port is plaintext again" ||
  fail "plaintext after the TLS test: $(tail -3 "$work/after-tls.log")"
rc=0; bt setup --subsysnqn y --hostnqn "$host" --tls maybe 2>/dev/null || rc=$?
((rc == 2)) && pass "--tls other than none, not-required or required is a usage error" || fail "--tls maybe: status $rc"

# Refusals: the target's reason, never the key; settings by line.
rc=0; out=$(bt setup --subsysnqn "$subsys" --subsys-uuid "$uuid" --hostnqn "$host" --hostkey "$k" 2>&1) || rc=$?
((rc == 1)) && grep -q "the target refused 'subsystem add $subsys .*': error: subsystem add: a subsystem of that NQN exists" <<<"$out" &&
  pass "a refusal by the target gives its reason, status 1" || fail "second setup: status $rc"
grep -qF -- "${k:10:24}" <<<"$out" && fail "a refusal shows the key"
rc=0; out=$(bt setup --subsysnqn x --hostnqn "$host" --hostkey "DHHC-1:00:not*base64:" 2>&1) || rc=$?
((rc == 1)) && grep -q "the target refused 'host key $host': error: .*dhchap_key: the key is not base64" <<<"$out" &&
  pass "a bad key is refused naming the field, not the key" || fail "bad key: status $rc"
rc=0; bt setup --subsysnqn "$subsys" --bogus 2>/dev/null || rc=$?
((rc == 2)) && pass "an unknown option is a usage error (2)" || fail "unknown option: status $rc"
rc=0; bt set-ana --port 1 --port 2 --anagrpid 1 --anastate optimized 2>/dev/null || rc=$?
((rc == 2)) && pass "an option given twice is a usage error" || fail "an option twice: status $rc"
rc=0; out=$(bt set-dhchap --hostnqn "$host"$'\nsubsystem remove nqn.2026-12.io.mpnvme:idle' --hash 'hmac(sha256)' 2>&1) || rc=$?
((rc == 2)) && grep -q "set-dhchap: argument 2 has white space or a control character" <<<"$out" &&
  ctl subsystems | grep -q "^nqn.2026-12.io.mpnvme:idle " && pass "a value with a line break is refused, not sent as a second command" ||
  fail "a value with a line break: status $rc, $out; subsystems: $(ctl subsystems)"
bt cleanup --subsysnqn x >/dev/null 2>&1 && fail "a setup whose key was refused left its subsystem behind"
cp "$work/settings" "$work/settings.good"
echo "namespace=ram:1m host=nqn.2026-12.io.mpnvme:intruder" >>"$work/settings"
rc=0; out=$(bt config --show-trtype 2>&1) || rc=$?
((rc == 1)) && grep -q "settings:7: the value of 'namespace' has white space" <<<"$out" &&
  pass "a setting's value with white space is refused by line" || fail "a setting with a space: status $rc: $out"
cp "$work/settings.good" "$work/settings"
echo "colour=blue" >>"$work/settings"
rc=0; out=$(bt config --show-trtype 2>&1) || rc=$?
((rc == 1)) && grep -q "settings:7: unknown setting 'colour'" <<<"$out" && pass "an unknown setting is refused by line" ||
  fail "unknown setting: status $rc: $out"
for secret in "$k" "$kc" "$tk"; do
  grep -rqF -- "${secret:10:24}" "$work"/*.log "$work"/*.json && { fail "a key appears in a log or fio's output"; break; }
done
stop_target || fail "target exited with $?"
finish
