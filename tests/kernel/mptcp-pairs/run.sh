#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The four host/target pairs over MPTCP on a kernel with the NVMe-over-MPTCP
# series (qemu lab): the engine and the kernel host, each against
# mpnvme-target and against nvmet's mptcp port, with the upstream selftest's
# topology; verify, and verify with one path blackholed for 4 s (0 I/O
# errors); nvme-cli's discover and connect-all over MPTCP against both
# targets, mpnvme-target's entries (--discovery-trtype-mptcp) read as
# nvmet's. The guest side is guest.sh.
#   tests/kernel/mptcp-pairs/run.sh BUILD_DIR
# Environment: MPNVME_MPTCP_KERNEL, a lab kernel directory (vmlinuz,
# lib/modules) whose NVMe host and target have the mptcp transport
# (qemu-lab/build-kernel makes one). Unset: the test is not run.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=$1
if [[ -z ${MPNVME_MPTCP_KERNEL:-} ]]; then
  echo "not run: no kernel with NVMe over MPTCP (set MPNVME_MPTCP_KERNEL to a lab kernel directory)"
  exit 77
fi
state=$(mktemp -d /tmp/mpnvme-pairs.XXXXXX)
ns=mpnvme-pairs$$
source "$here/../../../qemu-lab/machine.sh"
cleanup() {
  ip netns exec "$ns" "$qemu_lab/lab.sh" stop "$state"
  ip netns del "$ns" 2>/dev/null
  [[ -n ${MPNVME_KEEP_CONSOLE:-} ]] && cp "$state/console.log" "$MPNVME_KEEP_CONSOLE"
  rm -rf "$state"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; console | grep -a '^PAIRS' | tail -40; exit 1; }
export MPNVME_LAB_KERNEL=$MPNVME_MPTCP_KERNEL
kd=$("$qemu_lab/lab.sh" prepare | tail -1) || fail "cannot prepare the kernel lab with $MPNVME_MPTCP_KERNEL"
grep -qa mptcp "$kd"/root/lib/modules/*/kernel/drivers/nvme/host/nvme-tcp.ko ||
  fail "$MPNVME_MPTCP_KERNEL: its nvme-tcp has no mptcp transport (not a kernel with the NVMe-over-MPTCP series)"

engine=$build/engine/fio-mpnvme.so
# An ASan build's engine needs the runtime preloaded into fio in the guest too.
preload=$(ldd "$engine" | grep -o '/[^ ]*libasan[^ ]*' || true)
echo "$preload" >"$state/preload"
# MPNVME_PAIRS_ONLY="engine-nvmet kernel-target discovery": only those
# pairs, or the discovery step (while working on one).
printf %s "${MPNVME_PAIRS_ONLY:-}" >"$state/only"
bins=""
for b in bash ip tc ss nstat nft ethtool jq fio; do bins+=" $(command -v $b)"; done
bins+=" $engine $build/mpnvme-target/mpnvme-target $build/toolkit/nvmet/mpnvme-nvmet $build/toolkit/iopolicy/mpnvme-iopolicy"
ip netns add "$ns" && ip netns exec "$ns" ip link set lo up || fail "cannot create network namespace"
# Everything runs inside the guest; its user network sits in a namespace
# of its own.
MPNVME_LAB_BINARIES="$bins${preload:+ $preload}" MPNVME_LAB_MEM=1024 MPNVME_LAB_TLS=1 \
  MPNVME_LAB_FILES="$root/toolkit/lab/mpnvme-lab $here/mptcp-pairs.fio $here/guest.sh $state/preload $state/only" \
  ip netns exec "$ns" "$qemu_lab/lab.sh" start "$state" <(echo '/usr/local/bin/bash /files/guest.sh >/dev/console 2>&1 &') ||
  fail "guest did not boot"
console | grep -a 'MPNVME-LAB-READY'
wait_for '^PAIRS done' 900
console | grep -a '^PAIRS'
seen '^PAIRS FAIL' && fail "$(console | grep -ac '^PAIRS FAIL') check(s) failed"
n=$(console | grep -ac '^PAIRS ok: .*verify passed')
want=8
[[ -n ${MPNVME_PAIRS_ONLY:-} ]] && want=$((2 * $(tr ' ' '\n' <<<"$MPNVME_PAIRS_ONLY" | grep -c -- -)))
((n == want)) || fail "$n of $want verify runs passed"
echo PASS
