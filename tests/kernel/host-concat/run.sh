#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The Linux kernel NVMe/TCP host (qemu lab, tlshd from Debian 13 doing its
# handshakes) with secure channel concatenation against mpnvme-target: a
# host with only a DH-HMAC-CHAP key authenticates its admin queue in
# plaintext, asking for a generated PSK, and reconnects every queue over
# TLS on it (NVMe1G identity). The data it writes reads back the same; a
# controller reset generates another PSK and the data still reads; a
# SHA-384 host gets the SHA-384 suite; a wrong key is refused with the
# reason. The kernel derives the PSK its own way: a handshake on it is the
# check of mpnvme's derivation.
#   tests/kernel/host-concat/run.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
nqn=nqn.2026-12.io.mpnvme:host-concat
# Concatenation came with Linux 6.14: Debian's newest kernel unless told.
export MPNVME_LAB_KERNEL=${MPNVME_LAB_KERNEL:-latest}
source "$here/../../../qemu-lab/machine.sh"
kernel_host_test hostconcat 'HOSTTEST|tlshd|nvme'
source "$here/../shared/auth-keys.sh"
port=$(free_port)
read -r h256 k256 _ <<<"$(grep ':host-sha256 ' <<<"$AUTH_HOSTS")"
read -r h384 k384 _ <<<"$(grep ':host-sha384 ' <<<"$AUTH_HOSTS")"
mkdir -m 700 "$state/keys"
(umask 077 && echo "$k256" >"$state/keys/h256" && echo "$k384" >"$state/keys/h384")
start_machine_target "$state/target.log" --transport tcp --listen "127.0.0.1:$port:tls-optional" --subnqn "$nqn" --ns ram:32m \
  --dhchap-key "$h256=@$state/keys/h256" --dhchap-key "$h384=@$state/keys/h384" --auth-backoff 0 --log-level info \
  --control "$state/control"
# The SHA-384 host's transactions use SHA-384 (the target picks its first
# allowed hash that the host offers, and Linux offers SHA-256 first).
"$build/mpnvme-target/mpnvme-target" ctl "$state/control" host key "$h384" "dhchap_hash=hmac(sha384)" >/dev/null ||
  fail "the control socket did not set $h384's hash"
MPNVME_LAB_FILES="$here/../shared/auth-keys.sh" MPNVME_LAB_TLS=1 MPNVME_LAB_APPEND="mp.port=$port mp.nqn=$nqn" \
  "$qemu_lab/lab.sh" start "$state" "$here/guest.sh" || fail "guest did not boot"
wait_for 'HOSTTEST done' 240
console | grep -a HOSTTEST
seen 'HOSTTEST .* timed-out' && fail "a step of the kernel host did not happen in time: $(console | grep -a 'timed-out')"

expected=$(yes mpnvme-concat | head -c 8388608 | md5sum | cut -d' ' -f1)
gen256=$(grep -c "TLS PSK generated for identity 'NVMe1G01 $h256 $nqn " "$state/target.log")
tls256=$(grep -c "TLS 1.3 TLS_AES_128_GCM_SHA256 (records in user space), identity 'NVMe1G01 $h256 $nqn " "$state/target.log")
seen 'HOSTTEST sha256 connected' && seen "HOSTTEST sha256 md5 $expected" && ((gen256 >= 1 && tls256 >= 2)) &&
  grep -q "host $h256 authenticated (hmac(sha256), DH group ffdhe[0-9]*, secure channel NEWTLSPSK)" "$state/target.log" ||
  fail "the kernel host with concat could not write and read back over TLS on a generated PSK ($gen256 generated, $tls256 TLS)"
echo "ok: the kernel host's queues over TLS on the PSK both sides generated (NVMe1G01), 8 MiB written and read back"
key1=$(console | grep -a -m1 'HOSTTEST sha256 tls_key' | awk '{print $4}')
key2=$(console | grep -a -m1 'HOSTTEST reset tls_key' | awk '{print $4}')
seen "HOSTTEST reset md5 $expected" && [[ -n $key1 && -n $key2 && $key1 != "$key2" ]] && ((gen256 >= 2)) ||
  fail "after a reset: key $key1 -> $key2, $gen256 generated, $(console | grep -a 'HOSTTEST reset')"
echo "ok: a controller reset generated another PSK (key $key1 -> $key2) and the data reads back"
# SHA-384: both sides derive the same generated PSK when the identity the
# kernel's tlshd offers carries the digest the target computed (an HMAC
# of that PSK). The handshake itself then needs a tlshd whose GnuTLS
# computes SHA-384 PSK binders with SHA-384: unstable's 1.4 (the guest's
# on 7.x) does; Debian 13's 1.0 (GnuTLS 3.8.9), on an older kernel, fails
# it on the host's side (EACCES), and only then may the data not be read.
id384=$(grep -o "TLS PSK generated for identity 'NVMe1G02 $h384 $nqn [^']*'" "$state/target.log" | head -1 | cut -d"'" -f2)
grep -q "host $h384 authenticated (hmac(sha384), DH group ffdhe[0-9]*, secure channel NEWTLSPSK)" "$state/target.log" &&
  [[ -n $id384 ]] && grep -aqF "Using psk identity $id384" <<<"$(console)" ||
  fail "the SHA-384 transaction: no matching generated identity (target '$id384'; $(console | grep -a 'Using psk identity NVMe1G02'))"
if seen "HOSTTEST sha384 md5 $expected" &&
  grep -q "TLS 1.3 TLS_AES_256_GCM_SHA384 (records in user space), identity '$id384'" "$state/target.log"; then
  echo "ok: SHA-384: one generated PSK on both sides (NVMe1G02, digests equal), data read back over TLS_AES_256_GCM_SHA384"
elif seen 'Built from ktls-utils 1\.0\.' && seen 'HOSTTEST sha384 refused: .*TLS handshake complete, error -13'; then
  echo "ok: SHA-384: one generated PSK on both sides (NVMe1G02, digests equal); this guest's tlshd 1.0 fails the SHA-384 handshake itself (EACCES)"
else
  fail "the SHA-384 host neither read back nor failed in tlshd: $(console | grep -a 'HOSTTEST sha384')"
fi
seen 'HOSTTEST wrong refused' && grep -q "host $h256 failed DH-HMAC-CHAP authentication: the host's response does not match its key" \
  "$state/target.log" || fail "a wrong key got in, or the refusal was not logged"
echo "ok: a wrong key is refused before any PSK is generated, and the target says why"
for k in "$k256" "$k384" "$AUTH_WRONG_KEY"; do grep -qF -- "${k:10:24}" "$state/target.log" && fail "a key is in the target's log"; done
stop_machine_target "$state/target.log"
echo PASS
