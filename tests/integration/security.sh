#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# What a peer that holds no key can do, tried as an attacker would:
#  1. an impostor TLS target (a certificate, no PSK): the engine refuses it
#     in every TLS mode over TCP and MPTCP, and the impostor receives no
#     byte of NVMe/TCP;
#  2. a version 0 PSK identity whose NQNs are too long for the PSK
#     derivation: mpnvme-target refuses it, logs why and keeps serving;
#  3. DH-HMAC-CHAP without the key (hostile_auth.py): a wrong reply counts
#     even when the peer drops before reading AUTH_Failure1, negotiations
#     are limited, a short receive loses nothing, a host may authenticate
#     again, and neither set-up nor authentication may stall forever; and
#     with a key on the command line, a host without one is refused.
source "$(dirname "$0")/lib.sh"
lab_up --paths 2
host=nqn.2014-08.org.nvmexpress:uuid:5e1f0000-0000-4000-8000-00000000000a
keys=$work/keys && mkdir -m 700 "$keys"
(umask 077 && nvme gen-tls-key --hmac=1 >"$keys/psk")
(umask 077 && nvme gen-dhchap-key --hmac=0 --nqn="$host" >"$keys/dhchap")

# 1. The impostor: TLS 1.3 with a self-signed certificate and no PSK, on
# the target's address; it logs the bytes it receives after a handshake.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=impostor -days 1 \
  -keyout "$work/impostor.key" -out "$work/impostor.crt" 2>/dev/null || fail "openssl req"
"$LAB" -n "$lab" exec target python3 -c '
import socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.minimum_version = ssl.TLSVersion.TLSv1_3
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
srv = socket.create_server(("10.1.1.1", 4420))
print("impostor ready", flush=True)
while True:
    conn, _ = srv.accept()
    try:
        tls = ctx.wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError) as e:
        print(f"handshake failed: {e}", flush=True)
        continue
    tls.settimeout(3)
    got = b""
    try:
        while len(got) < 4096:
            chunk = tls.recv(4096)
            if not chunk:
                break
            got += chunk
    except (OSError, ssl.SSLError):
        pass
    print(f"handshake done, then {len(got)} bytes received", flush=True)
    tls.close()
