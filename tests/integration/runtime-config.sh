#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The target's configuration at run time through its control socket, as
# blktests drives a remote target: a subsystem added with its namespaces
# serves verified I/O at once; naming an allowed host closes it to the
# others; a host's DH-HMAC-CHAP keys set at run time are required from then
# on (bidirectional, read from files or from standard input, never from the
# process list), and removed again; a subsystem removed under I/O ends its
# controllers (the host's I/O fails, the target lives on); bad commands are
# refused naming the field; the socket is its owner's only; no key appears
# in a reply, a log or fio's output.
source "$(dirname "$0")/lib.sh"
lab_up --paths 1
new=nqn.2026-12.io.mpnvme:added host=nqn.2026-12.io.mpnvme:runtime-host other=nqn.2026-12.io.mpnvme:other-host
uuid=91fdba0d-f87b-4c25-b80f-db7be1418b9e
k=$(nvme gen-dhchap-key --hmac=2 --nqn="$host") kc=$(nvme gen-dhchap-key --key-length=48 --nqn="$new")
keys=$work/keys && mkdir -m 700 "$keys"
(umask 077 && echo "$k" >"$keys/host" && echo "$kc" >"$keys/ctrl")
# No backoff: the refusals below must not delay the runs after them.
start_target --listen 10.1.1.1 --transport tcp --subnqn "$NQN" --ns ram:16m --control "$work/control" --auth-backoff 0 \
  --log-level info
[[ $(stat -c %a "$work/control") == 600 ]] && pass "the control socket is its owner's only" ||
  fail "control socket mode $(stat -c %a "$work/control")"
IO=(--traddr=10.1.1.1 --transport=tcp --subnqn="$new" --rw=randwrite --bs=16k --iodepth=8 --size=8m
  --verify=crc32c --verify_fatal=1 --do_verify=1)

# 1. A subsystem added at run time serves at once, with the namespace's UUID
# given; the discovery controller counts the change and tells a host that
# waits for it (a discovery log change notice), which then finds it listed.
in_host python3 "$root/tests/conformance/minihost.py" 10.1.1.1 4420 nqn.2014-08.org.nvmexpress.discovery --discovery \
  --wait-change 20 >"$work/discovery.out" 2>&1 &
watcher=$!
until_within 10 "the discovery host waiting for a change notice" grep -q "waiting for a discovery log change notice" "$work/discovery.out"
ctl subsystem add "$new" "ram:32m,uuid=$uuid" null:64m,lba=4096 >/dev/null || fail "subsystem add refused"
wait $watcher || fail "discovery change: $(grep -E '^(FAIL|ok)' "$work/discovery.out" | tr '\n' ' ')"
grep -q "^entry: .* $new " "$work/discovery.out" &&
  pass "discovery: the host was told of the change, genctr rose, the added subsystem is listed" ||
  fail "the discovery log after the change does not list $new: $(cat "$work/discovery.out")"
ctl subsystems | grep -qx "$new namespaces 1=ram:33554432,2=null:67108864 hosts any" && pass "subsystems lists it, open to any host" ||
  fail "subsystems: $(ctl subsystems)"
run_fio added "${IO[@]}" --hostnqn="$other" >/dev/null && pass "an added subsystem serves verified I/O at once" ||
  fail "I/O to the added subsystem: $(tail -3 "$work/added.log")"

# 2. Naming a host closes the subsystem to the others.
ctl host allow "$new" "$host" >/dev/null || fail "host allow refused"
if run_fio closed "${IO[@]}" --hostnqn="$other" >/dev/null; then fail "a host not named still got in"
elif grep -q "host $other is not allowed on $new" "$work/target.log"; then pass "once a host is named, the others are refused"
else fail "refusal of an unnamed host: $(tail -2 "$work/closed.log")"; fi
run_fio named "${IO[@]}" --hostnqn="$host" >/dev/null && pass "the named host gets in" || fail "named host: $(tail -3 "$work/named.log")"

# 3. Keys set at run time: from files, and inline through standard input.
ctl host key "$host" "dhchap_key=@$keys/host" "dhchap_ctrl_key=@$keys/ctrl" dhchap_dhgroup=ffdhe2048 >/dev/null ||
  fail "host key refused"
