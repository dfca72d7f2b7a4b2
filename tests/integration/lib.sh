# SPDX-License-Identifier: GPL-2.0-only
# Shared by the integration tests: a private lab, the target in it, fio in
# the host namespace, and checks. Everything is removed on exit.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${MPNVME_BUILD:?MPNVME_BUILD must point at the build directory}"
LAB="$root/toolkit/lab/mpnvme-lab"
ENGINE="$MPNVME_BUILD/engine/fio-mpnvme.so"
# MPNVME_TARGET: another build of the target (the ThreadSanitizer one).
TARGET=${MPNVME_TARGET:-$MPNVME_BUILD/mpnvme-target/mpnvme-target}
NQN=nqn.2026-11.io.mpnvme:integration
lab=it$$
work=$(mktemp -d /tmp/mpnvme-it.XXXXXX)
cd "$work" || exit 1 # what fio writes (verify state files) stays out of the checkout
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
failures=0

watchers=""
cleanup() {
  [[ -n $watchers ]] && kill $watchers 2>/dev/null
  [[ -n ${target_pid:-} ]] && kill "$target_pid" 2>/dev/null && wait "$target_pid" 2>/dev/null
  "$LAB" -n "$lab" down >/dev/null 2>&1
  if grep -qsE 'ERROR: (Address|Undefined|Leak)Sanitizer|runtime error:|WARNING: ThreadSanitizer' "$work"/*.log; then
    echo "FAIL: sanitizer report:"; grep -hE -A30 'Sanitizer|runtime error' "$work"/*.log | head -80
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
# ctl COMMAND...: the target's control socket (--control $work/control).
ctl() { in_target "$TARGET" ctl "$work/control" "$@"; }
# forgive ADDR: the target (--control $work/control) lists ADDR as backing
# off after a failed authentication; then let it in again at once. Tests
# start the target with a long --auth-backoff, so that a retry is refused
# however slow the machine, and forgive instead of sleeping it out.
forgive() {
  local list
  list=$(ctl backoff 2>&1) || fail "ctl backoff: $list"
  grep -q "^$1 waits [0-9]* ms after" <<<"$list" || fail "$1 is not backing off: $list"
  ctl backoff forgive "$1" >/dev/null || fail "ctl backoff forgive $1"
}

# start_target ARGS...: mpnvme-target in the target namespace, ready when it
# says so.
# TARGET_WRAP: words to run the target under (prlimit --nofile=N).
start_target() {
  # Emptied here, not by the background job's redirection: the wait below
  # could otherwise read the last target's "ready" before it is gone.
  : >"$work/target.log"
  # shellcheck disable=SC2086 # the wrapper's words, split
  "$LAB" -n "$lab" exec target ${TARGET_WRAP:-} "$TARGET" "$@" >>"$work/target.log" 2>&1 &
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
# until_within SECONDS WHAT CMD...: CMD is tried every 0.1 s until it
# succeeds; after SECONDS, a failure naming WHAT (and status 1). Tests wait
# on conditions like this, never on a sleep that guesses how long it takes.
until_within() {
  local limit=$1 what=$2 end=$((SECONDS + $1))
  shift 2
  until "$@"; do
    ((SECONDS < end)) || { fail "$what: not within $limit s"; return 1; }
    sleep 0.1
  done
}
# flowing PATH: wire path PATH (host side) carries I/O now: 100 KB or more
# in 0.2 s.
flowing() {
  local f=/sys/class/net/h$1/statistics r0 t0 r1 t1
  read -r r0 t0 <<<"$(in_host cat $f/rx_bytes $f/tx_bytes | tr '\n' ' ')"
  sleep 0.2
  read -r r1 t1 <<<"$(in_host cat $f/rx_bytes $f/tx_bytes | tr '\n' ' ')"
  ((r1 + t1 - r0 - t0 >= 100000))
}
# host-side rx+tx bytes per path, as "path bytes" lines
path_bytes() { "$LAB" -n "$lab" counters --json | jq -r '.paths[] | "\(.path) \(.rx_bytes + .tx_bytes)"'; }

# watch_path PATH LOG: from now until the test ends, every 100 ms one line
# "TIME BYTES DOWNS UPS" in $work/watch-PATH: the time, the bytes path PATH
# carried so far (host side, both directions), and how many "path down" and
# "path up again" lines of that path the engine log LOG holds.
watch_path() {
  local p=$1 log=$2
  in_host bash -c "while :; do echo \$(date +%s.%N) \$((\$(cat /sys/class/net/h$p/statistics/rx_bytes) + \$(cat /sys/class/net/h$p/statistics/tx_bytes))) \
    \$(grep -cE '10.1.$p.1:4420 qid [0-9]+: path down' $log 2>/dev/null) \$(grep -cE '10.1.$p.1:4420 qid [0-9]+: path up again' $log 2>/dev/null); sleep 0.1; done" \
    >"$work/watch-$p" 2>/dev/null &
  watchers+=" $!"
}
# blackhole PATH SECONDS: the path's packets vanish (mpnvme-lab loss 100)
# for SECONDS; sets $cut and $restored (date +%s.%N) for failover_times.
blackhole() {
  cut=$(date +%s.%N)
  "$LAB" -n "$lab" loss "$1" 100 || fail "lab: loss $1 100"
  sleep "$2"
  restored=$(date +%s.%N)
  "$LAB" -n "$lab" loss "$1" 0 || fail "lab: loss $1 0"
}
# failover_times PATH START END: how the engine saw a fault of PATH from
# START to END (date +%s.%N): when it declared the path down, and how long
# after END the path carried I/O again (100 KB or more in 100 ms); "-"
# where it did not happen.
failover_times() {
  awk -v s="$2" -v e="$3" '
    $1 >= s && !down && $3 > d0 { down = $1 - s } NR == 1 || $1 < s { d0 = $3 }
    $1 >= e && !back && prev && $2 - prev >= 100000 { back = $1 - e } { prev = $2 }
    END { printf "path down %s s after the fault began, carrying I/O %s s after it ended\n",
          down ? sprintf("%.1f", down) : "-", back ? sprintf("%.1f", back) : "-" }' "$work/watch-$1"
}
