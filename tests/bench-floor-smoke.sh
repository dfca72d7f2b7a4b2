#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# bench/run floor --smoke: the floor experiment end to end, checked for the
# shape of its figures, never for speed: raw round trips, the engine
# against both target modes (taking turns, the raw round trip measured
# beside each round), 128 KiB reads beside their raw bulk control,
# and the target's own cost per command (the
# engine's QD1 p50 minus the busy floor) for each mode, and what TLS costs
# beside plaintext, in results.json and in the report.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d /tmp/mpnvme-bench-floor.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$root/bench/run" floor --smoke --out "$out" >"$out/run.log" 2>&1 || { tail -30 "$out/run.log"; fail "bench/run floor"; }
json=$out/results.json
jq -e '.floor.floor["rtt tcp busy"].p50_us.median > 0 and .floor.floor["rtt tcp block"].p50_us.median > 0' "$json" >/dev/null ||
  fail "no raw round trip figures: $(jq -c '.floor.floor | keys' "$json")"
jq -e '[.floor.engine[] | .iops.median > 0 and .p50_us.median > 0] | length == 10 and all' "$json" >/dev/null ||
  fail "expected 10 engine cells that moved data: $(jq -c '[.floor.engine[] | {workload, target, poll}]' "$json")"
jq -e '.floor.floor | .["bulk tcp block"].mib_s.median > 0 and .["bulk tcp busy"].mib_s.median > 0' "$json" >/dev/null ||
  fail "no raw bulk floors for both wait modes: $(jq -c '.floor.floor | keys' "$json")"
# Every 128 KiB read row has its own raw control, measured beside it.
jq -e '[.floor.engine[] | select(.workload | startswith("128k"))] | length == 2 and
  all(.control_mib_s.median > 0 and .control_mib_s.min <= .control_mib_s.max)' "$json" >/dev/null ||
  fail "the 128 KiB rows lack their raw control: $(jq -c '[.floor.engine[] | select(.workload | startswith("128k"))]' "$json")"
[[ $(grep -cE '^\| (event|poll) \| tcp \| block \| [0-9.]+ \([0-9.]+\.\.[0-9.]+\) \| [0-9.]+ \([0-9.]+\.\.[0-9.]+\) \| [0-9.]+( \*\*(engine gap|control beaten)\*\*)? \|$' "$out/report.md") == 2 ]] ||
  fail "report.md lacks the 128 KiB rows against their control: $(grep -A6 'against their raw ceiling' "$out/report.md")"
# The target's cost comes from rounds that each measured the engine and the
# floor, and is their median difference.
jq -e '.floor.target_cost | (map(.target) | sort) == ["event", "poll"] and
  all(.transport == "tcp" and (.rounds | length) == 1 and all(.rounds[]; .floor_p50_us > 0 and .engine_p50_us > 0) and
      ((.cost_us.median - (.rounds[0].engine_p50_us - .rounds[0].floor_p50_us)) | fabs < 1e-9) and
      ((.per_floor.median - .rounds[0].engine_p50_us / .rounds[0].floor_p50_us) | fabs < 1e-9))' \
  "$json" >/dev/null || fail "the target cost rows are missing or inconsistent: $(jq -c '.floor.target_cost' "$json")"
# Every QD1 and QD32 cell has the floor of its own round and its ratio to it.
jq -e '[.floor.engine[] | select(.workload | test("^qd"))] | length == 8 and
  all((.floor_beside | length) == 1 and .per_floor.median > 0 and
      (if .workload == "qd1" then (.per_floor.median - .p50_us.median / .floor_beside[0].p50_us)
       else (.per_floor.median - .iops.median / .floor_beside[0].per_second) end | fabs < 1e-9))' "$json" >/dev/null ||
  fail "the QD1/QD32 cells lack the floor measured beside them: $(jq -c '[.floor.engine[] | {workload, target, poll, per_floor, floor_beside}]' "$json")"
