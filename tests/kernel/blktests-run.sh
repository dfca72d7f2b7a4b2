#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The blktests job of the Debian-root lab guest (debian-root-init.sh):
# blktests' ./check once per target: against nvmet in this kernel over
# TCP (the reference), and against mpnvme-target on the machine through
# blktests' remote-target mode (NVME_TARGET_CONTROL=mpnvme-blktests-control,
# reaching the target's control socket through the guestfwd port
# LAB_ctl). Each run is framed by "BLKTESTS-RUN TARGET" and "BLKTESTS-END
# TARGET" lines with ./check's own output between; a failed test's output
# and diff follow its line.
# Settings: LAB_targets, LAB_tests (comma-separated), LAB_img
# (NVME_IMG_SIZE), LAB_port (mpnvme-target's NVMe/TCP port, 10.0.2.2),
# LAB_ctl.
set -uo pipefail
tar -C /opt -xzf /opt/lab/blktests.tar.gz || exit 1
install -D -m 755 /opt/lab/mpnvme-blktests-control /usr/local/sbin/mpnvme-blktests-control || exit 1
mkdir -p /etc/mpnvme
# The host blktests connects as is its own default host.
cat >/etc/mpnvme/blktests-control.conf <<CONF
control=tcp:10.0.2.100:$LAB_ctl
traddr=10.0.2.2
trsvcid=$LAB_port
hostid=0f01fb42-9f7f-4856-b0b3-51e60b8de349
hostnqn=nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349
namespace=ram:$LAB_img
blkdev_type=device
CONF
cd /opt/blktests || exit 1
IFS=, read -r -a targets <<<"$LAB_targets"
IFS=, read -r -a tests <<<"$LAB_tests"
export NVME_IMG_SIZE=$LAB_img NVMET_TRTYPES=tcp NVMET_BLKDEV_TYPES=device
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
