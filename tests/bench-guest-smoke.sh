#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# bench/run guest --smoke: the qemu-lab part of the bench end to end (guest
# boot with the programs copied in, mpnvme-lab with netem delay and loss
# inside it, mpnvme-target --job, the engine, the kernel host connected by
# mpnvme-nvmet connect --job), checked for shape, never for speed: both
# cells moved data, the lab had its scaled delay, the loss rules dropped
# packets, the raw control ran with the engine's connections, and the
# report has the engine / kernel, engine / raw and kernel / raw ratios.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d /tmp/mpnvme-bench-guest.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$root/bench/run" guest --smoke --out "$out" >"$out/run.log" 2>&1 || { tail -30 "$out/run.log"; fail "bench/run guest"; }
json=$out/results.json
# Where the plan is, not the guest's result lines, on the screen; those go
# to the results directory.
grep -qE '^guest \(6\.12\): run [0-9]+ of [0-9]+, [0-9:]+ gone' "$out/run.log" || fail "no progress lines: $(head -5 "$out/run.log")"
grep -q '^  guest: .*"mib_s"' "$out/run.log" && fail "the guest's per-run JSON reached the screen"
console=$(ls "$out"/guest-6.12-console.log 2>/dev/null) && grep -q '"mib_s"' "$console" ||
  fail "the guest's result lines are not in the results directory: $(ls "$out")"
echo "ok: progress on the screen, the guest's $(grep -c . "$console") result lines in $(basename "$console")"
jq -e '.guest.cells | length == 3' "$json" >/dev/null || fail "expected 3 cells: $(jq -c '.guest.cells' "$json")"
for side in engine kernel raw; do
  mib=$(jq -r --arg s "$side" '.guest.cells[] | select(.side == $s) | .randread.mib_s.median // "none"' "$json")
  [[ $mib =~ ^[0-9.]+$ ]] && awk -v m="$mib" 'BEGIN { exit !(m > 0) }' || fail "$side cell moved no data: $(jq -c --arg s "$side" '.guest.cells[] | select(.side == $s)' "$json")"
  echo "ok: $side tcp round-robin read on the lossy paths: $mib MiB/s"
done
delay=$(jq -r '.guest.delay_ms' "$json")
jq -e --arg d "delay ${delay}ms" '.guest.labs | any(contains("netem") and contains($d))' "$json" >/dev/null ||
  fail "the guest lab had no netem delay of $delay ms: $(jq -c '.guest.labs' "$json")"
echo "ok: netem delay $delay ms per path in the guest"
dropped=$(jq -r '.guest.counters.lossy.dropped' "$json")
((dropped > 0)) || fail "the loss rules dropped nothing: $(jq -c '.guest.counters' "$json")"
echo "ok: the loss rules dropped $dropped packets"
grep -qE '^\| lossy \| round-robin \| [0-9.]+ \([0-9.]+\) \| [0-9.]+ \([0-9.]+\) \| [0-9.]+ \|' "$out/report.md" ||
  fail "report.md lacks the engine / kernel row: $(grep -A4 '^| condition' "$out/report.md")"
# The engine's raw control: 2 connections per path (its 2 jobs), beside it.
jq -e '.guest.cells[] | select(.side == "raw") | .randread.subflows | length == 4' "$json" >/dev/null ||
  fail "the raw control did not use the engine's 4 connections: $(jq -c '.guest.cells[] | select(.side == "raw")' "$json")"
grep -qE '^\| lossy \| round-robin \| tcp \| [0-9.]+ \([0-9.]+\) \| [0-9.]+\.[0-9]+( \*\*[a-z ]+\*\*)? \| [0-9.]+\.[0-9]+ \|' "$out/report.md" ||
  fail "report.md lacks the engine / raw and kernel / raw row: $(grep -A4 '^Raw controls' "$out/report.md")"
grep -A3 '^| condition' "$out/report.md"
echo PASS
