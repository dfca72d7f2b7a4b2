#!/usr/local/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Guest side of bench/mptcp-rcvbuf-stall-repro: the lab, nvmet's mptcp
# ports, the engine's warm-up against mpnvme-target (WARM), then RUNS write runs
# of the kernel host against nvmet, each watched for a stall. One line per
# finding on the console, "STALLREPRO ...", then "STALLREPRO done".
set -uo pipefail
export PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
source /files/params
source /files/mptcp-stuck.sh
LAB="bash /files/mpnvme-lab -n s"
JOB=/files/guest-seed.fio
RUNTIME=20 RAMP=5
# A run that completes no I/O for this long after its time is stalled
# (no_progress): a lossy write run here drains its 128 MiB in flight in
# about 15 s, completing I/O all the while.
QUIET=60
export MPNVME_ENGINE=/usr/local/bin/fio-mpnvme.so MPNVME_SUBNQN=nqn.2026-12.io.mpnvme:guest-seed
export MPNVME_TRADDR=10.1.1.1,10.1.2.1,10.1.3.1,10.1.4.1 MPNVME_RUNTIME=$RUNTIME MPNVME_RAMP=$RAMP
# The kernel's I/O timeout (30 s) and keep-alive (5 s) stretched as the lab
# stretches time (25 times slower than the selftest's paths), as the bench.
export MPNVME_IO_TIMEOUT=750000 MPNVME_KATO=125 MPNVME_IOPOLICY=round-robin MPNVME_IODEPTH=256 MPNVME_NUMJOBS=4
export MPNVME_NR_IO_QUEUES=1 MPNVME_POLL=hybrid MPNVME_PATH_STATS=/dev/null MPNVME_TRANSPORT=mptcp MPNVME_RW=randwrite
NVMET=10.1.1.1:4421,10.1.2.1:4421,10.1.3.1:4421,10.1.4.1:4421
echo 750 >/sys/module/nvme_core/parameters/io_timeout
echo 1500 >/sys/module/nvme_core/parameters/admin_timeout
mkdir -p /run /var /etc/nvme && mount -t tmpfs tmpfs /run && ln -sfn /run /var/run
echo "nqn.2014-08.org.nvmexpress:uuid:5f1c0e2a-8d3b-4a7e-9c61-2b4d6e8f0a13" >/etc/nvme/hostnqn
echo "5f1c0e2a-8d3b-4a7e-9c61-2b4d6e8f0a13" >/etc/nvme/hostid
say() { echo "STALLREPRO $*"; }
cd /tmp || exit 1

out=$($LAB up --paths 4 --rate 40mbit --cc cubic --endpoints all --delay 125 --loss 0.5 --loss-via netem --loss-unit packet 2>&1) ||
  { say "lab-failed $(tr '\n' ' ' <<<"$out")"; say "done"; exit; }
out=$(MPNVME_TRADDR=$NVMET $LAB exec target mpnvme-nvmet apply --job "$JOB" 2>&1) ||
  { say "lab-failed nvmet: $(tr '\n' ' ' <<<"$out")"; say "done"; exit; }
if ((WARM)); then
  $LAB exec target mpnvme-target --job "$JOB" --log-level warn >/tmp/target.log 2>&1 &
  for _ in $(seq 100); do grep -q 'mpnvme-target: ready' /tmp/target.log && break; sleep 0.2; done
  for rw in randread randwrite; do
    MPNVME_RW=$rw $LAB exec host fio "$JOB" --output-format=json --output=/tmp/warm.json >/tmp/warm.log 2>&1
    say "warm-up: the engine against mpnvme-target, $rw: $(jq -r ".jobs[0].${rw#rand}.bw_bytes / 1048576 | floor" /tmp/warm.json 2>/dev/null) MiB/s"
  done
  kill %1 2>/dev/null
fi
for ((run = 1; run <= RUNS; run++)); do
  out=$(MPNVME_TRADDR=$NVMET $LAB exec host mpnvme-nvmet connect --job "$JOB" 2>&1) ||
    { say "lab-failed connect: $(tr '\n' ' ' <<<"$out")"; break; }
  dev=$(sed -n 's/^device //p' <<<"$out")
  mpnvme-iopolicy set round-robin --nqn "$MPNVME_SUBNQN" >/dev/null 2>&1
  fio --name=w --filename="$dev" --ioengine=libaio --direct=1 --rw=randwrite --bs=128k --numjobs=4 --iodepth=256 \
    --size=256m --time_based=1 --runtime=$RUNTIME --ramp_time=$RAMP --group_reporting=1 --output-format=json \
    --output=/tmp/w.json >/tmp/w.log 2>&1 &
  fpid=$!
  if no_progress $fpid $((RAMP + RUNTIME)) $QUIET; then
    say "stalled: run $run of the kernel host's writes to nvmet completed no I/O for $QUIET s after its time"
    for b in /sys/block/nvme*c*n*; do say "  ${b##*/}: $(awk '{print $2}' "$b/inflight") writes in flight"; done
    mptcp_stuck | while read -r l; do say "stuck $l"; done
    say "receiver's counters: $($LAB exec target nstat -asz | awk '/MPTcpExt(OFOQueue|RcvPruned|DuplicateData|RcvWndShared|RcvWndConflict)|TcpExtPruneCalled|TcpExtRcvPruned/ {printf "%s %s ", $1, $2}')"
    dmesg | grep -E 'nvme nvme[0-9]+: (I/O|queue|failed|starting)' | tail -n 5 | while read -r l; do say "host: $l"; done
    break
  fi
  say "run $run: $(jq -r '.jobs[0].write.bw_bytes / 1048576 | floor' /tmp/w.json 2>/dev/null) MiB/s, no stall"
  MPNVME_TRADDR=$NVMET $LAB exec host mpnvme-nvmet disconnect --job "$JOB" >/dev/null 2>&1
  for c in /sys/class/nvme/nvme*; do echo 1 >"$c/delete_controller"; done 2>/dev/null
done
say "done"
