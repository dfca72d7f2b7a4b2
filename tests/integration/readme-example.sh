#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The README's lab example, run as written: the first ```sh block after the
# line that names this test, in a directory laid out like the checkout after
# `make` (build/ is the build under test). It must exit 0, fio must have
# read data, and MPTCP must have used all four paths.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
: "${MPNVME_BUILD:?MPNVME_BUILD must point at the build directory}"
block=$(awk '/readme_lab_example/ { found = 1 } found && /^```sh$/ { on = 1; next } on && /^```$/ { exit } on' "$root/README.md")
[[ -n $block ]] || { echo "FAIL: no command block after 'readme_lab_example' in README.md"; exit 1; }
if ip netns list | grep -q '^mpnvme-host\b'; then
  echo "FAIL: a lab named mpnvme is up already; the README example creates it"; exit 1
fi
work=$(mktemp -d /tmp/mpnvme-readme.XXXXXX)
trap '"$root/toolkit/lab/mpnvme-lab" down >/dev/null 2>&1; rm -rf "$work"' EXIT
ln -s "$root/toolkit" "$work/toolkit"
ln -s "$MPNVME_BUILD" "$work/build"
echo "$block"
out=$(cd "$work" && LD_PRELOAD="${MPNVME_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0 bash -e -c "$block" 2>&1)
rc=$?
echo "$out" | tail -25
((rc == 0)) || { echo "FAIL: the README block exited $rc"; exit 1; }
grep -q "READ: bw=" <<<"$out" || { echo "FAIL: fio printed no read summary"; exit 1; }
used=$(awk '$1 ~ /^[1-4]$/ && $3 > 1000000 { n++ } END { print n + 0 }' <<<"$out")
((used == 4)) || { echo "FAIL: MPTCP moved data over $used of 4 paths (mpnvme-lab counters above)"; exit 1; }
echo PASS
