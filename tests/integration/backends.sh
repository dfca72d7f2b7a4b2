#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# mpnvme-target's namespace backends through the engine (file with O_DIRECT
# on io_uring, null, RAM with 4 KiB blocks), a target serving a job file that
# fio then runs unchanged, and the target's refusals of bad options.
source "$(dirname "$0")/lib.sh"
lab_up --paths 2
truncate -s 256m "$work/ns.img"
start_target --listen 10.1.1.1,10.1.2.1 --subnqn "$NQN" --ns "file:$work/ns.img" --ns null:1g,lba=4096 \
  --ns ram:64m,lba=4096 --log-level warn
verify=(--verify=crc32c --verify_fatal=1 --do_verify=1)
run_fio file --traddr=10.1.1.1 --nsid=1 --rw=randrw --bsrange=512-256k --iodepth=32 --size=128m "${verify[@]}" ||
  fail "file namespace: verify failed"
run_fio file_fsync_trim --traddr=10.1.1.1 --nsid=1 --rw=randwrite --bs=64k --iodepth=8 --size=32m --fsync=4 ||
  fail "file namespace: fsync"
run_fio file_trim --traddr=10.1.1.1 --nsid=1 --rw=trimwrite --bs=64k --iodepth=8 --size=16m || fail "file namespace: trim"
run_fio file_zeroes --traddr=10.1.1.1 --nsid=1 --rw=trim --trim_mode=write_zeroes --bs=64k --iodepth=8 --size=16m ||
  fail "file namespace: write zeroes"
[[ $(stat -c %b "$work/ns.img") -gt 0 ]] && pass "file namespace verified, flushed, trimmed ($(du -h "$work/ns.img" | cut -f1) allocated)" ||
  fail "file namespace: nothing was written to $work/ns.img"
run_fio null --traddr=10.1.1.1 --nsid=2 --rw=randrw --bs=4k --iodepth=32 --size=512m --number_ios=20000 || fail "null namespace"
run_fio ram4k --traddr=10.1.2.1 --nsid=3 --rw=randrw --bs=4k --iodepth=16 --size=64m "${verify[@]}" || fail "ram 4k namespace"
run_fio ram4k_small_bs --traddr=10.1.1.1 --nsid=3 --rw=read --bs=512 --size=1m && fail "512-byte I/O on a 4 KiB namespace accepted"
grep -q "not a multiple of the namespace LBA size 4096" "$work/ram4k_small_bs.log" && pass "512-byte blocks refused on a 4 KiB namespace" ||
  fail "512-byte blocks on a 4 KiB namespace: the refusal does not name the LBA size"
stop_target || fail "target exit status"

# The same job file on both sides.
export MPNVME_ENGINE=$ENGINE
start_target --job "$root/tests/integration/jobs/served.fio" --log-level warn
grep -E 'listening|nsid' "$work/target.log"
in_host env MPNVME_ENGINE="$ENGINE" LD_PRELOAD="${MPNVME_PRELOAD:-}" ASAN_OPTIONS="$ASAN_OPTIONS" \
  fio --output-format=json --output="$work/served.json" "$root/tests/integration/jobs/served.fio" 2>"$work/served.log" ||
  fail "served.fio through the engine"
[[ $(json served | jq '[.jobs[].read.io_bytes] | add') -gt 0 ]] && pass "job file served by --job and run unchanged by fio" ||
  fail "served.fio verified nothing"
stop_target || fail "target exit status"

# A block device namespace (a loop device over a file), O_DIRECT through io_uring.
truncate -s 128m "$work/loop.img"
if loopdev=$(losetup -f --show "$work/loop.img" 2>/dev/null); then
  trap 'losetup -d "$loopdev" 2>/dev/null; cleanup' EXIT
  start_target --listen 10.1.1.1 --subnqn "$NQN" --ns "$loopdev" --log-level warn
  grep -q "nsid 1: file:$loopdev" "$work/target.log" || fail "target did not serve $loopdev"
  run_fio blockdev --traddr=10.1.1.1 --rw=randrw --bsrange=4k-128k --iodepth=16 --size=128m "${verify[@]}" --fsync=16 ||
    fail "block device namespace"
  run_fio blockdev_trim --traddr=10.1.1.1 --rw=trimwrite --bs=64k --iodepth=8 --size=8m || fail "block device trim"
  stop_target || fail "target exit status"
  losetup -d "$loopdev"
  trap cleanup EXIT
  pass "block device namespace ($loopdev) verified, flushed and trimmed"
else
  fail "no loop device for the block device namespace test"
fi

# IPv6: a port on [::1], the engine in the same namespace.
start_target --listen "[::1]:4430" --subnqn "$NQN" --ns ram:64m --log-level warn
in_target env LD_PRELOAD="${MPNVME_PRELOAD:-}" ASAN_OPTIONS="$ASAN_OPTIONS" fio --name=v6 --ioengine=external:"$ENGINE" \
  --traddr="[::1]:4430" --subnqn="$NQN" --rw=randrw --bs=8k --iodepth=8 --size=32m --verify=crc32c --verify_fatal=1 \
  --output-format=json --output="$work/v6.json" 2>"$work/v6.log" && pass "IPv6 port [::1]:4430 verified" || fail "IPv6 run"
stop_target || fail "target exit status"

# A fresh RAM namespace is mapped for reading before the target listens: a
# read of a block nobody wrote costs no page fault on the command's path
# (before, 20000 random 4 KiB reads of 256 MiB took 20093 in the target).
start_target --listen 10.1.1.1 --subnqn "$NQN" --ns ram:256m --log-level debug
grep -q 'namespace 1: 256 MiB mapped for reading' "$work/target.log" ||
  fail "ram:256m not mapped for reading: $(grep -m1 'namespace 1' "$work/target.log")"
minflt() { awk '{print $10}' "/proc/$target_pid/stat"; }
before=$(minflt)
run_fio ram_mapped --traddr=10.1.1.1 --rw=randread --bs=4k --iodepth=8 --size=256m --number_ios=20000 || fail "ram_mapped run"
faults=$(($(minflt) - before))
((faults < 2000)) && pass "20000 reads of a fresh RAM namespace: $faults page faults in the target" ||
  fail "20000 reads of a fresh RAM namespace took $faults page faults in the target (its blocks are not mapped)"
stop_target || fail "target exit status"

# Refusals name the option.
refuse() { # EXPECTED-TEXT ARGS...
  local want=$1; shift
  out=$("$LAB" -n "$lab" exec target "$TARGET" "$@" 2>&1) && { fail "accepted: $*"; return; }
  grep -q -- "$want" <<<"$out" && pass "refused ($want)" || fail "refusal of '$*' lacks '$want': $out"
}
refuse "--ns 'disk:1g': unknown backing" --listen 10.1.1.1 --subnqn "$NQN" --ns disk:1g
refuse "10.9.9.9:4420: bind: Cannot assign requested address" --listen 10.9.9.9 --subnqn "$NQN" --ns ram:1m
refuse "--transport: rdma not in" --listen 10.1.1.1 --subnqn "$NQN" --ns ram:1m --transport rdma
refuse "--ana 9:1:optimized: no port 9" --listen 10.1.1.1 --subnqn "$NQN" --ns ram:1m --ana 9:1:optimized
refuse "no port configured" --subnqn "$NQN" --ns ram:1m
refuse "open $work/missing.img (O_DIRECT): No such file" --listen 10.1.1.1 --subnqn "$NQN" --ns "file:$work/missing.img"
finish
