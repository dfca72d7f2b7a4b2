#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# mpnvme-iopolicy on a kernel booted with native NVMe multipath off.
#   tests/kernel/iopolicy-nomp/run.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
state=$(mktemp -d /tmp/mpnvme-nomp.XXXXXX)
trap '"$qemu_lab/lab.sh" stop "$state"; rm -rf "$state"' EXIT
source "$here/../../../qemu-lab/machine.sh"
fail() { echo "FAIL: $*"; console | grep -a '^NOMP'; exit 1; }
MPNVME_LAB_BINARIES="$build/toolkit/nvmet/mpnvme-nvmet $build/toolkit/iopolicy/mpnvme-iopolicy" \
MPNVME_LAB_FILES="$here/../shared/nvmet-two-paths.fio" MPNVME_LAB_APPEND="nvme_core.multipath=N" \
  "$qemu_lab/lab.sh" start "$state" "$here/guest.sh" || { echo "FAIL: boot"; exit 1; }
wait_for 'NOMP done' 120
console | grep -a '^NOMP'
seen 'NOMP multipath=N' || fail "multipath was not off"
seen 'NOMP show: .*nqn.2026-11.io.mpnvme:nvmet-lab' || fail "show lists no subsystem"
seen 'NOMP connect: device /dev/nvme[0-9]n1' || fail "connect printed no device"
seen 'NOMP set rc=1 mpnvme-iopolicy: native NVMe multipath is disabled \(nvme_core multipath=N\)' ||
  fail "set was not refused with the reason"
echo PASS
