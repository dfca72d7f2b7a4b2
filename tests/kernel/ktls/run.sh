#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Kernel TLS on both sides, inside the qemu lab's guest (this machine's
# kernel has no tls module): the engine's kernel TLS against nvmet's (the
# traffic keys the engine installs must match what GnuTLS in tlshd gave
# nvmet), and mpnvme-target's kernel TLS against the engine's user-space
# records (OpenSSL's) and against its kernel TLS, each with verified I/O.
#   tests/kernel/ktls/run.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
state=$(mktemp -d /tmp/mpnvme-ktls.XXXXXX)
source "$here/../../../qemu-lab/machine.sh"
cleanup() { "$qemu_lab/lab.sh" stop "$state"; rm -rf "$state"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- guest console"; console | grep -a 'KTLS\|tlshd\|timed-out'; exit 1; }
engine=$build/engine/fio-mpnvme.so
# An ASan-built engine needs the sanitizer runtime preloaded into fio.
ldd "$engine" | grep -o '/[^ ]*libasan\.so[^ ]*' >"$state/preload" || : >"$state/preload"
MPNVME_LAB_FILES="$here/../shared/tls-keys.sh $state/preload" MPNVME_LAB_TLS=1 MPNVME_LAB_MEM=1024 \
  MPNVME_LAB_BINARIES="$(command -v fio) $engine $build/mpnvme-target/mpnvme-target" \
  "$qemu_lab/lab.sh" start "$state" "$here/guest.sh" || fail "guest did not boot"
wait_for 'KTLS done' 300
console | grep -a '^KTLS'
seen 'KTLS nvmet rc 0' && seen 'KTLS nvmet .*transport in effect: TCP, TLS 1.3 TLS_AES_128_GCM_SHA256 \(ktls\)' ||
  fail "the engine's kernel TLS against nvmet"
echo "ok: engine (kernel TLS) -> nvmet (kernel TLS, tlshd): verified I/O"
seen 'KTLS target-user rc 0' && seen 'KTLS target-user .*\(user-tls\)' ||
  fail "the engine's user-space records against mpnvme-target's kernel TLS"
seen 'KTLS target-ktls rc 0' && seen 'KTLS target-ktls .*\(ktls\)' || fail "kernel TLS on both ends"
seen "KTLS target .*TLS 1.3 TLS_AES_128_GCM_SHA256 \(records in the kernel\)" ||
  fail "mpnvme-target did not hand its connections to kernel TLS"
echo "ok: mpnvme-target (kernel TLS) <- engine user-space records and engine kernel TLS: verified I/O"
echo PASS
