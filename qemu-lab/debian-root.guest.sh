# SPDX-License-Identifier: GPL-2.0-only
# /setup.sh of a lab guest that runs a job in a Debian root (busybox sh,
# run by /init as PID 1): the root of debian-root.sh (/dev/vda) mounted,
# the lab's files (/files) copied to its /opt/lab, the kernel command
# line's lab.NAME=VALUE settings written to its /etc/lab.env as
# LAB_NAME=VALUE, then made the guest's root (switch_root: in a chroot
# udevadm settle does nothing) with debian-root-init.sh as PID 1, which
# runs the job /opt/lab/$LAB_job.
r=/debian-root
mkdir -p $r && mount -t ext4 /dev/vda $r || return 1
mount -t proc proc $r/proc && mount -t sysfs sysfs $r/sys && mount -t devtmpfs devtmpfs $r/dev || return 1
mount -t configfs configfs $r/sys/kernel/config && mount -t debugfs debugfs $r/sys/kernel/debug || return 1
mount -t tmpfs tmpfs $r/run && mkdir -p $r/dev/shm && mount -t tmpfs tmpfs $r/dev/shm || return 1
# What udev's static nodes would be: bash's process substitution needs /dev/fd.
ln -s /proc/self/fd $r/dev/fd && ln -s /proc/self/fd/0 $r/dev/stdin && ln -s /proc/self/fd/1 $r/dev/stdout &&
  ln -s /proc/self/fd/2 $r/dev/stderr || return 1
mkdir -p $r/opt/lab && cp /files/* $r/opt/lab/ || return 1
: >$r/etc/lab.env
for kv in $(cat /proc/cmdline); do
  case $kv in
    lab.*=*) key=${kv%%=*}; echo "LAB_${key#lab.}=${kv#*=}" >>$r/etc/lab.env ;;
  esac
done
exec switch_root $r /bin/bash /opt/lab/debian-root-init.sh </dev/console >/dev/console 2>&1