# --poll against the event loop, run by run, for every cell both modes ran.
jq -e '.floor as $f | .floor.poll_vs_event | length == 5 and all(. as $r |
  ([$f.engine[] | select(.workload == $r.workload and .transport == $r.transport and .poll == $r.poll)] |
   map({(.target): .iops.median}) | add) as $by | ($r.iops_ratio.median - $by.poll / $by.event) | fabs < 1e-9)' "$json" >/dev/null ||
  fail "the --poll against event loop rows are missing or inconsistent: $(jq -c '.floor.poll_vs_event' "$json")"
jq -e '.floor.poll_vs_event | all(.event_sleeps_per_kio >= 0)' "$json" >/dev/null ||
  fail "the --poll rows lack the event loop's sleeps: $(jq -c '.floor.poll_vs_event' "$json")"
[[ $(grep -cE '^\| (qd1|qd32|128k-qd16) \| tcp \| (block|busy) \| [0-9.]+ \([0-9.]+\.\.[0-9.]+\) \| [0-9.]+ \|$' "$out/report.md") == 5 ]] ||
  fail "report.md lacks the --poll against event loop table: $(grep -A9 -- '--poll against the event loop' "$out/report.md")"
jq -e --arg k "$(uname -r)" --arg cc "$(cat /proc/sys/net/ipv4/tcp_congestion_control)" \
  '.floor.conditions | .kernel == $k and .cc == $cc and .ramp_s == 1 and .seconds == 2' "$json" >/dev/null ||
  fail "the floor does not say its kernel, congestion control and warm-up: $(jq -c '.floor.conditions' "$json")"
grep -q "congestion control $(cat /proc/sys/net/ipv4/tcp_congestion_control) at both ends" "$out/report.md" ||
  fail "report.md does not say the floor's congestion control"
jq -e '.floor.connect | (keys | sort) == ["ffdhe2048", "ffdhe8192", "none", "null"] and
  all(.[]; .admin_ms.median > 0 and .io_queue_ms.median > 0 and .total_ms.median > 0)' "$json" >/dev/null ||
  fail "the connect-time rows are missing: $(jq -c '.floor.connect' "$json")"
[[ $(grep -cE '^\| (none|null|ffdhe2048|ffdhe8192) \| [0-9.]+ \(' "$out/report.md") == 4 ]] ||
  fail "report.md lacks the connect-time table: $(grep -A7 'Time to connect' "$out/report.md")"
grep -q "^### The target's own cost per command" "$out/report.md" || fail "report.md has no target cost section"
[[ $(grep -cE '^\| (event|poll) \| tcp \| [0-9.]+ \| [0-9.]+ \| -?[0-9.]+ \(-?[0-9.]+\.\.-?[0-9.]+\) \| [0-9.]+ \([0-9.]+\.\.[0-9.]+\) \|$' "$out/report.md") == 2 ]] ||
  fail "the target cost table lacks a row per mode: $(grep -A5 "target's own cost" "$out/report.md")"
# TLS cost rows: plaintext and user-space records over TCP, each figure
# beside its ratio to the plaintext row.
jq -e '.floor.tls.rows | length == 4 and all(.iops.median > 0 and .mib_s.median > 0 and .fio_cpu_s_per_gib.median > 0 and
  .target_cpu_s_per_gib.median > 0) and ([.[] | "\(.security) \(.workload)"] | sort) ==
  ["plaintext 128k-write", "plaintext qd1", "user 128k-write", "user qd1"]' "$json" >/dev/null ||
  fail "the TLS cost rows are missing: $(jq -c '.floor.tls' "$json")"
[[ $(grep -cE '^\| tcp \| user \| (qd1|128k-write) \| ([0-9.]+ \([0-9.]+\))? \| [0-9]+ \([0-9.]+\) \| [0-9]+ \([0-9.]+\) \| [0-9.]+ \([0-9.]+\) \| [0-9.]+ \([0-9.]+\) \|$' "$out/report.md") == 2 ]] ||
  fail "report.md lacks the TLS rows with their ratios: $(grep -A8 'What TLS costs' "$out/report.md")"
grep -A6 "^### The target's own cost" "$out/report.md"
echo PASS
