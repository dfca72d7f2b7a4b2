#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The Linux kernel NVMe/TCP host (qemu lab) against mpnvme-target on this
# machine: two ports -> one nvme-subsystem with two controllers, a verified
# write/read, a path cut with I/O failing over, an ANA change, a silent
# blackhole of one path (in the guest, so that its TCP meets it) with I/O
# failing over, an orderly disconnect.
#   tests/kernel/host-interop/run.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
nqn=nqn.2026-11.io.mpnvme:host-interop
source "$here/../../../qemu-lab/machine.sh"
kernel_host_test hostlab 'HOSTTEST'
p1=$(free_port) p2=$(free_port)
control() { python3 - "$state/control" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall((sys.argv[2] + "\n").encode())
print(s.recv(4096).decode().strip())
PY
}

start_machine_target "$state/target.log" --listen "127.0.0.1:$p1,127.0.0.1:$p2" --subnqn "$nqn" --ns ram:64m \
  --control "$state/control" --log-level info
MPNVME_LAB_BINARIES="$(command -v nvme) $(command -v nft)" MPNVME_LAB_APPEND="mp.p1=$p1 mp.p2=$p2 mp.nqn=$nqn" "$qemu_lab/lab.sh" start "$state" "$here/guest.sh" || fail "guest did not boot"

wait_for 'HOSTTEST (connected|connect-failed)' 120
line=$(grep -a 'HOSTTEST connected' <(console)) || fail "the kernel host could not connect"
echo "$line"
[[ $line == *"controllers=2"* ]] || fail "expected one subsystem with two controllers"
[[ $line == *"model=mpnvme-target"* ]] || fail "subsystem model not read from Identify"

console | grep -a 'HOSTTEST discovery'
[[ $(console | grep -ac "HOSTTEST discovery subnqn: $nqn") == 2 ]] || fail "nvme discover should list $nqn on both ports"
seen "HOSTTEST discovery trsvcid: $p2" || fail "nvme discover did not list port $p2"
echo "ok: nvme-cli discovery lists the subsystem on both ports"

expected=$(yes mpnvme0 | head -c 16777216 | md5sum | cut -d' ' -f1)
wait_for 'HOSTTEST md5' 120 # printed after the per-path lines
grep -a 'HOSTTEST path' <(console)
[[ $(console | grep -ac 'HOSTTEST path .*ana=optimized') == 2 ]] || fail "both paths should report ANA state optimized"
got=$(grep -a 'HOSTTEST md5' <(console) | awk '{print $3}')
[[ $got == "$expected" ]] || fail "read-back md5 $got, written $expected"
echo "ok: 16 MiB written and read back by the kernel host, md5 $got"

# Path 1 is cut while the guest reads, and restored once the guest saw
# its controller leave "live"; the guest reads on until both are live.
wait_for 'HOSTTEST readloop start' 60
echo "cutting path 1: $(control 'port 1 down')"
wait_for 'HOSTTEST (path-lost|readloop timed-out)' 120
console | grep -a 'HOSTTEST path-lost'
echo "$(control 'stats')"
echo "restoring path 1: $(control 'port 1 up')"
wait_for 'HOSTTEST readloop (done|timed-out)' 180
grep -a 'HOSTTEST read ' <(console) | awk '{print $3, $5}' | tr '\n' ' '; echo
bad=$(grep -a 'HOSTTEST read ' <(console) | awk -v e="$expected" '$5 != e' | wc -l)
reads=$(grep -ac 'HOSTTEST read ' <(console))
seen 'HOSTTEST readloop timed-out' && fail "the kernel host did not lose path 1, or did not get it back: $(console | grep -a 'HOSTTEST readloop')"
grep -aq 'HOSTTEST readloop done errors=0' <(console) || fail "reads failed during the path cut"
((bad == 0 && reads >= 3)) || fail "$bad of $reads reads returned wrong data during the path cut"
grep -q 'port 1 disabled' "$state/target.log" || fail "the cut did not happen"
grep -q 'connection .* closed (port disabled)' "$state/target.log" || fail "no connection was cut"
echo "ok: $reads reads verified while path 1 was cut and restored"
grep -a 'HOSTTEST after' <(console)

wait_for 'HOSTTEST ana-check start' 60
echo "port 2 ANA group 1 -> inaccessible: $(control 'ana 2 1 inaccessible')"
wait_for 'HOSTTEST ana-read' 90
console | grep -a 'HOSTTEST ana '
seen 'HOSTTEST ana-check timed-out' && fail "the kernel host did not see port 2 become inaccessible within 60 s"
seen "HOSTTEST ana trsvcid=$p2 inaccessible" || fail "the kernel host did not see port 2 become inaccessible"
seen "HOSTTEST ana trsvcid=$p1 optimized" || fail "port 1 should stay optimized"
[[ $(console | grep -a 'HOSTTEST ana-read' | awk '{print $4}') == "$expected" ]] || fail "read after the ANA change returned wrong data"
echo "ok: ANA change delivered by AEN; I/O continues on the optimized path"
echo "port 2 ANA group 1 -> optimized: $(control 'ana 2 1 optimized')"

# The guest blackholes path 1 for 8 s (packets vanish on arrival there):
# its TCP times out, multipath fails the path's I/O over, reads verify.
wait_for 'HOSTTEST blackhole (reads|nft)' 120
console | grep -a 'HOSTTEST blackhole'
line=$(grep -a 'HOSTTEST blackhole reads=' <(console))
[[ $line =~ reads=([0-9]+)\ errors=([0-9]+)\ longest=([0-9.]+)s\ timeouts=([0-9]+) ]] || fail "no blackhole result: $line"
((BASH_REMATCH[2] == 0 && BASH_REMATCH[1] > 0)) || fail "reads failed or returned wrong data under the blackhole: $line"
((BASH_REMATCH[4] > 0)) || fail "the kernel host's TCP saw no timeout: not a blackhole"
seen 'HOSTTEST blackhole dropped packets [1-9]' || fail "the blackhole dropped nothing"
echo "ok: path 1 blackholed for 8 s: ${BASH_REMATCH[1]} reads verified, the longest took ${BASH_REMATCH[3]} s, ${BASH_REMATCH[4]} TCP timeouts"

wait_for 'HOSTTEST (disconnected|disconnect-incomplete)' 60
grep -aq 'HOSTTEST disconnected' <(console) || fail "controllers left behind after delete_controller"
for _ in $(seq 50); do (($(grep -c 'controller .* removed' "$state/target.log") >= 2)) && break; sleep 0.1; done
removed=$(grep -c 'controller .* removed' "$state/target.log" || true)
# The kernel host had an association on each of the two ports.
((removed >= 2)) || fail "the target removed $removed controller association(s), 2 expected"
echo "ok: disconnected; target removed $removed controller association(s)"
stop_machine_target "$state/target.log"
echo PASS
