#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The engine's threads under ThreadSanitizer: fio (thread=1) with 8 jobs
# sharing each of two paths' controllers. The jobs start over 3 s, so they
# prepare their I/O queues on the admin threads and connect them on their
# own, side by side, while the admin threads run Keep Alive and ANA reads
# and while path 2 is blackholed, its controller resets and reconnects the
# queues of the jobs already up. Then the target is killed and restarted
# within ctrl_loss_tmo: both controllers reconnect every job's queue and
# hand it over while the jobs fail over. Passes when the verified I/O ended
# without an error, both faults were seen by the engine, and
# ThreadSanitizer reported nothing (lib.sh's cleanup reads the logs).
# MPNVME_TSAN_ENGINE: the ThreadSanitizer build of the engine;
# MPNVME_TSAN_RUNTIME: the libtsan fio preloads to run it.
source "$(dirname "$0")/lib.sh"
: "${MPNVME_TSAN_ENGINE:?the ThreadSanitizer engine (tsan_build)}" "${MPNVME_TSAN_RUNTIME:?libtsan to preload into fio}"
# shellcheck disable=SC2034 # read by lib.sh's run_fio
ENGINE=$MPNVME_TSAN_ENGINE MPNVME_PRELOAD=$MPNVME_TSAN_RUNTIME
# fio's own accesses (through the libc functions ThreadSanitizer
# intercepts) are not judged: it is not instrumented, and its threads
# synchronise through shared memory ThreadSanitizer cannot see.
export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 ignore_noninstrumented_modules=1 \
suppressions=$root/tests/integration/tsan-engine.supp"
lab_up --paths 2 --rate 1000mbit
truncate -s 256m "$work/ns.img" # a file, so that the restarted target serves the same data
target_on() { start_target --listen 10.1.1.1,10.1.2.1 --subnqn "$NQN" --ns "file:$work/ns.img" --log-level info; }
target_on
run_fio jobs --thread=1 --numjobs=8 --startdelay=0-3 --traddr=10.1.1.1,10.1.2.1 --transport=tcp --iopolicy=round-robin \
  --rw=randrw --bs=4k,16k --iodepth=8 --size=32m --offset_increment=32m --time_based=1 --runtime=14 \
  --verify=crc32c --verify_fatal=1 --do_verify=1 --log_level=info --reconnect_delay=0.3 --io_timeout=1500 --ctrl_loss_tmo=30 >"$work/jobs.out" 2>&1 &
fio_pid=$!
until_within 20 "I/O on path 2 before the blackhole" flowing 2
blackhole 2 2
until_within 20 "the engine seeing path 2 down" grep -q '10.1.2.1:4420.*path down' "$work/jobs.log" &&
  pass "path 2's blackhole took it down while jobs were starting"
until_within 20 "I/O on path 2 after the blackhole" flowing 2
kill -KILL "$target_pid"
wait "$target_pid" 2>/dev/null
target_on
until_within 20 "both paths reconnected after the restart" bash -c \
  "(( \$(grep -c 'reconnected after' '$work/jobs.log') >= 3 ))" && pass "both controllers reconnected after the restart"
wait "$fio_pid"
rc=$?
((rc == 0)) || { tail -20 "$work/jobs.out"; fail "fio exited $rc"; }
json jobs | jq -e '(.jobs | length) == 8 and ([.jobs[].error] | all(. == 0)) and ([.jobs[].read.io_bytes] | all(. > 0))' \
  >/dev/null && pass "8 jobs verified their I/O through both faults" || fail "a job reported an error or verified nothing"
finish
