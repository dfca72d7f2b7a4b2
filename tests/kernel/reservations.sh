#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# mpnvme-target's reservations beside nvmet's: two hosts of the lab
# guest's kernel (Debian's newest, whose nvmet has reservations) send the
# same nvme-cli reservation commands and reads and writes to nvmet in the
# guest and to mpnvme-target on the machine (reservations.guest.sh); each
# target's outcomes and Reservation Reports must be the same, line by line.
#   reservations.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
source "$here/guest-common.sh"
export MPNVME_LAB_KERNEL=${MPNVME_LAB_KERNEL:-latest}
kernel_host_test reservations "RESV|nvme|rror"
port=$(free_port)
start_machine_target "$state/target.log" --transport tcp --listen "127.0.0.1:$port" \
  --subnqn nqn.2026-12.io.mpnvme:reservations --ns ram:64m --log-level info
debian_guest_start "$here/reservations.guest.sh" "port=$port"
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
stop_machine_target "$state/target.log"
echo PASS
