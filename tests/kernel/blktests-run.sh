#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The blktests guest's PID 1 (blktests.guest.sh): udevd started, then
# blktests' ./check in the guest's Debian root, once per target: against
# nvmet in this kernel over TCP (the reference), and against mpnvme-target
# on the machine through blktests' remote-target mode
# (NVME_TARGET_CONTROL=mpnvme-blktests-control). Each run is framed by
# "BLKTESTS-RUN TARGET" and "BLKTESTS-END TARGET" lines, with ./check's
# own output between; a failed test's output and diff follow its line;
# "BLKTESTS-DONE" at the end. It then idles (PID 1 may not end).
#   blktests-run.sh TARGETS TESTS IMG_SIZE   (comma-separated lists)
set -uo pipefail
idle() { while true; do sleep 3600; done; }
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
/lib/systemd/systemd-udevd --daemon || { echo MPNVME-LAB-FAILED; idle; }
echo "MPNVME-LAB-READY kernel $(uname -r)"
cd /opt/blktests || { echo MPNVME-LAB-FAILED; idle; }
IFS=, read -r -a targets <<<"$1"
IFS=, read -r -a tests <<<"$2"
export NVME_IMG_SIZE=$3 NVMET_TRTYPES=tcp NVMET_BLKDEV_TYPES=device
for target in "${targets[@]}"; do
  echo "BLKTESTS-RUN $target"
  case $target in
    nvmet) unset NVME_TARGET_CONTROL ;;
    mpnvme-target) export NVME_TARGET_CONTROL=/usr/local/sbin/mpnvme-blktests-control ;;
    *) echo "blktests-run: unknown target $target"; continue ;;
  esac
  # Through a pipe: on a terminal ./check rewrites its lines in place.
  ./check -o "/tmp/results-$target" "${tests[@]/#/nvme/}" 2>&1 | cat
  echo "BLKTESTS-END $target rc ${PIPESTATUS[0]}"
done
echo "BLKTESTS-DONE"
idle
