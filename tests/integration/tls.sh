#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# NVMe/TCP over TLS 1.3 between the engine and mpnvme-target (the kernel
# lab runs the engine against nvmet with tlshd): verified I/O over TCP and
# over MPTCP with 2 and 4 subflows, the user-space record layer in use on
# both sides; a packet capture of the lab shows no plaintext of the
# pattern fio wrote (and does show it for a plaintext run, the control); a
# wrong PSK is refused on both sides with reasons; a plaintext host is
# refused by a TLS-required port and a TLS host by a plaintext port, each
# told what the other side wanted; the discovery log marks the TLS ports;
# a blackholed path fails over and comes back through a new handshake; the
# control socket makes a port TLS-only and gives a host its key at run
# time, then takes both back; no key appears in any log or output.
source "$(dirname "$0")/lib.sh"
lab_up --paths 4 --cc cubic
h1=nqn.2026-12.io.mpnvme:tls-host h2=nqn.2026-12.io.mpnvme:tls-other
# The conformance host's NQN (tests/pylib's TEST_HOST): it reads the
# discovery log, which lists only what a host may connect to.
minihost=nqn.2014-08.org.nvmexpress:uuid:6d6a5f0e-5b27-4e57-8d59-0a1f7c6f0001
k1=$(nvme gen-tls-key --hmac=1) k2=$(nvme gen-tls-key --hmac=2) wrong=$(nvme gen-tls-key --hmac=1)
keys=$work/keys && mkdir -m 700 "$keys"
(umask 077 && echo "$k1" >"$keys/h1" && echo "$k2" >"$keys/h2" && echo "$wrong" >"$keys/wrong")
start_target --listen 10.1.1.1:tls,10.1.2.1:tls,10.1.3.1:tls,10.1.4.1:tls,10.1.1.1:4421 --subnqn "$NQN" --ns ram:128m \
  --tls-key "$h1=@$keys/h1" --tls-key "$h2=@$keys/h2" --allow-host "$minihost" --control "$work/control" --auth-backoff 60 --log-level info
# fio fills every block with this pattern ("mpnvme-secret-data"): what the capture looks for.
PATTERN=6d706e766d652d7365637265742d64617461
V=(--verify=pattern --verify_pattern=0x$PATTERN --verify_fatal=1 --do_verify=1)
TLS1=(--tls=1 --hostnqn="$h1" --tls_key_file="$keys/h1")

# sniff NAME: capture in the target namespace until sniff_stop.
sniff() {
  sniff_out=$work/$1.cap
  in_target python3 "$root/tests/integration/sniff.py" $PATTERN "$sniff_out" &
  sniff_pid=$!
  for _ in $(seq 50); do [[ -e $sniff_out.ready ]] && return; sleep 0.1; done
  fail "the capture did not start"
}
sniff_stop() {
  touch "$sniff_out.stop"
  wait "$sniff_pid" || fail "the capture failed"
}

# TCP, SHA-256 key: the suite follows the key; the pattern never crosses the wire.
sniff tcp
run_fio tcp --traddr=10.1.1.1 --transport=tcp --rw=write --bs=64k --iodepth=8 --size=16m "${V[@]}" "${TLS1[@]}" \
  --path_stats="$work/tcp.paths" --log_level=info >/dev/null
rc=$?
sniff_stop
# tls_mode=auto: kernel TLS where this kernel has the tls module, else user space.
mode=$(jq -r '.paths[0].tls.mode' "$work/tcp.paths" 2>/dev/null)
records=$([[ $mode == ktls ]] && echo "records in the kernel" || echo "records in user space")
((rc == 0)) && jq -e '.paths[0].tls.cipher == "TLS_AES_128_GCM_SHA256"' "$work/tcp.paths" >/dev/null &&
  [[ $mode == user-tls || $mode == ktls ]] &&
  grep -q "transport in effect: TCP, TLS 1.3 TLS_AES_128_GCM_SHA256 ($mode)" "$work/tcp.log" &&
  grep -q "TLS 1.3 TLS_AES_128_GCM_SHA256 ($records), identity 'NVMe1R01 $h1 $NQN " "$work/target.log" &&
  pass "TCP: verified over TLS_AES_128_GCM_SHA256 ($mode on the host, $records on the target), version 1 identity" ||
  fail "TCP over TLS: rc $rc $(tail -3 "$work/tcp.log"; cat "$work/tcp.paths" 2>/dev/null)"