if run_fio nokey "${IO[@]}" --hostnqn="$host" >/dev/null; then fail "the host got in without its new key"
else pass "a key set at run time is required from then on"; fi
run_fio keyed "${IO[@]}" --hostnqn="$host" --dhchap_secret_file="$keys/host" --dhchap_ctrl_secret_file="$keys/ctrl" \
  >/dev/null && grep -q "host $host authenticated (hmac(sha256), DH group ffdhe2048, bidirectional)" "$work/target.log" &&
  pass "bidirectional authentication with the keys set at run time, data verified" ||
  fail "keyed host: $(tail -3 "$work/keyed.log"; grep -m2 "$host" "$work/target.log")"
# One attribute alone replaces the host's current one and keeps the rest,
# as a write to nvmet's configfs does (blktests' nvme/043-045 change them
# one at a time).
ctl host key "$host" "dhchap_hash=hmac(sha512)" dhchap_dhgroup=ffdhe3072 >/dev/null || fail "a hash and group alone refused"
run_fio amended "${IO[@]}" --hostnqn="$host" --dhchap_secret_file="$keys/host" --dhchap_ctrl_secret_file="$keys/ctrl" \
  >/dev/null && grep -q "host $host authenticated (hmac(sha512), DH group ffdhe3072, bidirectional)" "$work/target.log" &&
  pass "a hash and group set alone are used, the keys kept" ||
  fail "after a hash and group alone: $(tail -3 "$work/amended.log"; grep "$host" "$work/target.log" | tail -2)"
ctl host key "$host" dhchap_ctrl_key= >/dev/null || fail "an empty dhchap_ctrl_key refused"
if run_fio noctrl "${IO[@]}" --hostnqn="$host" --dhchap_secret_file="$keys/host" --dhchap_ctrl_secret_file="$keys/ctrl" \
  >/dev/null; then fail "a host challenged a controller whose controller key was removed, and got in"
elif grep -q "has no dhchap_ctrl_key for it" "$work/target.log"; then pass "an empty dhchap_ctrl_key removes the controller key"
else fail "after removing the controller key: $(grep "$host" "$work/target.log" | tail -2)"; fi
echo "host key $host dhchap_key=$k" | ctl - >"$work/stdin-reply" && pass "a key given on standard input is taken" ||
  fail "host key from standard input: $(cat "$work/stdin-reply")"
ctl host forget "$host" >/dev/null && run_fio forgotten "${IO[@]}" --hostnqn="$host" >/dev/null &&
  pass "keys forgotten: the named host gets in without" || fail "after host forget: $(tail -3 "$work/forgotten.log")"

# 4. Bad commands are refused naming what is wrong, never showing a key.
# The command is named by its verb only: its arguments may hold a key.
refused() { # WANT COMMAND...: refused, with WANT in the reply
  local reply
  if reply=$(ctl "${@:2}" 2>&1); then fail "accepted: ${*:2:2} ... (wanted: $1)"
  elif grep -qF -- "$1" <<<"$reply"; then pass "refused: $1"
  else fail "refusal of '${*:2:2} ...' does not say '$1': $reply"; fi
}
refused "a subsystem of that NQN exists" subsystem add "$new" ram:1m
refused "uuid '<argument 4>' is not a UUID" subsystem add nqn.2026-12.io.mpnvme:x ram:1m,uuid=not-a-uuid
refused "host allow: no such subsystem" host allow nqn.2026-12.io.mpnvme:none "$host"
refused "dhchap_key: the key is not base64" host key "$host" "dhchap_key=DHHC-1:00:not*base64:"
refused "argument 4 is not one of dhchap_key=" host key "$host" dhchap_secret=x
refused "the host has no key yet: dhchap_key= is required" host key "$host" "dhchap_ctrl_key=@$keys/ctrl"
refused "argument 4: an attribute to set is missing" host key "$host"
# A key given where its attribute's name belongs is refused by its place,
# and no reply repeats a word it was given (4bcf7ad echoed the key).
refused "argument 4 is not one of dhchap_key=" host key "$host" "$k"
reply=$(ctl host key "$host" "$k" 2>&1)
grep -qF -- "${k:10:24}" <<<"$reply" && fail "a refusal echoed the key it was given: $reply" ||
  pass "a key in the wrong place is not echoed"
refused "file and block namespaces need --control-ns-dir at start" subsystem add nqn.2026-12.io.mpnvme:f file:/etc/shadow
# A 48-byte key's base64 ends in '=': it still is no name to keep.
reply=$(ctl host key "$host" "dhchap_key=@$k" 2>&1)
grep -qF -- "${k:10:24}" <<<"$reply" && fail "a refusal echoed a key ending in '=': $reply" ||
  pass "a key given as a file name is not echoed"