' "$work/impostor.crt" "$work/impostor.key" >"$work/impostor.log" 2>&1 &
impostor=$!
until_within 5 "the impostor ready" grep -q 'impostor ready' "$work/impostor.log"
for variant in tcp:user tcp:ktls tcp:auto mptcp:user mptcp:auto; do
  transport=${variant%:*} mode=${variant#*:}
  name=impostor-$transport-$mode
  before=$(grep -c 'handshake' "$work/impostor.log")
  if run_fio "$name" --traddr=10.1.1.1 --transport="$transport" --tls=1 --tls_key_file="$keys/psk" --tls_mode="$mode" \
    --hostnqn="$host" --rw=read --size=1m --ctrl_loss_tmo=0 >/dev/null; then
    fail "$name: the engine ran I/O against a target that does not hold the PSK"
  elif grep -q "the target answered with a certificate instead of the pre-shared key" "$work/$name.log"; then
    pass "$name: refused, saying the target did not use the PSK"
  else
    fail "$name: unexpected error $(grep -m2 -i 'tls\|error' "$work/$name.log")"
  fi
  for _ in $(seq 30); do (($(grep -c 'handshake' "$work/impostor.log") > before)) && break; sleep 0.1; done
done
grep -q 'handshake done' "$work/impostor.log" && fail "the impostor completed a handshake: $(grep 'handshake done' "$work/impostor.log")" ||
  pass "the impostor never completed a handshake, and received no NVMe/TCP: $(sort "$work/impostor.log" | uniq -c | tr '\n' ';')"
kill "$impostor"; wait "$impostor" 2>/dev/null

# 2. The long identity: a host and a subsystem the target knows, with NQNs
# of 127 and 182 bytes (each legal), make a version 0 identity too long for
# its PSK derivation.
long_host="nqn.2014-08.org.nvmexpress:$(printf 'h%.0s' $(seq 100))"
long_sub="nqn.2026-11.io.mpnvme:$(printf 's%.0s' $(seq 160))"
start_target --listen 10.1.1.1:tls,10.1.2.1:tls --subnqn "$long_sub" --ns ram:64m --tls-key "$host=@$keys/psk" \
  --tls-key "$long_host=@$keys/psk" --log-level info
long="NVMe0R01 $long_host $long_sub"
in_host timeout 10 openssl s_client -connect 10.1.2.1:4420 -tls1_3 -psk_identity "$long" -psk "$(printf '00%.0s' $(seq 32))" \
  -ciphersuites TLS_AES_128_GCM_SHA256 </dev/null >"$work/s_client.log" 2>&1
for _ in $(seq 50); do # until the target says why, or dies
  grep -q "PSK identity refused" "$work/target.log" || ! kill -0 "$target_pid" 2>/dev/null && break
  sleep 0.1
done
kill -0 "$target_pid" 2>/dev/null && pass "the target survived a version 0 identity of ${#long} bytes" ||
  { fail "the target died on a long identity: $(tail -3 "$work/target.log")"; target_pid=; }
grep -q "PSK identity refused: a version 0 identity of ${#long} bytes, longer than the 255 its PSK derivation can take" \
  "$work/target.log" && pass "the refusal is logged with its reason" || fail "no refusal logged: $(grep -i 'tls\|psk' "$work/target.log" | tail -3)"
run_fio after-long --traddr=10.1.1.1 --subnqn="$long_sub" --transport=tcp --tls=1 --tls_key_file="$keys/psk" --hostnqn="$host" \
  --rw=randrw --bs=16k --iodepth=8 --size=8m --verify=crc32c --verify_fatal=1 --do_verify=1 >/dev/null &&
  pass "a host with the key is served after it, verified" || fail "after the long identity: $(tail -3 "$work/after-long.log")"
[[ -n $target_pid ]] && stop_target

# 3. DH-HMAC-CHAP without the key, each case from an address of its own.
for i in $(seq 11 17); do in_host ip addr add "10.1.1.$i/24" dev h1; done
start_target --listen 10.1.1.1 --transport tcp --subnqn "$NQN" --ns ram:64m --dhchap-key "$host=@$keys/dhchap" \
  --dhchap-dhgroup null --log-level info
in_host python3 "$root/tests/integration/hostile_auth.py" 10.1.1.1 4420 "$NQN" "$host" "$keys/dhchap" \
  $(seq -f '10.1.1.%g' 11 17) || fail "hostile authentication peers"
kill -0 "$target_pid" 2>/dev/null || fail "the target died"
# A key on the command line names the host that gets in: another host,
# without a key, may not read or write (no --allow-host was given).
if run_fio stranger --traddr=10.1.1.1 --transport=tcp --hostnqn=nqn.2026-12.io.mpnvme:stranger --rw=read --size=1m \
  --ctrl_loss_tmo=0 >/dev/null; then fail "a host without a key read data from a target whose only host has a key"
elif grep -q "nqn.2026-12.io.mpnvme:stranger' is not allowed on subsystem" "$work/stranger.log"; then pass "a host without a key is refused at Connect"
else fail "stranger: unexpected error $(tail -2 "$work/stranger.log")"; fi
stop_target || fail "target exit status"

# Secrets given inline: warned about, gone from the target's command line
# (what /proc/PID/cmdline shows every user), and in its memory only on
# pages a core dump leaves out (smaps: VmFlags dd): secret_scan.py reads
# every other readable mapping for the key's text and its bytes. A parser
# leaves copies on the heap (CLI11 did).
inline_key=$(cat "$keys/dhchap") inline_psk=$(cat "$keys/psk")
start_target --listen 10.1.1.1 --subnqn "$NQN" --ns ram:16m --dhchap-key "$host=$inline_key" --tls-key="$host=$inline_psk" \
  --log-level info
for opt in --dhchap-key --tls-key; do
  grep -q -- "$opt gives a secret on the command line" "$work/target.log" && pass "an inline $opt is warned about" ||
    fail "no warning about the inline $opt"
done
for k in "$inline_key" "$inline_psk"; do
  tr '\0' ' ' </proc/"$target_pid"/cmdline | grep -qF -- "$(cut -d: -f3 <<<"$k")" &&
    fail "an inline secret is in /proc/PID/cmdline" || pass "an inline secret is gone from /proc/PID/cmdline"
  found=$(python3 "$root/tests/integration/secret_scan.py" "$target_pid" "$k") &&
    pass "${k%%:*} key: nowhere in memory a core dump would hold" || fail "${k%%:*} key in dumpable memory: $found"
done
run_fio inline-key --traddr=10.1.1.1 --transport=tcp --hostnqn="$host" --dhchap_secret_file="$keys/dhchap" --rw=read \
  --size=1m >/dev/null && pass "the moved key authenticates the host" || fail "inline key: $(tail -2 "$work/inline-key.log")"
stop_target || fail "target exit status"
for k in "$(cut -d: -f3 "$keys/psk")" "$(cut -d: -f3 "$keys/dhchap")"; do
  grep -qF -- "${k:0:20}" "$work"/*.log && fail "a key appears in a log"
done
pass "no key in any log"
finish
