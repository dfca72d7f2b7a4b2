#!/bin/bash
# make demo: boot the qemu lab's Linux nvmet-tcp target (RAM namespace), run
# jobs/demo.fio through the engine over MPTCP and print the result.
# (The embedded mpnvme-target replaces the kernel lab here once it exists.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
engine=$(cd "$root/$build/engine" && pwd)/fio-mpnvme.so
state=$(mktemp -d /tmp/mpnvme-demo.XXXXXX)
trap '"$root/tests/kernel/lab.sh" stop "$state"; rm -rf "$state"' EXIT

echo "demo: booting the Linux NVMe/TCP target (qemu lab, $(basename "$(ls -d "$root"/.deps/kernel/linux-image-* 2>/dev/null | head -1 || echo kernel)"))..."
"$root/tests/kernel/lab.sh" start "$state" "$root/tests/kernel/engine-target.setup.sh"
export MPNVME_ENGINE=$engine MPNVME_TRADDR=127.0.0.1 MPNVME_PORT=$(cat "$state/port")
export MPNVME_SUBNQN=nqn.2026-11.io.mpnvme:kernel-lab
echo "demo: fio $root/jobs/demo.fio -> $MPNVME_TRADDR:$MPNVME_PORT ($MPNVME_SUBNQN)"
fio --output-format=json --output="$state/demo.json" "$root/jobs/demo.fio" 2> >(tee "$state/engine.log" >&2)
echo
printf '%-18s %10s %10s %10s %10s %10s\n' job MiB/s IOPS "p50 us" "p99 us" "p99.9 us"
sed -n '/^{/,$p' "$state/demo.json" | jq -r '.jobs[] | (if .read.io_bytes > 0 then .read else .write end) as $d |
  [.jobname, ($d.bw_bytes/1048576*10|floor/10), ($d.iops|floor),
   ($d.clat_ns.percentile."50.000000"/1000|floor), ($d.clat_ns.percentile."99.000000"/1000|floor),
   ($d.clat_ns.percentile."99.900000"/1000|floor)] | @tsv' |
  while IFS=$'\t' read -r j bw iops p50 p99 p999; do
    printf '%-18s %10s %10s %10s %10s %10s\n' "$j" "$bw" "$iops" "$p50" "$p99" "$p999"
  done
echo
grep -h "transport in effect" "$state/engine.log" | sed 's/^mpnvme: info: /demo: /' | sort -u
echo "demo: the kernel target sits behind qemu user networking, which terminates TCP: MPTCP falls back to TCP here."
