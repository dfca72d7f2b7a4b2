#!/bin/bash
# mpnvme-iopolicy on a kernel booted with native NVMe multipath off.
#   iopolicy-nomp.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
state=$(mktemp -d /tmp/mpnvme-nomp.XXXXXX)
trap '"$here/lab.sh" stop "$state"; rm -rf "$state"' EXIT
console() { tr -d '\r' <"$state/console.log"; }
MPNVME_LAB_BINARIES="$build/toolkit/nvmet/mpnvme-nvmet $build/toolkit/iopolicy/mpnvme-iopolicy" \
MPNVME_LAB_FILES="$here/jobs/nvmet-two-paths.fio" MPNVME_LAB_APPEND="nvme_core.multipath=N" \
  "$here/lab.sh" start "$state" "$here/iopolicy-nomp.setup.sh" || { echo "FAIL: boot"; exit 1; }
for _ in $(seq 240); do console | grep -q 'NOMP done' && break; sleep 0.5; done
console | grep -a '^NOMP'
console | grep -q 'NOMP multipath=N' || { echo "FAIL: multipath was not off"; exit 1; }
console | grep -q 'NOMP show: .*nqn.2026-11.io.mpnvme:nvmet-lab' || { echo "FAIL: show lists no subsystem"; exit 1; }
console | grep -q 'NOMP connect: device /dev/nvme[0-9]n1' || { echo "FAIL: connect printed no device"; exit 1; }
console | grep -q 'NOMP set rc=1 mpnvme-iopolicy: native NVMe multipath is disabled (nvme_core multipath=N)' ||
  { echo "FAIL: set was not refused with the reason"; exit 1; }
echo PASS
