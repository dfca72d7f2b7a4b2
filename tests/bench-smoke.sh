#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# bench/run seed000 --smoke: the bench's machinery end to end (lab, target,
# fio, results.json, report.md, plots) in about a minute, checked for
# shape and sense, never for speed: every cell moved data, the report has
# the published figures beside ours, the plot is a PNG, and MPTCP round-robin
# over 2 paths beats 1.5x the one path tcp numa uses.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d /tmp/mpnvme-bench-smoke.XXXXXX)
trap 'rm -rf "$out"' EXIT
"$root/bench/run" seed000 --smoke --out "$out" >"$out/run.log" 2>&1 || { tail -30 "$out/run.log"; echo "FAIL: bench/run"; exit 1; }
json=$out/results.json
fail() { echo "FAIL: $*"; exit 1; }
[[ $(jq '.seed000.matrix | length' "$json") == 8 ]] || fail "expected 8 matrix cells: $(jq -c '.seed000.matrix | length' "$json")"
jq -e '[.seed000.matrix[], .seed000.extra[] | .randread.mib_s.median, .randwrite.mib_s.median] | all(. > 0)' "$json" >/dev/null ||
  fail "a cell moved no data"
jq -e '.meta.target_cpu != .meta.fio_cpu' "$json" >/dev/null || fail "target and fio share a CPU"
grep -q '^## Seed 000' "$out/report.md" || fail "report.md has no seed 000 section"
grep -q '| tcp | round-robin | .* | 455 (0.95) | 455 (0.95) |' "$out/report.md" || fail "the published figures are missing from the table"
grep -q 'seed000-matrix.png' "$out/report.md" || fail "report.md does not embed the plot"
[[ $(head -c 8 "$out/seed000-matrix.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "seed000-matrix.png is not a PNG"
(($(stat -c %s "$out/seed000-matrix.png") > 10000)) || fail "seed000-matrix.png is nearly empty"
read -r mp one < <(jq -r '.seed000.matrix | map(select(.condition == "lossless")) |
  "\(map(select(.transport == "mptcp" and .iopolicy == "round-robin"))[0].randread.mib_s.median) \(map(select(.transport == "tcp" and .iopolicy == "numa"))[0].randread.mib_s.median)"' "$json")
awk -v a="$mp" -v b="$one" 'BEGIN { exit !(a > 1.5 * b) }' || fail "MPTCP round-robin over 2 paths ($mp MiB/s) not above 1.5x one path ($one)"
grep -A3 '^| transport | iopolicy' "$out/report.md"
echo "PASS: mptcp round-robin over 2 paths $mp MiB/s, one path (tcp numa) $one MiB/s"
