#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# mpnvme-nvmet connect --job gives the kernel host the whole job: digests
# (seen on the wire, in the ICReq mpnvme-target receives), kato, queue
# size, I/O queue count, reconnect settings and host NQN (seen in the
# controller's sysfs), and names the option it cannot carry. Two vCPUs, so
# that the job's one I/O queue differs from the kernel's one per CPU.
#   tests/kernel/connect-options/run.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
state=$(mktemp -d /tmp/mpnvme-connopts.XXXXXX)
trap '"$qemu_lab/lab.sh" stop "$state"; rm -rf "$state"' EXIT
source "$here/../../../qemu-lab/machine.sh"
fail() { echo "FAIL: $*"; console | grep -a '^CO'; exit 1; }
MPNVME_LAB_SMP=2 MPNVME_LAB_BINARIES="$build/toolkit/nvmet/mpnvme-nvmet $build/mpnvme-target/mpnvme-target" \
MPNVME_LAB_FILES="$here/connect-options.fio" \
  "$qemu_lab/lab.sh" start "$state" "$here/guest.sh" || { echo "FAIL: boot"; exit 1; }
wait_for 'CO done' 240
console | grep -a '^CO'
seen '^CO FAIL' && fail "the guest's steps failed"
seen '^CO cpus=2' || fail "the guest does not have 2 CPUs: the queue count would not tell"
# What the job asks (connect-options.fio), where the kernel shows it.
expect() { # WHAT REGEX
  seen "$2" && echo "ok: $1" || fail "$1: the kernel host did not get it (no /$2/)"
}
expect "kato=7" '^CO sysfs kato=7$'
expect "queue_size=48 (sqsize 47)" '^CO sysfs sqsize=47$'
expect "one I/O queue for one fio job (the kernel would open 2)" '^CO sysfs queue_count=2$'
expect "ctrl_loss_tmo=30" '^CO sysfs ctrl_loss_tmo=30$'
expect "reconnect_delay=3" '^CO sysfs reconnect_delay=3$'
expect "fast_io_fail_tmo=9" '^CO sysfs fast_io_fail_tmo=9$'
expect "hostnqn" '^CO sysfs hostnqn=nqn.2014-08.org.nvmexpress:uuid:5d0c3a52-0c5e-4c1e-9a8e-6d2b7f3e1a90$'
# Admin queue and I/O queue: both ICReqs ask for both digests.
n=$(console | grep -ac '^CO target: .*ICReq .*digests true/true')
((n == 2)) && echo "ok: hdr_digest=1 data_digest=1 on both queues' ICReq" ||
  fail "$n of 2 ICReqs asked for both digests: $(console | grep -a '^CO target: ' | head -3)"
expect "io_timeout named as not carried" '^CO connect: .*io_timeout=45000: not carried to the kernel host'
expect "reads through the kernel host" '^CO read ok'
expect "the target exited cleanly" '^CO target rc=0'
echo PASS
