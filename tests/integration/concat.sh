#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Secure channel concatenation between the engine (concat=1) and
# mpnvme-target (the kernel lab runs each against the Linux side): a host
# with only a DH-HMAC-CHAP key gets TLS from its admin queue's
# authentication. Verified I/O over TCP on two paths (each path its own
# generated PSK) and over MPTCP with 2 subflows, SHA-256 and SHA-384; a
# capture of the lab shows none of the pattern fio wrote; a wrong key is
# refused; an identity no transaction generated fails the handshake; a
# hostile host's cases (concat_hostile.py); no key appears in any log (test_secure_concat keeps the generated PSKs'
# bounds and their end when a host's keys change).
source "$(dirname "$0")/lib.sh"
lab_up --paths 2 --cc cubic
h1=nqn.2026-12.io.mpnvme:concat-host h2=nqn.2026-12.io.mpnvme:concat-other
keys=$work/keys && mkdir -m 700 "$keys"
(umask 077 && nvme gen-dhchap-key --hmac=1 -n "$h1" >"$keys/h1" && nvme gen-dhchap-key --hmac=2 -n "$h2" >"$keys/h2" &&
  nvme gen-dhchap-key --hmac=1 -n "$h1" >"$keys/wrong" && nvme gen-tls-key --hmac=1 >"$keys/tls")
start_target --listen 10.1.1.1:tls-optional,10.1.2.1:tls-optional --subnqn "$NQN" --ns ram:128m \
  --dhchap-key "$h1=@$keys/h1" --dhchap-key "$h2=@$keys/h2" --control "$work/control" --auth-backoff 60 --log-level info
PATTERN=6d706e766d652d636f6e6361742d64617461 # "mpnvme-concat-data"
V=(--verify=pattern --verify_pattern="0x$PATTERN" --verify_fatal=1 --do_verify=1)

sniff_out=$work/tcp.cap
in_target python3 "$root/tests/integration/sniff.py" $PATTERN "$sniff_out" &
sniff_pid=$!
until_within 5 "the capture to start" test -e "$sniff_out.ready"
# TCP on both paths: each path's association generates its own PSK.
run_fio tcp --traddr=10.1.1.1,10.1.2.1 --transport=tcp --iopolicy=round-robin --rw=write --bs=64k --iodepth=8 --size=16m \
  "${V[@]}" --hostnqn="$h1" --dhchap_secret_file="$keys/h1" --concat=1 --path_stats="$work/tcp.paths" --log_level=info >/dev/null
rc=$?
touch "$sniff_out.stop"
wait "$sniff_pid" || fail "the capture failed"
generated=$(grep -c "TLS PSK generated for identity 'NVMe1G01 $h1 $NQN " "$work/target.log")
served=$(grep -c "TLS 1.3 TLS_AES_128_GCM_SHA256 (.*), identity 'NVMe1G01 $h1 $NQN " "$work/target.log")
((rc == 0)) && jq -e '[.paths[] | select(.tls.cipher == "TLS_AES_128_GCM_SHA256")] | length == 2' "$work/tcp.paths" >/dev/null &&
  ((generated >= 2 && served >= 4)) && grep -q "secure channel NEWTLSPSK" "$work/target.log" &&
  pass "TCP, 2 paths: verified over TLS on generated PSKs ($generated generated, $served TLS connections on them)" ||
  fail "TCP concat: rc $rc, $generated generated, $served served: $(tail -3 "$work/tcp.log"; cat "$work/tcp.paths" 2>/dev/null)"
jq -e '.hits == 0 and .bytes > 8000000' "$work/tcp.cap" >/dev/null &&
  pass "capture: $(jq -r .bytes "$work/tcp.cap") bytes on the wire, the pattern fio wrote appears 0 times" ||
  fail "capture of the concat run: $(cat "$work/tcp.cap")"

