#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A clean exit: mpnvme-target stopped by SIGTERM or SIGINT and started again
# at once on the same port binds it, ten times in a row, with a 1 GiB
# namespace (its teardown takes time), half of the times with a host
# connected and reading when the signal comes. A ring torn down with an
# accept still in flight kept the listening socket alive after the process
# had exited, and 2-5 of 10 restarts failed with "Address already in use".
# On loopback: started through `ip netns exec`, each start took long
# enough for the old ring's teardown to finish first, and the test passed
# on the broken target.
source "$(dirname "$0")/lib.sh"
port=$((20000 + RANDOM % 20000))
bound=0
for i in $(seq 10); do
  sig=TERM; ((i % 2)) && sig=INT
  "$TARGET" --transport tcp --listen "127.0.0.1:$port" --subnqn "$NQN" --ns ram:1g \
    --log-level warn >"$work/restart-$i.log" 2>&1 &
  pid=$!
  up=0
  for _ in $(seq 100); do
    grep -q 'mpnvme-target: ready' "$work/restart-$i.log" && { up=1; break; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if ((!up)); then
    fail "restart $i did not come up: $(grep -m1 -E 'error|bind' "$work/restart-$i.log")"
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    continue
  fi
  bound=$((bound + 1))
  reader=
  if ((i > 5)); then # a connected host reading when the signal comes
    env LD_PRELOAD="${MPNVME_PRELOAD:-}" ASAN_OPTIONS="$ASAN_OPTIONS" fio --name=r --ioengine=external:"$ENGINE" \
      --traddr=127.0.0.1 --trsvcid="$port" --transport=tcp --subnqn="$NQN" --rw=randread --bs=4k --iodepth=8 --size=64m \
      --time_based --runtime=30 --ctrl_loss_tmo=0 --reconnect_delay=0.1 >"$work/reader-$i.log" 2>&1 &
    reader=$!
    connected=0
    for _ in $(seq 200); do
      (($(ss -Htn state established "( sport = :$port )" | wc -l) > 0)) && { connected=1; break; }
      sleep 0.05
    done
    ((connected)) || fail "restart $i: the reader did not connect: $(tail -3 "$work/reader-$i.log")"
  fi
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  ((rc == 0)) || fail "restart $i: SIGTERM/SIGINT exit status $rc: $(tail -3 "$work/restart-$i.log")"
  [[ -n $reader ]] && { kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null; }
done
((bound == 10)) && pass "10 of 10 immediate restarts bound port $port" || fail "$bound of 10 restarts bound port $port"
finish
