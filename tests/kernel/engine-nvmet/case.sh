#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# One fio run of the engine against the Linux kernel target in the qemu lab.
#   case.sh STATEDIR EXPECT NAME [fio options...]
#   case.sh STATEDIR EXPECT NAME JOBFILE.fio [VAR=VALUE...]
# Job files read the target from ${MPNVME_ENGINE}, ${MPNVME_PORT} and
# ${MPNVME_SUBNQN}, as user job files do.
# EXPECT: ok      fio exits 0 and no job reports an error; with verify=, the
#                 verify reads really happened
#         fail:RE fio exits non-zero and its output matches the regex RE
#         sigint  fio gets SIGINT once its connections carried 1 MiB, must stop within
#                 20 s and still report the I/O it did
# The engine path comes from MPNVME_ENGINE; MPNVME_PRELOAD is preloaded
# (the sanitizer runtime when the engine is built with ASan).
set -uo pipefail
state=$1 expect=$2 name=$3
shift 3
port=$(cat "$state/port") || { echo "lab not running ($state)"; exit 1; }
cd "$state" || exit 1 # files fio writes (verify state) stay out of the checkout
out="$state/$name.json" log="$state/$name.log"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export MPNVME_PORT=$port MPNVME_SUBNQN=nqn.2026-11.io.mpnvme:kernel-lab
if [[ ${1:-} == *.fio ]]; then
  jobfile=$1; shift
  for kv in "$@"; do export "${kv?}"; done
  set --
  args=(--output-format=json --output="$out" "$jobfile")
else
  args=(--name="$name" --ioengine=external:"$MPNVME_ENGINE" --traddr=127.0.0.1 --trsvcid="$port"
        --subnqn="$MPNVME_SUBNQN" --output-format=json --output="$out" "$@")
fi
# The command line without secrets (auth-case.sh passes some inline).
sed -E 's/(dhchap_(ctrl_)?secret=)[^ ]+/\1(not shown)/g' <<<"fio ${args[*]}"
if [[ $expect == sigint ]]; then
  LD_PRELOAD=${MPNVME_PRELOAD:-} fio "${args[@]}" 2>"$log" &
  pid=$!
  # SIGINT mid-I/O: once fio's connections to the target carried 1 MiB.
  for _ in $(seq 300); do
    ss -tinH state established "( dport = :$port )" | grep -oE 'bytes_(acked|received):[0-9]+' |
      awk -F: '{ s += $2 } END { exit !(s > 1048576) }' && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -INT "$pid"
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid"; echo "FAIL: fio still running 20 s after SIGINT"; exit 1
  fi
  wait "$pid"
  rc=$?
  # fio's exit status after a terminating signal is 128 by design.
  [[ $rc == 128 ]] && rc=0
  expect=ok
else
  LD_PRELOAD=${MPNVME_PRELOAD:-} timeout -s INT 300 fio "${args[@]}" 2>"$log"
  rc=$?
fi
cat "$log"
if grep -qE 'ERROR: (Address|Undefined|Leak)Sanitizer|runtime error:' "$log"; then
  echo "FAIL: sanitizer report"; exit 1
fi
case "$expect" in
  ok)
    [[ $rc == 0 ]] || { echo "FAIL: fio exited $rc"; exit 1; }
    # fio may print non-JSON lines before the JSON document.
    json=$(sed -n '/^{/,$p' "$out")
    jq -e '[.jobs[].error] | all(. == 0)' <<<"$json" >/dev/null || { echo "FAIL: a job reported an error"; exit 1; }
    jq -r '.jobs[] | "\(.jobname): read \(.read.io_bytes) B \(.read.iops|floor) IOPS, write \(.write.io_bytes) B \(.write.iops|floor) IOPS, trim \(.trim.io_bytes) B, clat p50 r/w \(.read.clat_ns.percentile."50.000000" // 0)/\(.write.clat_ns.percentile."50.000000" // 0) ns"' <<<"$json"
    total=$(jq '[.jobs[] | .read.io_bytes + .write.io_bytes + .trim.io_bytes] | add' <<<"$json")
    [[ $total -gt 0 ]] || { echo "FAIL: no I/O was done"; exit 1; }
    if printf '%s\n' "$@" | grep -q -- '--verify='; then
      # Verification must really read back what was written.
      jq -e '[.jobs[] | .read.io_bytes] | add > 0' <<<"$json" >/dev/null || { echo "FAIL: verify read nothing"; exit 1; }
    fi
    ;;
  fail:*)
    re=${expect#fail:}
    [[ $rc != 0 ]] || { echo "FAIL: fio exited 0 but should have failed"; exit 1; }
    grep -qE "$re" "$log" "$out" || { echo "FAIL: output lacks /$re/"; exit 1; }
    echo "refused as expected (exit $rc)"
    ;;
  *) echo "bad EXPECT $expect"; exit 2 ;;
esac
echo PASS
