#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# make demo: start mpnvme-target with a RAM namespace, run jobs/demo.fio
# through the engine over MPTCP and print the result. As root the target sits
# in an mpnvme-lab topology with two 1 Gbit paths (so MPTCP can use both);
# otherwise it listens on loopback.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$root/${1:-build}" && pwd)
engine=$build/engine/fio-mpnvme.so
target=$build/mpnvme-target/mpnvme-target
lab="$root/toolkit/lab/mpnvme-lab"
state=$(mktemp -d /tmp/mpnvme-demo.XXXXXX)
nqn=nqn.2026-11.io.mpnvme:demo
labname=demo$$
tpid=
cleanup() {
  [[ -n $tpid ]] && kill "$tpid" 2>/dev/null && wait "$tpid" 2>/dev/null
  [[ $(id -u) == 0 ]] && "$lab" -n "$labname" down >/dev/null 2>&1
  rm -rf "$state"
}
trap cleanup EXIT

if [[ $(id -u) == 0 ]]; then
  "$lab" -n "$labname" up --paths 2 --rate 1000mbit
  in_host=("$lab" -n "$labname" exec host)
  "$lab" -n "$labname" exec target "$target" --listen 10.1.1.1,10.1.2.1 --subnqn "$nqn" --ns ram:1g >"$state/target.log" 2>&1 &
  tpid=$!
  traddr=10.1.1.1 port=4420
  where="two 1 Gbit veth paths (mpnvme-lab '$labname'); the engine connects to path 1, MPTCP joins path 2"
else
  in_host=()
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$target" --listen "127.0.0.1:$port" --subnqn "$nqn" --ns ram:1g >"$state/target.log" 2>&1 &
  tpid=$!
  traddr=127.0.0.1
  where="loopback (run as root for a two-path lab)"
fi
for _ in $(seq 100); do grep -q 'mpnvme-target: ready' "$state/target.log" && break; sleep 0.1; done
grep -q 'mpnvme-target: ready' "$state/target.log" || { cat "$state/target.log"; exit 1; }
echo "demo: mpnvme-target serving $nqn (1 GiB RAM namespace) over $where"
echo "demo: fio $root/jobs/demo.fio"
"${in_host[@]}" env MPNVME_ENGINE="$engine" MPNVME_TRADDR=$traddr MPNVME_PORT=$port MPNVME_SUBNQN=$nqn \
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
grep -h "MPTCP used" "$state/engine.log" | sed 's/^mpnvme: info: /demo: /'
if [[ $(id -u) == 0 ]]; then
  echo "demo: bytes per path (host side):"
  "$lab" -n "$labname" counters
fi
