# SPDX-License-Identifier: GPL-2.0-only
# /setup.sh of the blktests guest (busybox sh, run by /init as PID 1): the
# Debian root of blktests-root.sh (/dev/vda) mounted, with blktests and the
# runner in it, then made the guest's root (switch_root: in a chroot
# udevadm settle does nothing, and blktests settles udev after every
# connect); the runner goes on as PID 1 (blktests-run.sh).
# Kernel command line: bt.port (mpnvme-target's NVMe/TCP port on the
# machine, 10.0.2.2), bt.ctl (the guestfwd port that reaches its control
# socket), bt.targets (nvmet,mpnvme-target or one of them), bt.tests
# (blktests test names, comma-separated), bt.img (NVME_IMG_SIZE).
for kv in $(cat /proc/cmdline); do
  case $kv in
    bt.*=*) key=${kv%%=*}; eval "BT_${key#bt.}=\${kv#*=}" ;;
  esac
done
r=/blktests-root
mkdir -p $r && mount -t ext4 /dev/vda $r || return 1
mount -t proc proc $r/proc && mount -t sysfs sysfs $r/sys && mount -t devtmpfs devtmpfs $r/dev || return 1
mount -t configfs configfs $r/sys/kernel/config && mount -t debugfs debugfs $r/sys/kernel/debug || return 1
mount -t tmpfs tmpfs $r/run && mkdir -p $r/dev/shm && mount -t tmpfs tmpfs $r/dev/shm || return 1
# What udev's static nodes would be: bash's process substitution needs /dev/fd.
ln -s /proc/self/fd $r/dev/fd && ln -s /proc/self/fd/0 $r/dev/stdin && ln -s /proc/self/fd/1 $r/dev/stdout &&
  ln -s /proc/self/fd/2 $r/dev/stderr || return 1
tar -C $r/opt -xzf /files/blktests.tar.gz || return 1
mkdir -p $r/usr/local/sbin && cp /files/mpnvme-blktests-control $r/usr/local/sbin/ && cp /files/blktests-run.sh $r/opt/ || return 1
chmod 755 $r/usr/local/sbin/mpnvme-blktests-control
mkdir -p $r/etc/mpnvme
cat >$r/etc/mpnvme/blktests-control.conf <<CONF
control=tcp:10.0.2.100:$BT_ctl
traddr=10.0.2.2
trsvcid=$BT_port
hostid=0f01fb42-9f7f-4856-b0b3-51e60b8de349
hostnqn=nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349
namespace=ram:$BT_img
blkdev_type=device
CONF
exec switch_root $r /bin/bash /opt/blktests-run.sh "$BT_targets" "$BT_tests" "$BT_img" </dev/console >/dev/console 2>&1
