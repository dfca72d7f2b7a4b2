# SPDX-License-Identifier: GPL-2.0-only
# Guest side: native NVMe multipath is off (nvme_core.multipath=N on the
# kernel command line): mpnvme-iopolicy must show the topology and refuse
# to set a policy, saying why.
export MPNVME_ENGINE=/unused MPNVME_TRADDR1=10.0.2.15 MPNVME_PORT1=4420 MPNVME_TRADDR2=10.0.2.15 MPNVME_PORT2=4421
NV=/usr/local/bin/mpnvme-nvmet IP=/usr/local/bin/mpnvme-iopolicy JOB=/files/nvmet-two-paths.fio
export ASAN_OPTIONS=detect_leaks=0
mkdir -p /etc/nvme
echo "nqn.2014-08.org.nvmexpress:uuid:0b3e5b2c-6f7e-4c1a-9d3e-1f2a3b4c5d6f" > /etc/nvme/hostnqn
echo "0b3e5b2c-6f7e-4c1a-9d3e-1f2a3b4c5d6f" > /etc/nvme/hostid
nomp() {
  $NV apply --job $JOB >/dev/null 2>&1 && $NV connect --job $JOB 2>&1 | sed 's/^/NOMP connect: /'
  echo "NOMP multipath=$(cat /sys/module/nvme_core/parameters/multipath)"
  $IP show 2>&1 | sed 's/^/NOMP show: /'
  out=$($IP set round-robin --all 2>&1)
  echo "NOMP set rc=$? $out"
  echo "NOMP done"
}
nomp > /dev/console 2>&1 &
