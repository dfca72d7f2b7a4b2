#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Hostile hosts against a running mpnvme-target while a good host (fio with
# verify) keeps working: the target ends each bad connection, never crashes,
# and the good client's data verifies.
source "$(dirname "$0")/lib.sh"
good_host=nqn.2014-08.org.nvmexpress:uuid:6d6a5f0e-5b27-4e57-8d59-0a1f7c6f0002
bad_script_host=nqn.2014-08.org.nvmexpress:uuid:6d6a5f0e-5b27-4e57-8d59-0a1f7c6f0001
lab_up --paths 1
start_target --listen 10.1.1.1 --subnqn "$NQN" --ns ram:256m --log-level warn \
  --allow-host "$good_host" --allow-host "$bad_script_host"
run_fio good --traddr=10.1.1.1 --hostnqn="$good_host" --rw=randrw --bs=16k --iodepth=16 --size=64m \
  --time_based=1 --runtime=20 --verify=crc32c --verify_fatal=1 --verify_backlog=64 &
fio_pid=$!
until_within 10 "the good client's I/O before the attack" flowing 1
in_host python3 "$root/tests/integration/hostile_clients.py" 10.1.1.1 4420 "$NQN" || fail "hostile clients"
wait "$fio_pid" || fail "the good client failed while the target was under attack"
[[ $(json good | jq '[.jobs[].read.io_bytes] | add') -gt 0 ]] || fail "good client verified nothing"
kill -0 "$target_pid" 2>/dev/null || fail "target died"
# SIGUSR1 makes the target print its port counters: wait (bounded) for the
# new line rather than for a fixed time.
before=$(grep -cE '^port 1' "$work/target.log" || true)
kill -USR1 "$target_pid"
for _ in $(seq 100); do
  (($(grep -cE '^port 1' "$work/target.log" || true) > before)) && break
  sleep 0.1
done
(($(grep -cE '^port 1' "$work/target.log" || true) > before)) || fail "no port counters within 10 s of SIGUSR1"
grep -E '^port 1' "$work/target.log" | tail -1
errors=$(grep -E '^port 1' "$work/target.log" | tail -1 | sed -n 's/.* errors \([0-9]*\).*/\1/p')
((errors >= 10)) && pass "target counted $errors protocol errors and kept serving" || fail "target counted $errors errors"
stop_target || fail "target exited with $?"
finish