jq -e '.hits == 0 and .bytes > 8000000' "$work/tcp.cap" >/dev/null &&
  pass "capture: $(jq -r .bytes "$work/tcp.cap") bytes on the wire, the pattern fio wrote appears 0 times" ||
  fail "capture of the TLS run: $(cat "$work/tcp.cap")"
# The control: the same job in plaintext (port 4421), the pattern is seen.
sniff plain
run_fio plain --traddr=10.1.1.1:4421 --transport=tcp --rw=write --bs=64k --iodepth=8 --size=4m "${V[@]}" --hostnqn="$h1" \
  >/dev/null || fail "plaintext control run: $(tail -3 "$work/plain.log")"
sniff_stop
jq -e '.hits > 1000' "$work/plain.cap" >/dev/null && pass "control: in plaintext the capture sees the pattern $(jq .hits "$work/plain.cap") times" ||
  fail "the capture does not see plaintext: $(cat "$work/plain.cap")"

# MPTCP with 2 and then 4 subflows (the host's subflow endpoints, up to its
# subflow limit; no subflows to the target's announced addresses), a
# SHA-384 key: TLS_AES_256_GCM_SHA384 over the user-space record layer.
for n in 2 4; do
  in_host ip mptcp limits set subflows $((n - 1)) add_addr_accepted 0
  run_fio mptcp$n --traddr=10.1.1.1 --transport=mptcp --mptcp_join_wait=2000 --rw=randrw --bs=128k --iodepth=16 --size=32m \
    "${V[@]}" --tls=1 --hostnqn="$h2" --tls_key_file="$keys/h2" --path_stats="$work/mptcp$n.paths" >/dev/null &&
    jq -e --argjson n $n '.paths[0].subflows == $n and .paths[0].tls.mode == "user-tls" and
      .paths[0].tls.cipher == "TLS_AES_256_GCM_SHA384"' "$work/mptcp$n.paths" >/dev/null &&
    pass "MPTCP with $n subflows: verified over TLS_AES_256_GCM_SHA384, user-space records" ||
    fail "MPTCP $n subflows: $(tail -3 "$work/mptcp$n.log"; jq -c '.paths[0]' "$work/mptcp$n.paths" 2>/dev/null)"
done
in_host ip mptcp limits set subflows 8 add_addr_accepted 8

# The discovery log (read through the plaintext port by the conformance
# host) says which ports require TLS 1.3: TREQ 1 (required), SECTYPE 2.
in_host python3 "$root/tests/conformance/minihost.py" 10.1.1.1 4421 nqn.2014-08.org.nvmexpress.discovery --discovery \
  >"$work/discovery.out" 2>&1
grep -q "^entry: 10.1.2.1:4420 $NQN trtype 3 treq 1 sectype 2$" "$work/discovery.out" &&
  grep -q "^entry: 10.1.1.1:4421 $NQN trtype 3 treq 0 sectype 0$" "$work/discovery.out" &&
  pass "discovery log: TLS ports with TREQ required and TSAS TLS 1.3, the plaintext port without" ||
  fail "discovery log entries: $(cat "$work/discovery.out")"

# A plaintext host at a TLS-required port, and a TLS host at a plaintext one.
if run_fio plain2tls --traddr=10.1.2.1 --transport=tcp --rw=read --bs=4k --size=1m --hostnqn="$h1" --ctrl_loss_tmo=0 >/dev/null; then
  fail "a plaintext host got through a TLS-required port"
