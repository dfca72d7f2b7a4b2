#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Completion modes, functionally: every engine mode (poll=block, hybrid,
# busy) against mpnvme-target with and without --poll, each a verifying
# random read/write job with R2T writes, over MPTCP and TCP. No timing is
# asserted here; bench/run floor measures the modes.
source "$(dirname "$0")/lib.sh"
lab_up --paths 2
for tpoll in "" --poll; do
  start_target --listen 10.1.1.1,10.1.2.1 --subnqn "$NQN" --ns ram:128m --log-level warn $tpoll
  for mode in block hybrid busy; do
    for tr in mptcp tcp; do
      name=${mode}-${tr}${tpoll:+-targetpoll}
      run_fio "$name" --traddr=10.1.1.1 --transport="$tr" --poll="$mode" --rw=randrw --bsrange=4k-64k --iodepth=8 \
        --size=32m --verify=crc32c --verify_fatal=1 --do_verify=1 >/dev/null || { fail "$name: fio exited $?"; continue; }
      [[ $(json "$name" | jq '.jobs[0].read.io_bytes') -gt 0 ]] && pass "$name: verified" || fail "$name: verify read nothing"
    done
  done
  stop_target || fail "target${tpoll:+ --poll} exit status"
done
finish
