#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# mpnvme-target's reservations beside nvmet's: two hosts of the lab
# guest's kernel (Debian's newest, whose nvmet has reservations) send the
# same nvme-cli reservation commands and reads and writes to nvmet in the
# guest and to mpnvme-target on the machine (guest.sh); each
# target's outcomes and Reservation Reports must be the same, line by line.
#   tests/kernel/reservations/run.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
source "$here/../../../qemu-lab/machine.sh"
export MPNVME_LAB_KERNEL=${MPNVME_LAB_KERNEL:-latest}
kernel_host_test reservations "RESV|nvme|rror"
port=$(free_port)
start_machine_target "$state/target.log" --transport tcp --listen "127.0.0.1:$port" \
  --subnqn nqn.2026-12.io.mpnvme:reservations --ns ram:64m --log-level info
debian_guest_start "$here/guest.sh" "port=$port" "$here/../../integration/admission.py" \
  "$here/../../pylib/nvmehost.py" "$here/../../pylib/nvmetcp.py" "$here/../../pylib/verdict.py"
wait_for 'LAB-JOB-DONE' 300
# Controller numbering aside, and the More bit of nvmet's statuses (0x6083
# against 0x4083): nvmet records every error in its Error Information log
# page, which mpnvme-target does not keep.
lines() { console | sed -n "s/^RESV $1 //p" | sed -E 's/nvme[0-9]+=//; s/\(0x6([0-9a-f]{3})\)$/(0x4\1)/'; }
nvmet=$(lines nvmet) ours=$(lines mpnvme-target)
echo "$nvmet" | sed 's/^/nvmet: /'
(($(wc -l <<<"$nvmet") >= 60)) || fail "the sequence against nvmet ended early"
grep -q '^B write: NVMe status: Reservation Conflict' <<<"$nvmet" ||
  fail "nvmet did not refuse B's write under A's reservation: the sequence tests nothing"
diff <(echo "$nvmet") <(echo "$ours") ||
  fail "mpnvme-target's reservations differ from nvmet's (diff above: < nvmet, > mpnvme-target)"
echo "ok: $(wc -l <<<"$ours") outcomes and report lines the same as nvmet's"
grep -q "refused Reservation Acquire" "$state/target.log" && grep -q "reservation does not let this host write" "$state/target.log" ||
  fail "the target did not log why it refused"
# Where mpnvme-target was checked against nvmet without a kernel host (one
# may not present a host ID under two NQNs): admission.py in the guest.
# nvmet keys reservations by host ID alone, as mpnvme-target does, and lets
# a second NQN with that ID act as the registrant, which mpnvme-target
# refuses on purpose (integration_admission_gate checks ours); nvmet tells
# only the discovery controllers of hosts the subsystem admits, and so does
# mpnvme-target (the same case, in integration_admission_gate).
checks=$(console | sed -n 's/^RESV nvmet-check //p')
echo "$checks" | sed 's/^/nvmet: /'
grep -qx "HOSTID second-nqn write=0x0 release=0x0 unregister=0x0" <<<"$checks" ||
  fail "nvmet no longer lets a second NQN act on a host ID's reservation: revisit mpnvme-target's tie to the NQN"
grep -qx "DISCOVERY H1=notified H2=silent" <<<"$checks" ||
  fail "nvmet's discovery notices differ from mpnvme-target's (H1 notified, H2 silent)"
stop_machine_target "$state/target.log"
echo PASS