elif grep -q 'closed by the controller (a port that requires TLS closes plaintext connections: tls=1' "$work/plain2tls.log" &&
  grep -q 'plaintext connection from 10.1.2.2:[0-9]* refused: the port requires TLS (its first byte is 0x00, an ICReq)' "$work/target.log"; then
  pass "plaintext host, TLS port: refused; the target logs the plaintext ICReq, the engine suggests tls=1"
else fail "plaintext host at a TLS port: $(tail -2 "$work/plain2tls.log")"; fi
if run_fio tls2plain --traddr=10.1.1.1:4421 --transport=tcp --rw=read --bs=4k --size=1m "${TLS1[@]}" --ctrl_loss_tmo=0 >/dev/null; then
  fail "a TLS host connected to a plaintext port"
elif grep -q 'TLS: the TLS handshake failed: the peer answered in plaintext NVMe/TCP (PDU type 0x03), not TLS: its port does not use TLS' "$work/tls2plain.log"; then
  pass "TLS host, plaintext port: the engine says the port does not use TLS"
else fail "TLS host at a plaintext port: $(tail -2 "$work/tls2plain.log")"; fi

# A wrong PSK: the handshake fails on both sides, the target says why and
# makes the address wait (then the right key gets in again).
if run_fio wrong --traddr=10.1.3.1 --transport=tcp --rw=read --bs=4k --size=1m --tls=1 --hostnqn="$h1" \
  --tls_key_file="$keys/wrong" --ctrl_loss_tmo=0 >/dev/null; then fail "a wrong PSK was accepted"
elif grep -q "path 10.1.3.1:4420 qid 0: TLS: the TLS handshake failed: .*alert handshake failure (the controller may not know identity 'NVMe1R01 $h1 $NQN" "$work/wrong.log" &&
  grep -q "connection from 10.1.3.2:[0-9]*: the TLS handshake failed: PSK identity refused: the identity's digest does not match host $h1's key" "$work/target.log"; then
  pass "wrong PSK: refused on both sides, each with its reason"
else fail "wrong PSK: $(tail -2 "$work/wrong.log"; grep -m2 'handshake failed' "$work/target.log")"; fi
# Right away again: the address waits (the rate limit), even with the right key.
if run_fio retry --traddr=10.1.3.1 --transport=tcp --rw=read --bs=4k --size=1m "${TLS1[@]}" --ctrl_loss_tmo=0 >/dev/null; then
  fail "a retry right after a failed handshake was let in"
elif grep -q "refusing connections from 10.1.3.2 for a while: its last authentication failed" "$work/target.log"; then
  pass "an immediate retry from that address is refused (rate limit)"
else fail "retry: $(tail -2 "$work/retry.log")"; fi
# Version 0 with the wrong key: the identity cannot tell, the binder does.
forgive 10.1.3.2
if run_fio wrong0 --traddr=10.1.3.1 --transport=tcp --rw=read --bs=4k --size=1m --tls=1 --hostnqn="$h1" \
  --tls_key_file="$keys/wrong" --tls_identity="NVMe0R01 $h1 $NQN" --ctrl_loss_tmo=0 >/dev/null; then fail "a wrong PSK (v0) was accepted"
elif grep -q "connection from 10.1.3.2:[0-9]*: the TLS handshake failed: .*binder" "$work/target.log"; then
  pass "wrong PSK, version 0 identity: the binder does not verify ($(grep -o 'TLS handshake failed: [^(]*' "$work/wrong0.log" | head -1))"
else fail "wrong PSK, version 0: $(tail -2 "$work/wrong0.log"; grep 'handshake failed' "$work/target.log" | tail -1)"; fi
forgive 10.1.3.2
run_fio v0 --traddr=10.1.3.1 --transport=tcp --rw=randrw --bs=16k --size=4m "${V[@]}" "${TLS1[@]}" \
  --tls_identity="NVMe0R01 $h1 $NQN" >/dev/null &&
  grep -q "identity 'NVMe0R01 $h1 $NQN'" "$work/target.log" && pass "forgiven: a version 0 identity with the right key, verified" ||
  fail "version 0 identity: $(tail -2 "$work/v0.log")"

