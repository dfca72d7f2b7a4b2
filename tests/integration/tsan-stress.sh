#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Threads under load, for the ThreadSanitizer build of the target: two
# event loops, verified I/O from the engine, a Connect storm (flood.py) and
# the control socket changing subsystems, hosts, keys and ANA states all at
# once. Passes when the I/O verified, every probe of the storm was
# answered (4bcf7ad deadlocked: a subsystem added took the configuration
# lock, then the controllers'; an admin Connect the reverse), SIGTERM ends
# the target, and ThreadSanitizer reported nothing.
source "$(dirname "$0")/lib.sh"
lab_up --paths 1
fiohost=nqn.2026-12.io.mpnvme:stress-fio
start_target --listen 10.1.1.1 --transport tcp --threads 2 --subnqn "$NQN" --ns ram:64m --allow-host "$fiohost" \
  --allow-host nqn.2026-12.io.mpnvme:flood-0 --control "$work/control" --log-level warn
seconds=${MPNVME_STRESS_SECONDS:-20}
run_fio stress --traddr=10.1.1.1 --transport=tcp --hostnqn="$fiohost" --rw=randwrite --bs=4k,64k --iodepth=16 \
  --size=32m --time_based=1 --runtime="$seconds" --verify=crc32c --verify_fatal=1 --do_verify=1 --ctrl_loss_tmo=30 \
  >/dev/null &
fio_pid=$!
in_host python3 "$root/tests/integration/flood.py" 10.1.1.1 "$seconds" 6 "$NQN" nqn.2026-12.io.mpnvme:churn \
  nqn.2014-08.org.nvmexpress.discovery >"$work/flood.out" 2>&1 &
flood=$!
changes=0 refused=0
end=$((SECONDS + seconds))
while ((SECONDS < end)); do
  for c in "subsystem add nqn.2026-12.io.mpnvme:churn ram:4m" "host allow nqn.2026-12.io.mpnvme:churn nqn.2026-12.io.mpnvme:flood-1" \
    "host allow nqn.2026-12.io.mpnvme:churn nqn.2026-12.io.mpnvme:flood-2" "ana 1 2 inaccessible" \
    "host deny nqn.2026-12.io.mpnvme:churn nqn.2026-12.io.mpnvme:flood-1" "ana 1 2 optimized" \
    "host key nqn.2026-12.io.mpnvme:flood-3 dhchap_key=DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:" \
    "subsystem remove nqn.2026-12.io.mpnvme:churn" "host forget nqn.2026-12.io.mpnvme:flood-3" stats subsystems; do
    if timeout 10 "$TARGET" ctl "$work/control" $c >/dev/null 2>&1; then changes=$((changes + 1)); else refused=$((refused + 1)); fi
  done
done
wait "$flood" && pass "$(grep '^ok' "$work/flood.out" | cut -c5-); $(grep '^flood' "$work/flood.out")" ||
  fail "$(cat "$work/flood.out")"
((changes >= 10)) && pass "$changes control commands took effect beside it ($refused refused)" ||
  fail "only $changes control commands took effect ($refused refused or timed out)"
wait "$fio_pid" && pass "the engine's verified I/O ran through all of it" || fail "fio: $(tail -3 "$work/stress.log")"
kill -TERM "$target_pid"
until_within 10 "the target to end on SIGTERM" bash -c "! kill -0 $target_pid 2>/dev/null" && pass "SIGTERM ended the target"
wait "$target_pid" 2>/dev/null
target_pid=
finish
