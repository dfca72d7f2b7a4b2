#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# PID 1 of a lab guest in a Debian root (debian-root.guest.sh): udevd
# started (blktests and nvme-cli settle udev after a connect), the lab
# ready, then the job /opt/lab/$LAB_job run with the LAB_* settings of
# /etc/lab.env; "LAB-JOB-DONE rc N" when it ends. PID 1 may not end: it
# idles then.
set -uo pipefail
idle() { while true; do sleep 3600; done; }
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
set -a
source /etc/lab.env
set +a
/lib/systemd/systemd-udevd --daemon || { echo MPNVME-LAB-FAILED; idle; }
[[ -r /opt/lab/${LAB_job:-} ]] || { echo "no job /opt/lab/${LAB_job:-}"; echo MPNVME-LAB-FAILED; idle; }
echo "MPNVME-LAB-READY kernel $(uname -r)"
bash "/opt/lab/$LAB_job"
echo "LAB-JOB-DONE rc $?"
idle
