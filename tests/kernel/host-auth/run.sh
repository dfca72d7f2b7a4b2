#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The Linux kernel NVMe/TCP host (qemu lab, 6.12) against mpnvme-target with
# DH-HMAC-CHAP: unidirectional with an FFDHE group and SHA-512 (the
# target's first choices), data written and read back, re-authenticated
# on request and read again; bidirectional
# (the host checks the target's answer); a host with a key configured is
# refused without one and with the wrong one, and the target logs why.
#   tests/kernel/host-auth/run.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
nqn=nqn.2026-12.io.mpnvme:host-auth
source "$here/../../../qemu-lab/machine.sh"
kernel_host_test hostauth 'HOSTTEST'
source "$here/../shared/auth-keys.sh"
port=$(free_port)
read -r uni_nqn uni_key _ <<<"$(grep ':host-sha256 ' <<<"$AUTH_HOSTS")"
read -r bidi_nqn bidi_key bidi_ctrl _ <<<"$(grep ':host-sha512 ' <<<"$AUTH_HOSTS")"
mkdir -m 700 "$state/keys"
(umask 077 && echo "$uni_key" >"$state/keys/uni" && echo "$bidi_key" >"$state/keys/bidi" && echo "$bidi_ctrl" >"$state/keys/ctrl")
start_machine_target "$state/target.log" --transport tcp --listen "127.0.0.1:$port" --subnqn "$nqn" --ns ram:32m \
  --dhchap-key "$uni_nqn=@$state/keys/uni" --dhchap-key "$bidi_nqn=@$state/keys/bidi" --dhchap-ctrl-key "$bidi_nqn=@$state/keys/ctrl" \
  --dhchap-hash sha512,sha256 --dhchap-dhgroup ffdhe3072,null --log-level info
MPNVME_LAB_FILES="$here/../shared/auth-keys.sh" MPNVME_LAB_APPEND="mp.port=$port mp.nqn=$nqn" "$qemu_lab/lab.sh" start "$state" \
  "$here/guest.sh" || fail "guest did not boot"
wait_for 'HOSTTEST done' 240
console | grep -a HOSTTEST
seen 'HOSTTEST .* timed-out' && fail "a step of the kernel host did not happen in time: $(console | grep -a 'timed-out')"

seen 'HOSTTEST uni connected' || fail "the kernel host could not connect with its key"
expected=$(yes mpnvme-auth | head -c 8388608 | md5sum | cut -d' ' -f1)
seen "HOSTTEST uni md5 $expected" || fail "unidirectional: read-back md5 differs from what was written"
[[ $(grep -c "host $uni_nqn authenticated (hmac(sha512), DH group ffdhe3072)" "$state/target.log") -ge 2 ]] ||
  fail "the target did not authenticate the kernel host's admin and I/O queues with SHA-512 and ffdhe3072"
echo "ok: unidirectional (hmac(sha512), ffdhe3072) on every queue, 8 MiB written and read back"
# Re-authentication on request (the host's dhchap_secret written): each
# queue authenticates again on the live connection, the data still reads
# back, and the controller stays live.
seen 'HOSTTEST uni reauth requested' || fail "could not ask the kernel host to re-authenticate"
seen "HOSTTEST uni after-reauth md5 $expected" || fail "after re-authentication the data did not read back"
seen 'HOSTTEST uni state live' || fail "the controller is not live after re-authentication"
authentications=$(grep -c "host $uni_nqn authenticated (hmac(sha512), DH group ffdhe3072)" "$state/target.log")
((authentications >= 4)) || fail "$authentications authentications of the kernel host: its re-authentication did not happen"
echo "ok: re-authentication on request: $authentications queue authentications, data read back, controller live"

seen 'HOSTTEST bidi connected' && seen 'HOSTTEST bidi device nvme[0-9]+n1' || fail "bidirectional: the kernel host did not connect"
grep -q "host $bidi_nqn authenticated (hmac(sha512), DH group ffdhe3072, bidirectional)" "$state/target.log" ||
  fail "the target did not answer the kernel host's challenge"
echo "ok: bidirectional: the kernel host accepted the target's answer"

seen 'HOSTTEST nokey refused' || fail "a host with a key configured connected without one"
echo "ok: without a secret the kernel host cannot connect (the target's Connect asks for authentication)"
seen 'HOSTTEST wrong refused' || fail "the wrong secret was accepted"
grep -q "host $uni_nqn failed DH-HMAC-CHAP authentication: the host's response does not match its key" "$state/target.log" ||
  fail "the target did not log the failed authentication with its reason"
echo "ok: the wrong secret is refused and the target says why"
for k in "$uni_key" "$bidi_key" "$bidi_ctrl"; do grep -qF -- "${k:10:24}" "$state/target.log" && fail "a secret is in the target's log"; done
stop_machine_target "$state/target.log"
echo PASS