# Host NQNs as the specification bounds them: a key in the NQN's place is
# never stored as a host (nor listed, nor logged).
refused "argument 3: a host NQN is at most 223 bytes, printable, without '='" host key "dhchap_key=$k" "dhchap_key=$k"
refused "argument 4: a host NQN is at most 223 bytes" host allow "$new" "nqn.$(printf 'x%.0s' {1..220})"
refused "argument 3: the discovery NQN names no host" host key nqn.2014-08.org.nvmexpress.discovery "dhchap_key=$k"
refused "argument 5: dhchap_hash= is given twice" host key "$host" "dhchap_hash=hmac(sha256)" "dhchap_hash=hmac(sha384)"
refused "host key.dhchap_dhgroup: empty: name at least one" host key "$host" "dhchap_key=$k" dhchap_dhgroup=
refused "argument 2 is not a port of this target" ana 65537 1 inaccessible
refused "argument 4: an ANA state is optimized, non-optimized" ana 1 1 opt
# A key file that would block the reader (the target's one control thread).
mkfifo -m 600 "$keys/fifo"
if reply=$(timeout 10 "$LAB" -n "$lab" exec target "$TARGET" ctl "$work/control" host key "$host" \
  "dhchap_key=@$keys/fifo" 2>&1); then fail "a FIFO as a key file was taken"
elif grep -q "is not a regular file: refused" <<<"$reply" && ctl stats >/dev/null; then
  pass "a FIFO as a key file is refused at once, the control socket answers on"
else fail "a FIFO as a key file: $reply"; fi

# 5. Removed under I/O: its controllers end, the target lives on.
connects() { grep -c "host $host connected to $new" "$work/target.log"; }
before=$(connects)
run_fio removed "${IO[@]}" --hostnqn="$host" --rw=randread --time_based=1 --runtime=60 --ctrl_loss_tmo=2 --verify=0 \
  --do_verify=0 >/dev/null &
fio_pid=$!
# fio's set-up connects and leaves first; then the job's controller.
job_connected() { (($(connects) >= before + 2)); }
until_within 20 "the job's controller on the subsystem about to be removed" job_connected
ctl subsystem remove "$new" >/dev/null || fail "subsystem remove refused"
grep -q "controller [0-9]* of $new (host $host) ended by the control socket: its subsystem was removed" "$work/target.log" &&
  pass "removed: its controllers ended" || fail "removal: $(grep "control socket" "$work/target.log" | tail -2)"
if ! until_within 30 "fio to end after the removal" bash -c "! kill -0 $fio_pid 2>/dev/null"; then kill -9 "$fio_pid"; fi
wait "$fio_pid" && fail "fio ran on after its subsystem was removed" || pass "the host's I/O failed once its subsystem was gone"
ctl subsystems | grep -q "^$new " && fail "subsystems still lists the removed one" || pass "subsystems no longer lists it"
# A key set at run time closed the first subsystem (open to any host at
# start) to the hosts without one, as a key given at start does, and
# forgetting the key opened nothing again.
if run_fio first-other "${IO[@]}" --subnqn="$NQN" --hostnqn="$other" >/dev/null; then
  fail "a host without a key got into a subsystem that a run-time key closed"
elif grep -q "host $other is not allowed on $NQN" "$work/target.log"; then pass "a key set at run time closed the open subsystem"
else fail "after the run-time key: $(tail -2 "$work/first-other.log")"; fi
# The keyed host got into that subsystem by its key, not by name: with the
# key forgotten, it is a host without one.
if run_fio first "${IO[@]}" --subnqn="$NQN" --hostnqn="$host" >/dev/null; then
  fail "a host whose key was forgotten got into a subsystem only its key had opened"
elif grep -q "host $host is not allowed on $NQN" "$work/target.log"; then pass "a forgotten key takes its host's way in with it"
else fail "the forgotten host: $(tail -2 "$work/first.log")"; fi
ctl host key "$host" "dhchap_key=@$keys/host" >/dev/null || fail "a key set again refused"
run_fio first-keyed "${IO[@]}" --subnqn="$NQN" --hostnqn="$host" --dhchap_secret_file="$keys/host" >/dev/null &&
  pass "keyed again, the host gets in: the target serves on" ||
  fail "the first subsystem after the removal: $(tail -3 "$work/first-keyed.log")"

for secret in "$k" "$kc"; do
  if grep -rqF -- "${secret:10:24}" "$work"/*.log "$work"/*.json "$work/stdin-reply"; then
    fail "a key appears in a log, a reply or fio's output"
    break
  fi
done
pass "no key in the target's log, the replies or fio's output"
stop_target || fail "target exited with $?"
finish
