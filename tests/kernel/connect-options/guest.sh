# SPDX-License-Identifier: GPL-2.0-only
# Guest side of kernel_nvmet_connect_options: mpnvme-target serves the job's
# subsystem on 127.0.0.1:4430 (debug log: it records each ICReq's digest
# flags), mpnvme-nvmet connect --job connects the kernel host, and what the
# kernel made of the job is printed from sysfs and from the target's log.
# Markers: "CO ...", "CO done". The machine side compares.
export MPNVME_ENGINE=/unused ASAN_OPTIONS=detect_leaks=0
T=/usr/local/bin/mpnvme-target NV=/usr/local/bin/mpnvme-nvmet JOB=/files/connect-options.fio
NQN=nqn.2026-12.io.mpnvme:connect-options
co() {
  cd /tmp
  echo "CO cpus=$(nproc)"
  $T --listen 127.0.0.1:4430 --transport tcp --subnqn $NQN --ns ram:16m --log-level debug >/tmp/target.log 2>&1 &
  tp=$!
  for _ in $(seq 100); do grep -q 'mpnvme-target: ready' /tmp/target.log && break; sleep 0.1; done
  grep -q 'mpnvme-target: ready' /tmp/target.log || { echo "CO FAIL: target: $(tail -3 /tmp/target.log)"; echo "CO done"; return; }
  out=$($NV connect --job $JOB 2>&1) || { echo "CO FAIL: connect: $out"; echo "CO done"; return; }
  echo "$out" | sed 's/^/CO connect: /'
  c=
  for d in /sys/class/nvme/nvme*; do grep -q "$NQN" "$d/subsysnqn" 2>/dev/null && c=$d; done
  for a in kato sqsize queue_count ctrl_loss_tmo reconnect_delay fast_io_fail_tmo hostnqn; do
    echo "CO sysfs $a=$(cat "$c/$a" 2>&1)"
  done
  dev=$(echo "$out" | sed -n 's/^device //p')
  dd if="$dev" of=/dev/null bs=4k count=256 iflag=direct 2>/dev/null && echo "CO read ok" || echo "CO FAIL: read $dev"
  grep -a "ICReq" /tmp/target.log | sed 's/^/CO target: /'
  $NV disconnect --job $JOB 2>&1 | sed 's/^/CO disconnect: /'
  kill -INT $tp
  wait $tp
  echo "CO target rc=$?"
  echo "CO done"
}
co >/dev/console 2>&1 &
