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

# fio sleeps between I/Os here (50 IOPS: 20 ms apart; thinktime 20 ms every
# 4 blocks). A command held across such a sleep has a submission latency of
# about 20 ms; sent before fio sleeps, well under 10 ms.
for case in "rate --rate_iops=50" "thinktime --thinktime=20ms --thinktime_blocks=4"; do
  set -- $case
  name=$1; shift
  run_fio "$name" --traddr=10.1.1.1 --transport=tcp --rw=randread --bs=4k --iodepth=8 --size=64m --time_based=1 \
    --runtime=2 --slat_percentiles=1 "$@" >/dev/null || { fail "$name: fio exited $?"; continue; }
  read -r ios slat99 < <(json "$name" | jq -r '.jobs[0].read | "\(.total_ios) \(.slat_ns.percentile["99.000000"])"')
  ((ios >= 20)) || fail "$name: only $ios I/Os in 2 s"
  ((slat99 < 10000000)) && pass "$name: $ios I/Os, slat p99 $((slat99 / 1000)) us" ||
    fail "$name: commands waited in the engine while fio slept (slat p99 $((slat99 / 1000)) us)"
done
stop_target || fail "target exit status"
finish
