#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The engine with secure channel concatenation (concat=1) against nvmet on
# Linux 7.2 inside the qemu lab's guest, tlshd doing nvmet's handshakes:
# the engine authenticates its admin queue in plaintext asking for a
# generated PSK, nvmet inserts the PSK it derived into its keyring, and the
# engine's TLS queues on the PSK it derived itself get in: verified I/O
# with the records in the kernel and in user space, and on a SHA-384
# transaction (TLS_AES_256_GCM_SHA384). A wrong key is refused
# by nvmet, and a host nvmet gives the NULL DH group is refused with
# "secure channel concatenation mismatch", as nvmet refuses it.
#   tests/kernel/engine-concat/run.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
state=$(mktemp -d /tmp/mpnvme-engine-concat.XXXXXX)
# Concatenation came with Linux 6.14: Debian's newest kernel unless told.
export MPNVME_LAB_KERNEL=${MPNVME_LAB_KERNEL:-latest}
source "$here/../../../qemu-lab/machine.sh"
cleanup() { "$qemu_lab/lab.sh" stop "$state"; rm -rf "$state"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- guest console"; console | grep -a 'CONCAT\|tlshd\|timed-out'; exit 1; }
source "$here/../shared/auth-keys.sh"
engine=$build/engine/fio-mpnvme.so
# An ASan-built engine needs the sanitizer runtime preloaded into fio.
ldd "$engine" | grep -o '/[^ ]*libasan\.so[^ ]*' >"$state/preload" || : >"$state/preload"
MPNVME_LAB_FILES="$here/../shared/auth-keys.sh $state/preload" MPNVME_LAB_TLS=1 MPNVME_LAB_MEM=1024 \
  MPNVME_LAB_BINARIES="$(command -v fio) $engine" "$qemu_lab/lab.sh" start "$state" "$here/guest.sh" ||
  fail "guest did not boot"
wait_for 'CONCAT done' 300
console | grep -a '^CONCAT'
for mode in ktls user; do
  seen "CONCAT $mode rc 0" && seen "CONCAT $mode .*transport in effect: TCP, TLS 1.3 TLS_AES_128_GCM_SHA256 \\(($mode|user-tls)\\)" &&
    seen "CONCAT $mode .*association up in .* \\(authentication and TLS on its PSK included\\)" ||
    fail "the engine with concat=1 and tls_mode=$mode against nvmet"
done
seen "CONCAT ktls .*\\(ktls\\)" || fail "the ktls run did not hand its records to kernel TLS"
echo "ok: engine concat=1 -> nvmet 7.2: verified randrw on nvmet's generated PSK, records in the kernel and in user space"
seen "CONCAT sha384 rc 0" && seen "CONCAT sha384 .*transport in effect: TCP, TLS 1.3 TLS_AES_256_GCM_SHA384 \\(user-tls\\)" ||
  fail "the engine with a SHA-384 transaction against nvmet"
echo "ok: a SHA-384 transaction: verified over TLS_AES_256_GCM_SHA384 on the PSK nvmet generated"
seen 'CONCAT wrong rc [1-9]' && seen "CONCAT wrong .*controller sent AUTH_Failure1 after DH-HMAC-CHAP_Reply, reason 'authentication failed'|CONCAT wrong .*the connection ended during Authentication Receive" ||
  fail "a wrong key was not refused with nvmet's reason"
echo "ok: a wrong key is refused by nvmet"
seen 'CONCAT null rc [1-9]' && seen "CONCAT null .*controller sent AUTH_Failure1 after AUTH_Negotiate, reason 'secure channel concatenation mismatch'" ||
  fail "nvmet's NULL-group host was not refused as a concatenation mismatch"
echo "ok: a host nvmet gives the NULL DH group: nvmet refuses concatenation (mismatch), the engine says so"
echo PASS
