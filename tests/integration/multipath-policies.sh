#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Engine multipath over plain TCP against mpnvme-target with one port per
# path: each I/O policy's split of the bytes, measured twice, by the
# engine's own per-path statistics (path_stats=) and independently by the
# lab's per-path interface counters; a verify run over all paths; thread
# mode sharing one controller per path.
source "$(dirname "$0")/lib.sh"
ALL=10.1.1.1,10.1.2.1,10.1.3.1,10.1.4.1

# run_split NAME ARGS...: a read run; afterwards $engine_pct and $lab_pct
# hold each path's share of the bytes in percent, as "p1 p2 ...".
run_split() {
  local name=$1; shift
  local before after
  before=$(path_bytes)
  run_fio "$name" --transport=tcp --rw=randread --bs=128k --size=256m --time_based=1 --runtime=3 \
    --path_stats="$work/$name.paths" "$@" >/dev/null || fail "$name: fio exited $?"
  after=$(path_bytes)
  engine_pct=$(jq -s -r '[.[].paths] | transpose | map(map(.bytes_read) | add) | (add) as $t | map(. * 100 / $t | floor) | join(" ")' \
    "$work/$name.paths")
  lab_pct=$(paste <(echo "$before") <(echo "$after") | awk '{d[NR] = $4 - $2; t += d[NR]} END {for (i = 1; i <= NR; i++) printf "%d ", d[i] * 100 / t}')
  echo "$name: $(json "$name" | jq '.jobs | map(.read.bw_bytes) | add / 1048576 | floor') MiB/s; share per path: engine $engine_pct / lab $lab_pct"
  json "$name" | jq -e '[.jobs[].error] | all(. == 0)' >/dev/null || fail "$name: a job reported an error"
}
# all_within LIST LO HI: every number in LIST is in [LO, HI].
all_within() { local v; for v in $1; do ((v >= $2 && v <= $3)) || return 1; done; }

lab_up --paths 4 --rate 1000mbit
start_target --listen "$ALL" --subnqn "$NQN" --ns ram:512m --log-level warn

run_split rr --traddr="$ALL" --iopolicy=round-robin --iodepth=64
all_within "$engine_pct" 22 28 && all_within "$lab_pct" 22 28 && pass "round-robin: even within 10 %" ||
  fail "round-robin split engine [$engine_pct] lab [$lab_pct]"

run_split numa --traddr="$ALL" --iopolicy=numa --iodepth=64
[[ ${engine_pct%% *} -ge 99 && ${lab_pct%% *} -ge 97 ]] && pass "numa: one path" || fail "numa split engine [$engine_pct] lab [$lab_pct]"

run_split qd --traddr="$ALL" --iopolicy=queue-depth --iodepth=32
all_within "$engine_pct" 10 40 && all_within "$lab_pct" 10 40 && pass "queue-depth: all paths used at iodepth 32" ||
  fail "queue-depth split engine [$engine_pct] lab [$lab_pct]"

# Thread mode: four jobs share one controller per path (one admin queue
# each: four associations, not sixteen), each with its own I/O queue id.
run_split threads --traddr="$ALL" --iopolicy=round-robin --iodepth=16 --numjobs=4 --thread=1 --log_level=info
[[ $(grep -c 'controller nqn' "$work/threads.log") == 4 ]] && pass "threads share one controller per path" ||
  fail "$(grep -c 'controller nqn' "$work/threads.log") controller associations for 4 paths"
[[ $(jq -s '[.[].paths[0].qid] | sort | join(",")' "$work/threads.paths") == '"1,2,3,4"' ]] && pass "one I/O queue id per job" ||
  fail "queue ids $(jq -s -c '[.[].paths[0].qid]' "$work/threads.paths")"
all_within "$engine_pct" 22 28 || fail "threads: round-robin split [$engine_pct]"

