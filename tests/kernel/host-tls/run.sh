#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The Linux kernel NVMe/TCP host (qemu lab, 6.12, tlshd 1.0 from Debian 13
# doing its handshakes) against mpnvme-target over TLS on TCP: the host
# offers the version 1 identity of the PSK nvme-cli inserted, and the data
# it writes reads back the same; PSKs inserted by Debian 13's nvme-cli
# (libnvme's older derivation) are recognised by their identity's digest;
# a plaintext host is refused by the TLS port, and a key the target does
# not have fails the handshake, each logged with the reason.
#   tests/kernel/host-tls/run.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
nqn=nqn.2026-12.io.mpnvme:host-tls
source "$here/../../../qemu-lab/machine.sh"
kernel_host_test hosttls 'HOSTTEST|tlshd|nvme'
source "$here/../shared/tls-keys.sh"
port=$(free_port)
read -r rfc_nqn _ rfc_key <<<"$(grep ':tls-sha256 ' <<<"$TLS_HOSTS")"
read -r compat_nqn _ compat_key <<<"$(grep ':tls-compat ' <<<"$TLS_HOSTS")"
mkdir -m 700 "$state/keys"
(umask 077 && echo "$rfc_key" >"$state/keys/rfc" && echo "$compat_key" >"$state/keys/compat")
start_machine_target "$state/target.log" --transport tcp --listen "127.0.0.1:$port:tls" --subnqn "$nqn" --ns ram:32m \
  --tls-key "$rfc_nqn=@$state/keys/rfc" --tls-key "$compat_nqn=@$state/keys/compat" --log-level info
MPNVME_LAB_FILES="$here/../shared/tls-keys.sh" MPNVME_LAB_TLS=1 MPNVME_LAB_APPEND="mp.port=$port mp.nqn=$nqn" "$qemu_lab/lab.sh" start "$state" \
  "$here/guest.sh" || fail "guest did not boot"
wait_for 'HOSTTEST done' 240
console | grep -a HOSTTEST
seen 'HOSTTEST .* timed-out' && fail "a step of the kernel host did not happen in time: $(console | grep -a 'timed-out')"

seen 'HOSTTEST rfc connected' || fail "the kernel host could not connect over TLS"
expected=$(yes mpnvme-tls | head -c 8388608 | md5sum | cut -d' ' -f1)
seen "HOSTTEST rfc md5 $expected" || fail "read-back md5 differs from what was written"
[[ $(grep -c "TLS 1.3 TLS_AES_128_GCM_SHA256 (records in user space), identity 'NVMe1R01 $rfc_nqn $nqn " "$state/target.log") -ge 2 ]] ||
  fail "the target did not take the kernel host's admin and I/O queues over TLS with its version 1 identity"
echo "ok: the kernel host's queues over TLS (version 1 identity, RFC 8446 derivation), 8 MiB written and read back"
seen 'HOSTTEST compat connected' && seen "HOSTTEST compat md5 $expected" ||
  fail "the kernel host with PSKs of Debian 13's nvme-cli (older derivation) could not read the data"
echo "ok: PSKs derived by Debian 13's nvme-cli are recognised by their digest; the same data read back"
seen 'HOSTTEST plain refused' && grep -q 'plaintext connection from 127.0.0.1:[0-9]* refused: the port requires TLS' "$state/target.log" ||
  fail "a plaintext kernel host was not refused by the TLS port"
echo "ok: the kernel host without TLS is refused, and the target logs the plaintext ICReq"
seen 'HOSTTEST wrong refused' && grep -q "PSK identity refused: no TLS key for host nqn.2026-12.io.mpnvme:tls-unknown" "$state/target.log" ||
  fail "a host whose key the target does not have got in, or the refusal was not logged"
echo "ok: a key the target does not have fails the handshake, and the target says why"
for k in "$rfc_key" "$compat_key" "$TLS_WRONG_KEY"; do grep -qF -- "${k:16:24}" "$state/target.log" && fail "a key is in the target's log"; done
stop_machine_target "$state/target.log"
echo PASS
