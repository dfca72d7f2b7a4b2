#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# defer_send: with fio's defaults (one command per commit, one event per
# getevents) the engine holds committed commands until fio has taken the
# completions already received, then sends them in one write. Checked
# functionally: fio's submit histogram shows merged sends (and only single
# ones with defer_send=0), and commands never wait in the engine while fio
# sleeps for rate= or thinktime= (the issue time is stamped at the real
# send, so such a wait would show as submission latency of a whole sleep).
source "$(dirname "$0")/lib.sh"
lab_up --paths 1
start_target --listen 10.1.1.1 --subnqn "$NQN" --ns ram:128m --log-level warn

# share of sends that carried more than 4 commands, in percent
merged() { json "$1" | jq '.jobs[0].iodepth_submit | (.["8"] + .["16"] + .["32"] + .["64"] + .[">=64"])'; }
for defer in 1 0; do
  name=qd32-defer$defer
  run_fio "$name" --traddr=10.1.1.1 --transport=tcp --rw=randrw --bs=4k --iodepth=32 --size=64m --verify=crc32c \
    --verify_fatal=1 --do_verify=1 --defer_send=$defer >/dev/null || { fail "$name: fio exited $?"; continue; }
  share=$(merged "$name")
  if ((defer)); then
    awk -v s="$share" 'BEGIN { exit !(s > 10) }' && pass "$name: verified, $share% of sends carried 5 or more commands" ||
      fail "$name: sends were not merged ($share% with 5 or more commands)"
  else
    awk -v s="$share" 'BEGIN { exit !(s == 0) }' && pass "$name: verified, one command per send" ||
      fail "$name: defer_send=0 still merged sends ($share%)"
  fi
done

# fio sleeps between I/Os here, a whole second (rate: 1 IOPS; thinktime:
# 1 s after every 2 blocks). A command held in the engine across such a
# sleep shows a submission latency of about that second (the issue time is
# stamped at the real send); sent before fio sleeps, it shows none. The
# bound is half the sleep: no busy machine delays a send that long, and a
# held command cannot come in under it.
for case in "rate --rate_iops=1" "thinktime --thinktime=1s --thinktime_blocks=2"; do
  set -- $case
  name=$1; shift
  run_fio "$name" --traddr=10.1.1.1 --transport=tcp --rw=randread --bs=4k --iodepth=8 --size=64m --time_based=1 \
    --runtime=4 "$@" >/dev/null || { fail "$name: fio exited $?"; continue; }
  read -r ios slat_max < <(json "$name" | jq -r '.jobs[0].read | "\(.total_ios) \(.slat_ns.max)"')
  ((ios >= 3)) || fail "$name: only $ios I/Os in 4 s"
  ((slat_max < 500000000)) && pass "$name: $ios I/Os, none held across fio's sleep (slat max $((slat_max / 1000)) us)" ||
    fail "$name: a command waited in the engine while fio slept (slat max $((slat_max / 1000)) us)"
done
stop_target || fail "target exit status"
finish
