# SPDX-License-Identifier: GPL-2.0-only
# Shared by the integration tests: a private lab, the target in it, fio in
# the host namespace, and checks. Everything is removed on exit.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${MPNVME_BUILD:?MPNVME_BUILD must point at the build directory}"
LAB="$root/toolkit/lab/mpnvme-lab"
ENGINE="$MPNVME_BUILD/engine/fio-mpnvme.so"
TARGET="$MPNVME_BUILD/toolkit/target/mpnvme-target"
NQN=nqn.2026-11.io.mpnvme:integration
lab=it$$
work=$(mktemp -d /tmp/mpnvme-it.XXXXXX)
cd "$work" || exit 1 # what fio writes (verify state files) stays out of the checkout
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
failures=0

cleanup() {
  [[ -n ${target_pid:-} ]] && kill "$target_pid" 2>/dev/null && wait "$target_pid" 2>/dev/null
  "$LAB" -n "$lab" down >/dev/null 2>&1
  if grep -qsE 'ERROR: (Address|Undefined|Leak)Sanitizer|runtime error:' "$work"/*.log; then
    echo "FAIL: sanitizer report:"; grep -hE -A20 'Sanitizer|runtime error' "$work"/*.log | head -60
    failures=$((failures + 1))
  fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
finish() {
  cleanup
  trap - EXIT
  if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
  echo PASS
  exit 0
}

lab_up() { "$LAB" -n "$lab" up "$@" >/dev/null || { echo "FAIL: lab up"; exit 1; }; }
in_host() { "$LAB" -n "$lab" exec host "$@"; }
in_target() { "$LAB" -n "$lab" exec target "$@"; }

# start_target ARGS...: mpnvme-target in the target namespace, ready when it
# says so.
start_target() {
  "$LAB" -n "$lab" exec target "$TARGET" "$@" >"$work/target.log" 2>&1 &
  target_pid=$!
  for _ in $(seq 100); do
    grep -q 'mpnvme-target: ready' "$work/target.log" && return 0
    kill -0 "$target_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$work/target.log"
  echo "FAIL: target did not start"; exit 1
}

stop_target() {
  kill -INT "$target_pid"
  wait "$target_pid"
  local rc=$?
  target_pid=
  return $rc
}

# run_fio NAME ARGS...: fio with the engine in the host namespace; JSON in
# $work/NAME.json, engine log in $work/NAME.log. Returns fio's status.
run_fio() {
  local name=$1; shift
  in_host env LD_PRELOAD="${MPNVME_PRELOAD:-}" ASAN_OPTIONS="$ASAN_OPTIONS" timeout -s INT 120 \
    fio --name="$name" --ioengine=external:"$ENGINE" --subnqn="$NQN" --output-format=json \
    --output="$work/$name.json" "$@" 2>"$work/$name.log"
  local rc=$?
  cat "$work/$name.log"
  return $rc
}

json() { sed -n '/^{/,$p' "$work/$1.json"; }
# host-side rx+tx bytes per path, as "path bytes" lines
path_bytes() { "$LAB" -n "$lab" counters --json | jq -r '.[] | "\(.path) \(.rx_bytes + .tx_bytes)"'; }
