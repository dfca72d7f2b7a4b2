#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the lab guest: mount, load modules, bring up the network, run
# /setup.sh (the test's guest-side configuration), then idle.
/bin/busybox --install -s /bin
/bin/busybox --install -s /sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
for m in $(cat /lib/modules/order); do
  case $m in
    brd.ko) insmod /lib/modules/$m rd_nr=1 rd_size=${LAB_BRD_KB:-262144} ;;
    *) insmod /lib/modules/$m ;;
  esac
done
mount -t configfs configfs /sys/kernel/config
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
. /lib/guest-lib.sh
if . /setup.sh; then
  echo "MPNVME-LAB-READY kernel $(uname -r)"
else
  echo "MPNVME-LAB-FAILED"
fi
while true; do sleep 3600; done