# MPTCP with 2 subflows, a SHA-384 transaction: TLS_AES_256_GCM_SHA384 in user space.
in_host ip mptcp limits set subflows 1 add_addr_accepted 0
run_fio mptcp --traddr=10.1.1.1 --transport=mptcp --mptcp_join_wait=2000 --rw=randrw --bs=128k --iodepth=16 --size=32m \
  "${V[@]}" --hostnqn="$h2" --dhchap_secret_file="$keys/h2" --dhchap_hash=sha384 --concat=1 \
  --path_stats="$work/mptcp.paths" >/dev/null &&
  jq -e '.paths[0].subflows == 2 and .paths[0].tls.mode == "user-tls" and
    .paths[0].tls.cipher == "TLS_AES_256_GCM_SHA384"' "$work/mptcp.paths" >/dev/null &&
  grep -q "TLS PSK generated for identity 'NVMe1G02 $h2 $NQN " "$work/target.log" &&
  pass "MPTCP with 2 subflows: verified over TLS_AES_256_GCM_SHA384 on a generated SHA-384 PSK" ||
  fail "MPTCP concat: $(tail -3 "$work/mptcp.log"; jq -c '.paths[0]' "$work/mptcp.paths" 2>/dev/null)"
in_host ip mptcp limits set subflows 8 add_addr_accepted 8

# A wrong DH-HMAC-CHAP key: no PSK, the host is told why.
run_fio wrong --traddr=10.1.1.1 --transport=tcp --rw=read --bs=4k --size=1m --hostnqn="$h1" \
  --dhchap_secret_file="$keys/wrong" --concat=1 --ctrl_loss_tmo=0 >/dev/null &&
  fail "a wrong key got through" ||
  { grep -q "controller sent AUTH_Failure1 after DH-HMAC-CHAP_Reply, reason 'authentication failed'" "$work/wrong.log" &&
    grep -q "failed DH-HMAC-CHAP authentication: the host's response does not match its key" "$work/target.log" &&
    pass "wrong key: refused on both sides with the reason" || fail "wrong key: $(tail -3 "$work/wrong.log")"; }
forgive 10.1.1.2

# An identity no transaction generated (offered with a TLS key of the
# host's choosing): the handshake fails, the target says why.
fake="NVMe1G01 $h1 $NQN ujE2iA8xKXnzmMELIwhx+tbQokMNqYXaC5QTTaW4oAw="
run_fio forged --traddr=10.1.2.1 --transport=tcp --rw=read --bs=4k --size=1m --hostnqn="$h1" --tls=1 \
  --tls_key_file="$keys/tls" --tls_identity="$fake" --ctrl_loss_tmo=0 >/dev/null && fail "a forged generated identity got through" ||
  { grep -q "no generated PSK with this identity: host $h1 has not passed DH-HMAC-CHAP with secure channel concatenation" \
    "$work/target.log" && pass "an identity no transaction generated fails the handshake, with the reason" ||
    fail "forged identity: $(grep -i "10.1.2.2" "$work/target.log" | tail -3)"; }
forgive 10.1.2.2

# A host the engine would never be (tests/pylib/concat_peer.py): the
# holes a hostile probe found, each checked (concat_hostile.py says which).
(umask 077 && nvme gen-dhchap-key --hmac=1 -n "$h1" >"$keys/h1b")
in_host python3 "$root/tests/integration/concat_hostile.py" 10.1.1.1 4420 "$NQN" "$h1" "$keys/h1" "$keys/h1b" \
  "$LAB" -n "$lab" exec target "$TARGET" ctl "$work/control" || fail "concat_hostile.py"
grep -q "no TLS PSK kept for host $h1: its keys changed during the transaction" "$work/target.log" &&
  pass "the target logs why the rotated-out transaction got no PSK" || fail "no log line for the rotated-out transaction"
grep -q 'nqn.x:\\x1b\[31mRED' "$work/target.log" && ! grep -q $'\x1b' "$work/target.log" &&
  pass "control characters of a ClientHello's identity reach the log escaped" ||
  fail "the refused identity's control characters: $(grep -a 'nqn.x:' "$work/target.log" | tail -1 | cat -v)"
cat "$keys"/* >"$work/secrets"
if grep -qF -f "$work/secrets" "$work"/*.log "$work"/*.json 2>/dev/null; then fail "a key appears in a log"; else
  pass "no key in any log or output"; fi
finish
