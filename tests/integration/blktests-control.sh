#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# mpnvme-blktests-control as blktests calls it (common/nvme with
# NVME_TARGET_CONTROL; blktests itself runs in the kernel lab): config
# answers from the settings file, setup makes the test's subsystem with the
# namespace UUID blktests looks for, open to its host only and with the
# host and controller keys it passes (spelled --ctrkey, as blktests does),
# cleanup removes it and a later setup without keys leaves none behind;
# the settings and the target's refusals are reported with what is wrong,
# never with a key.
source "$(dirname "$0")/lib.sh"
lab_up --paths 1
control=$root/toolkit/blktests/mpnvme-blktests-control
host=nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349 subsys=blktests-subsystem-1
uuid=3a5c104c-ee41-38a1-8ccf-0968003d54e7
k=$(nvme gen-dhchap-key --hmac=1 --nqn="$host") kc=$(nvme gen-dhchap-key --hmac=1 --nqn="$subsys")
keys=$work/keys && mkdir -m 700 "$keys"
(umask 077 && echo "$k" >"$keys/host" && echo "$kc" >"$keys/ctrl")
start_target --listen 10.1.1.1 --transport tcp --subnqn nqn.2026-12.io.mpnvme:idle --ns ram:1m --control "$work/control" \
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
bt() { in_target env MPNVME_BLKTESTS_CONF="$MPNVME_BLKTESTS_CONF" PATH="$PATH" "$control" "$@"; }

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

bt cleanup --subsysnqn "$subsys" || fail "cleanup exited $?"
ctl subsystems | grep -q "^$subsys " && fail "cleanup left the subsystem" ||
  pass "cleanup removes the subsystem"
bt setup --subsysnqn "$subsys" --subsys-uuid "$uuid" --hostnqn "$host" || fail "setup without keys exited $?"
run_fio unkeyed "${IO[@]}" >/dev/null && pass "a setup without keys leaves none from the test before" ||
  fail "unkeyed I/O after a keyed test: $(tail -3 "$work/unkeyed.log")"

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
bt cleanup --subsysnqn x >/dev/null 2>&1 && fail "a setup whose key was refused left its subsystem behind"
echo "colour=blue" >>"$work/settings"
rc=0; out=$(bt config --show-trtype 2>&1) || rc=$?
((rc == 1)) && grep -q "settings:7: unknown setting 'colour'" <<<"$out" && pass "an unknown setting is refused by line" ||
  fail "unknown setting: status $rc: $out"
for secret in "$k" "$kc"; do
  grep -rqF -- "${secret:10:24}" "$work"/*.log "$work"/*.json && { fail "a key appears in a log or fio's output"; break; }
done
stop_target || fail "target exited with $?"
finish
