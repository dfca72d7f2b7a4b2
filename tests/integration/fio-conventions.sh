#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# fio conventions: options with a fixed set of values are listed by
# --enghelp=ENGINE,OPTION; a bad value of any option is refused by fio's
# parser before any job starts, with the engine parser's message; engine
# messages go through fio's logging, so a `fio --client` shows the reason a
# job failed on the server, not only "exited with error".
source "$(dirname "$0")/lib.sh"
lab_up --paths 1
start_target --listen 10.1.1.1 --subnqn "$NQN" --ns ram:64m --log-level warn
fio_env=(env LD_PRELOAD="${MPNVME_PRELOAD:-}" ASAN_OPTIONS="$ASAN_OPTIONS")

for opt in transport iopolicy log_level trim_mode poll hdr_digest; do
  # fio prints an option's values under "valid values" (--enghelp=ENGINE,OPTION)
  help=$("${fio_env[@]}" fio --enghelp="$ENGINE,$opt" 2>&1)
  grep -q "valid values" <<<"$help" && pass "--enghelp=ENGINE,$opt lists its values" ||
    fail "--enghelp=ENGINE,$opt shows no values: $help"
done

for bad in transport=udp iopolicy=fastest poll=spin log_level=loud trim_mode=erase nsid=0 kato=7200 data_digest=2; do
  out=$(in_host "${fio_env[@]}" fio --name=bad --ioengine=external:"$ENGINE" --traddr=10.1.1.1 --subnqn="$NQN" \
    --rw=read --size=1m --"$bad" 2>&1)
  rc=$?
  if ((rc != 0)) && grep -qF "mpnvme: ${bad}: invalid value (accepted: " <<<"$out" && ! grep -q "Starting" <<<"$out"; then
    pass "$bad refused by fio's parser before the job starts"
  else
    fail "$bad: exit $rc: $out"
  fi
done

# fio server and client in the host namespace; the job names a subsystem
# the target does not serve, so the engine's reason must reach the client.
port=$((20000 + RANDOM % 20000))
in_host "${fio_env[@]}" fio --server=ip:127.0.0.1,"$port" >"$work/server.log" 2>&1 &
server=$!
ready=0
for _ in $(seq 100); do
  if in_host bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then ready=1; break; fi
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
((ready)) || { cat "$work/server.log"; fail "fio --server did not listen on $port"; }
cat >"$work/client.fio" <<JOB
[client-job]
ioengine=external:$ENGINE
traddr=10.1.1.1
subnqn=nqn.2026-11.io.mpnvme:no-such-subsystem
rw=read
size=1m
JOB
out=$(in_host timeout 60 fio --client=ip:127.0.0.1,"$port" "$work/client.fio" 2>&1)
grep -q "no-such-subsystem" <<<"$out" && grep -qi "connect" <<<"$out" &&
  pass "the client shows the engine's reason: $(grep -m1 no-such-subsystem <<<"$out")" ||
  fail "the client did not see the engine's message: $out"
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
stop_target || fail "target exit status"
finish