# Two TLS paths, path 2 blackholed for 4 s: it fails over, reconnects with
# a new handshake and carries I/O again; no I/O error.
hs() { grep -c "connection from 10.1.2.2:[0-9]*: TLS 1.3" "$work/target.log"; }
before=$(hs)
run_fio blackhole --traddr=10.1.1.1,10.1.2.1 --transport=tcp --iopolicy=round-robin --rw=randrw --bs=16k --iodepth=16 \
  --size=64m --time_based=1 --runtime=10 "${V[@]}" "${TLS1[@]}" --reconnect_delay=0.5 --io_timeout=2000 \
  --path_stats="$work/blackhole.paths" >"$work/blackhole.out" 2>&1 &
fio_pid=$!
until_within 10 "I/O on path 2 before the blackhole" flowing 2
"$LAB" -n "$lab" loss 2 100 || fail "lab: loss 2 100"
sleep 4 # the fault: 4 s of blackhole
"$LAB" -n "$lab" loss 2 0 || fail "lab: loss 2 0"
wait "$fio_pid" && json blackhole | jq -e '[.jobs[].error] | all(. == 0)' >/dev/null &&
  jq -e '.paths[1].failovers > 0 and .paths[1].reconnects > 0 and .paths[1].tls.mode == "user-tls"' "$work/blackhole.paths" >/dev/null &&
  (($(hs) - before >= 3)) &&
  pass "blackholed TLS path: failed over, reconnected through $(($(hs) - before - 2)) new handshake(s), no I/O error" ||
  fail "blackhole over TLS: $(tail -3 "$work/blackhole.out"; jq -c '.paths[1]' "$work/blackhole.paths" 2>/dev/null; echo "handshakes $(($(hs) - before))")"

# At run time (the control socket): the plaintext port 10.1.1.1:4421
# (port 5) made TLS-only and a new host's key given, then taken back.
h3=nqn.2026-12.io.mpnvme:tls-runtime k3=$(nvme gen-tls-key --hmac=1)
(umask 077 && echo "$k3" >"$keys/h3")
T3=(--traddr=10.1.1.1:4421 --transport=tcp --rw=randrw --bs=16k --size=4m "${V[@]}" --hostnqn="$h3" --ctrl_loss_tmo=0)
ctl port tls 5 required >/dev/null && ctl host tls-key "$h3" "@$keys/h3" >/dev/null || fail "ctl port tls / host tls-key"
run_fio rt-plain "${T3[@]}" >/dev/null && fail "plaintext got through a port made TLS-only" ||
  grep -q "plaintext connection from 10.1.1.2:[0-9]* refused: the port requires TLS" "$work/target.log" ||
  fail "plaintext on the port made TLS-only: $(tail -2 "$work/rt-plain.log")"
run_fio rt-tls "${T3[@]}" --tls=1 --tls_key_file="$keys/h3" >/dev/null &&
  grep -q "identity 'NVMe1R01 $h3 $NQN " "$work/target.log" &&
  pass "control socket: port tls 5 required and host tls-key: plaintext refused, the new host's TLS verified" ||
  fail "run-time TLS: $(tail -2 "$work/rt-tls.log")"
ctl host tls-key "$h3" - >/dev/null && ctl port tls 5 none >/dev/null || fail "ctl host tls-key - / port tls none"
run_fio rt-gone "${T3[@]}" --tls=1 --tls_key_file="$keys/h3" >/dev/null && fail "TLS got through a port made plaintext again" ||
  grep -q "TLS: the TLS handshake failed: the peer answered in plaintext NVMe/TCP" "$work/rt-gone.log" &&
  pass "port tls 5 none: the TLS host is told the port does not use TLS" || fail "after port tls none: $(tail -2 "$work/rt-gone.log")"

for k in "$k1" "$k2" "$wrong" "$k3"; do
  if grep -qF -- "${k:16:24}" "$work"/*.log "$work"/*.json "$work"/*.out; then fail "a key appears in a log or in fio's output"; break; fi
done
pass "no key in the target's log, the engine's logs or fio's output"
finish
