#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Engine multipath against the Linux kernel target (nvmet-tcp, qemu lab)
# with two ports: a round-robin verify run over both, then the same with
# port 2 blackholed mid-run until the engine took it down (an nftables
# drop on arrival, on this side: the packets vanish after they were sent):
# no I/O error, verify passes, path 2 fails over, reconnects and carries
# I/O again before the job ends. The subsystem admits one host, with
# bidirectional DH-HMAC-CHAP: path 2's reconnect authenticates again (nvmet
# serves no I/O on a queue that has not). Everything runs in a network namespace
# this test creates, so the drop rule touches nothing else.
#   tests/kernel/multipath/run.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
state=$(mktemp -d /tmp/mpnvme-mplab.XXXXXX)
cd "$state" || exit 1 # what fio writes stays out of the checkout
ns=mpnvme-mp$$
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
source "$here/../../../qemu-lab/machine.sh"
cleanup() {
  ip netns exec "$ns" "$qemu_lab/lab.sh" stop "$state"
  ip netns del "$ns" 2>/dev/null
  rm -rf "$state"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
failures=0
in_ns() { ip netns exec "$ns" "$@"; }
ip netns add "$ns" && in_ns ip link set lo up || { echo "FAIL: cannot create network namespace"; exit 1; }

engine=$build/engine/fio-mpnvme.so
preload=""
[[ $(nm -D "$engine" | grep -c __asan_init) != 0 ]] && preload=$(gcc -print-file-name=libasan.so)
# The kernel is fetched (once) from this machine's network, not the namespace's.
"$qemu_lab/lab.sh" prepare >/dev/null || { echo "FAIL: cannot prepare the kernel lab"; exit 1; }
# The host's keys, for the engine (files only the owner reads).
source "$here/../shared/auth-keys.sh"
read -r hostnqn key ctrl_key _ <<<"$(grep ':host-sha384 ' <<<"$AUTH_HOSTS")"
(umask 077 && echo "$key" >"$state/key" && echo "$ctrl_key" >"$state/ctrl-key")
MPNVME_LAB_FILES="$here/../shared/auth-keys.sh" MPNVME_LAB_FWD=4421 in_ns "$qemu_lab/lab.sh" start "$state" "$here/guest.sh" || { echo "FAIL: guest did not boot"; exit 1; }
p1=$(cat "$state/port") p2=$(cat "$state/port-4421")
paths=127.0.0.1:$p1,127.0.0.1:$p2

# run NAME ARGS...: the engine over both paths, verifying; JSON, log and
# per-path statistics in $state.
run() {
  local name=$1; shift
  in_ns env LD_PRELOAD="$preload" timeout -s INT 300 fio --name="$name" --ioengine=external:"$engine" --traddr="$paths" \
    --subnqn=nqn.2026-11.io.mpnvme:kernel-multipath --transport=tcp --iopolicy=round-robin --rw=randrw --bs=16k \
    --iodepth=16 --verify=crc32c --verify_fatal=1 --do_verify=1 --log_level=info --path_stats="$state/$name.paths" \
    --hostnqn="$hostnqn" --dhchap_secret_file="$state/key" --dhchap_ctrl_secret_file="$state/ctrl-key" \
    --output-format=json --output="$state/$name.json" "$@" 2>"$state/$name.log"
}
ok() { # NAME: no error and something verified
  local json
  json=$(sed -n '/^{/,$p' "$state/$1.json")
  jq -e '[.jobs[].error] | all(. == 0)' <<<"$json" >/dev/null || { fail "$1: a job reported an error"; return 1; }
  [[ $(jq '[.jobs[].read.io_bytes] | add' <<<"$json") -gt 0 ]] || { fail "$1: verify read nothing"; return 1; }
  grep -qE 'ERROR: (Address|Undefined)Sanitizer|runtime error:' "$state/$1.log" && { fail "$1: sanitizer report"; return 1; }
  return 0
}

run rr --size=32m || fail "round-robin verify: fio exited $?"
ok rr && jq -e '.paths | all(.bytes_written > 0 and .bytes_read > 0)' "$state/rr.paths" >/dev/null &&
  echo "ok: round-robin verify over both nvmet ports: $(jq -c '[.paths[] | {path, commands}]' "$state/rr.paths")" ||
  fail "round-robin split: $(cat "$state/rr.paths")"

# Blackhole: everything to and from path 2's port vanishes for 5 s. The
# drop is on arrival (prerouting on lo, where the engine's and qemu's
# packets to each other come in), after the sender sent them: a drop in the
# output hook would be a local send error, which TCP just queues again.
run blackhole --size=32m --time_based=1 --runtime=24 --io_timeout=2000 --reconnect_delay=1 --connect_timeout=2 &
fio_pid=$!
# until_true SECONDS CMD...: CMD every 0.2 s until it succeeds; 1 after SECONDS.
until_true() {
  local i limit=$(($1 * 5))
  shift
  for ((i = 0; i < limit; i++)); do "$@" && return 0; sleep 0.2; done
  return 1
}
# Path 2 is up and has carried I/O: 1 MiB over its connections.
path2_busy() {
  in_ns ss -tinH state established "( dport = :$p2 )" | grep -oE 'bytes_(acked|received):[0-9]+' |
    awk -F: '{ s += $2 } END { exit !(s > 1048576) }'
}
until_true 60 path2_busy || fail "path 2 carried no I/O before the blackhole"
timeouts_before=$(in_ns nstat -asz --json | jq '.kernel.TcpExtTCPTimeouts // 0')
in_ns nft -f - <<NFT || fail "nft blackhole rule"
table inet mpnvme_blackhole {
  chain in { type filter hook prerouting priority -300; policy accept;
    iifname "lo" tcp dport $p2 counter drop
    iifname "lo" tcp sport $p2 counter drop
  }
}
NFT
cut=$SECONDS
# The blackhole lasts until the senders' TCP timed out and the engine took
# path 2 down (io_timeout 2 s), at most 20 s.
timed_out() { (($(in_ns nstat -asz --json | jq '.kernel.TcpExtTCPTimeouts // 0') > timeouts_before)); }
path2_down() { grep -qE "$p2 qid [0-9]+: path down" "$state/blackhole.log" && timed_out; }
until_true 20 path2_down || fail "after 20 s of blackhole the engine had not taken path 2 down, or TCP saw no timeout"
echo "blackhole held for $((SECONDS - cut)) s"
dropped=$(in_ns nft -j list table inet mpnvme_blackhole | jq '[.nftables[] | select(.rule) | .rule.expr[] | .counter.packets // empty] | add // 0')
in_ns nft delete table inet mpnvme_blackhole
timeouts=$(($(in_ns nstat -asz --json | jq '.kernel.TcpExtTCPTimeouts // 0') - timeouts_before))
echo "blackhole: $dropped packets vanished, $timeouts TCP retransmission timeouts in the namespace"
((dropped > 0 && timeouts > 0)) && echo "ok: a silent blackhole: the senders' timers found it" ||
  fail "blackhole: $dropped drops, $timeouts timeouts"
# Count what path 2 carries from now on: it must come back before the end.
in_ns nft -f - <<NFT || fail "nft counter rule"
table inet mpnvme_count {
  chain out { type filter hook output priority 0; policy accept;
    tcp dport $p2 counter
  }
}
NFT
wait "$fio_pid" || fail "blackhole run: fio exited $?"
ok blackhole && echo "ok: port 2 blackholed until it failed over: no I/O error, verify passed"
after=$(in_ns nft -j list table inet mpnvme_count | jq '[.nftables[] | select(.rule) | .rule.expr[] | .counter.packets // empty] | add // 0')
echo "path 2 packets after the blackhole: $after"
((after > 200)) && echo "ok: path 2 reconnected and carried I/O again" || fail "path 2 carried $after packets after the blackhole"
jq -e '.paths[1].failovers > 0 and .paths[1].reconnects > 0' "$state/blackhole.paths" >/dev/null &&
  echo "ok: path 2 $(jq -c '.paths[1] | {failovers, reconnects, down_s}' "$state/blackhole.paths")" ||
  fail "path 2 stats: $(jq -c '.paths[1]' "$state/blackhole.paths")"
# The longest completion: a command stuck on path 2 until it failed over.
echo "failover: longest completion $(sed -n '/^{/,$p' "$state/blackhole.json" | jq '[.jobs[0].read.clat_ns.max, .jobs[0].write.clat_ns.max] | max / 1e6 | floor') ms (io_timeout 2000 ms)"
grep -E 'path (down|up)' "$state/blackhole.log"
if ((failures)); then echo "$failures check(s) failed"; tail -20 "$state/blackhole.log"; exit 1; fi
echo PASS