# nr_io_queues=2: two I/O queues of the job on each path, each its own
# connection (ids 1 and 2 on every path), all carrying verified I/O; the
# host holds 3 connections per path while it runs (the admin queue and 2).
run_fio queues --traddr="$ALL" --transport=tcp --iopolicy=round-robin --rw=randrw --bs=16k --iodepth=32 --size=256m \
  --nr_io_queues=2 --verify=crc32c --verify_fatal=1 --do_verify=1 --path_stats="$work/queues.paths" >/dev/null &
fio_pid=$!
three_on_path1() { [[ $(in_host ss -Htn state established dst 10.1.1.1 | wc -l) == 3 ]]; }
until_within 10 "3 connections to path 1" three_on_path1 && pass "nr_io_queues=2: 3 connections on path 1"
wait $fio_pid || fail "nr_io_queues=2: fio exited $?"
jq -e '.paths | length == 8 and all(.commands > 0) and ([.[].qid] | sort == [1, 1, 1, 1, 2, 2, 2, 2])' \
  "$work/queues.paths" >/dev/null && pass "nr_io_queues=2: 8 queues over 4 paths carry verified I/O" ||
  fail "nr_io_queues=2: $(jq -c '[.paths[] | {path, qid, commands}]' "$work/queues.paths")"

# Data integrity across paths: writes and reads of one job spread over four
# paths, verified.
run_fio verify --traddr="$ALL" --transport=tcp --iopolicy=round-robin --rw=randrw --bsrange=4k-256k --iodepth=32 \
  --size=128m --verify=crc32c --verify_fatal=1 --do_verify=1 >/dev/null || fail "verify over 4 paths exited $?"
[[ $(json verify | jq '.jobs[0].read.io_bytes') -gt 0 ]] && pass "verify over 4 paths" || fail "verify read nothing"

# NVMe multipath over MPTCP connections: each path is an MPTCP connection
# of its own (with subflows of its own); verified, every path carries I/O.
run_fio mpverify --traddr="$ALL" --transport=mptcp --iopolicy=round-robin --rw=randrw --bs=64k --iodepth=32 --size=64m \
  --verify=crc32c --verify_fatal=1 --do_verify=1 --log_level=info --path_stats="$work/mpverify.paths" >/dev/null ||
  fail "verify over 4 MPTCP connections exited $?"
jq -e '.paths | length == 4 and all(.transport == "mptcp" and .subflows >= 1 and .commands > 0)' "$work/mpverify.paths" \
  >/dev/null && pass "NVMe multipath over 4 MPTCP connections: $(jq -c '[.paths[].subflows]' "$work/mpverify.paths") subflows" ||
  fail "MPTCP paths: $(jq -c '[.paths[] | {path, transport, subflows, commands}]' "$work/mpverify.paths")"
stop_target || fail "target exit status"

# Service time on unequal paths: 400 and 100 Mbit/s get about 4:1 of the
# bytes, where round-robin splits evenly and is held to twice the slow path.
"$LAB" -n "$lab" down >/dev/null
lab_up --paths 2 --rate 400mbit,100mbit
start_target --listen 10.1.1.1,10.1.2.1 --subnqn "$NQN" --ns ram:512m --log-level warn
run_split st --traddr=10.1.1.1,10.1.2.1 --iopolicy=service-time --iodepth=32 --runtime=5
read -r fast slow <<<"$engine_pct"
((fast >= 74 && fast <= 85)) && pass "service-time: $fast:$slow on a 4:1 pair" || fail "service-time split engine [$engine_pct] lab [$lab_pct]"
read -r fast slow <<<"$lab_pct"
((fast >= 72 && fast <= 86)) || fail "service-time: lab counters [$lab_pct]"
run_split rr2 --traddr=10.1.1.1,10.1.2.1 --iopolicy=round-robin --iodepth=32 --runtime=5
all_within "$engine_pct" 45 55 && pass "round-robin: even on the 4:1 pair" || fail "round-robin on 4:1 [$engine_pct]"
stop_target || fail "target exit status"
finish
