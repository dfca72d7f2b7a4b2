#!/usr/local/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Guest side of tests/kernel/mptcp-pairs/run.sh, on a kernel with NVMe over
# MPTCP: the upstream selftest's topology (mpnvme-lab, 4 paths, endpoints
# on every path, limits 8/8, reflected TOS), mpnvme-target and nvmet
# (an mptcp port, made by mpnvme-nvmet apply) in the target namespace, and
# each host (the engine, the kernel host through mpnvme-nvmet connect)
# against each target from the host namespace: a verify run, then a verify
# run with path 2 blackholed for 4 s, scheduled in the lab's rule. One
# line per check on the console, "PAIRS ok: ...", "PAIRS FAIL: ...", then
# "PAIRS done".
set -uo pipefail
export PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LAB="bash /files/mpnvme-lab -n p"
JOB=/files/mptcp-pairs.fio
export MPNVME_ENGINE=/usr/local/bin/fio-mpnvme.so MPNVME_SUBNQN=nqn.2026-12.io.mpnvme:mptcp-pairs MPNVME_PATH_STATS=/dev/null
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
PRELOAD=$(cat /files/preload 2>/dev/null)
mkdir -p /run /etc/nvme && cd /tmp || exit 1
echo "nqn.2014-08.org.nvmexpress:uuid:7d2e4f1a-3b5c-4d6e-8f70-a1b2c3d4e5f6" >/etc/nvme/hostnqn
echo "7d2e4f1a-3b5c-4d6e-8f70-a1b2c3d4e5f6" >/etc/nvme/hostid
ok() { echo "PAIRS ok: $*"; }
bad() { echo "PAIRS FAIL: $*" >&2; } # stderr: out of $(...) captures
# A counter of one lab namespace (nstat, absolute).
counter() { $LAB exec "$1" nstat -asz --json | jq ".kernel.$2 // 0"; }
# The lab's drops in both directions, from one counters --json.
DROPS='.directions.to_target.dropped_packets + .directions.to_host.dropped_packets'

# verify fio flags, the same for the engine and the kernel host
VERIFY=(--rw=randrw --bs=64k --iodepth=16 --verify=crc32c --verify_fatal=1 --do_verify=1)

# host_run HOST PORT NAME ARGS...: one fio run of HOST (engine or kernel)
# against the target on PORT; the JSON in /tmp/NAME.json.
host_run() {
  local host=$1 port=$2 name=$3 dev out
  shift 3
  if [[ $host == engine ]]; then
    MPNVME_PORT=$port MPNVME_PATH_STATS=/tmp/$name.paths $LAB exec host env ${PRELOAD:+LD_PRELOAD=$PRELOAD} fio "$JOB" \
      "${VERIFY[@]}" "$@" --output-format=json --output=/tmp/$name.json >/tmp/$name.log 2>&1
    return
  fi
  out=$(MPNVME_PORT=$port $LAB exec host mpnvme-nvmet connect --job "$JOB" --ctrl-loss-tmo 30 --reconnect-delay 1 2>&1) ||
    { echo "connect: $out" >/tmp/$name.log; return 1; }
  dev=$(sed -n 's/^device //p' <<<"$out")
  # In the host namespace: the controllers' MPTCP sockets are there.
  $LAB exec host mpnvme-iopolicy show >/tmp/$name.show 2>&1
  fio --name=pairs --filename="$dev" --ioengine=libaio --direct=1 --size=32m "${VERIFY[@]}" "$@" \
    --output-format=json --output=/tmp/$name.json >/tmp/$name.log 2>&1
  local rc=$?
  MPNVME_PORT=$port $LAB exec host mpnvme-nvmet disconnect --job "$JOB" >>/tmp/$name.log 2>&1
  return $rc
}

# passed RC NAME: fio exited 0, no job error, verify read data; prints the
# bytes verified.
passed() {
  local json
  json=$(sed -n '/^{/,$p' "/tmp/$2.json" 2>/dev/null)
  [[ $1 == 0 ]] || { bad "$2: fio exited $1: $(tail -3 /tmp/$2.log | tr '\n' ' ')"; return 1; }
  jq -e '[.jobs[].error] | all(. == 0)' <<<"$json" >/dev/null || { bad "$2: a job reported an error"; return 1; }
  local verified
  verified=$(jq '[.jobs[].read.io_bytes] | add' <<<"$json")
  ((verified > 0)) || { bad "$2: verify read nothing"; return 1; }
  grep -qE 'ERROR: (Address|Undefined)Sanitizer|runtime error:' /tmp/$2.log && { bad "$2: sanitizer report"; return 1; }
  echo "$verified"
}

# pair HOST TARGET PORT: verify, then verify through a blackhole.
pair() {
  local host=$1 target=$2 port=$3 name=$1-$2 rc v
  local capable=$(counter host MPTcpExtMPCapableSYNACKRX) joins=$(counter host MPTcpExtMPJoinSynAckRx)
  host_run "$host" "$port" "$name"
  rc=$?
  v=$(passed $rc "$name") && ok "$name: verify passed over MPTCP ($v bytes verified)"
  capable=$(($(counter host MPTcpExtMPCapableSYNACKRX) - capable)) joins=$(($(counter host MPTcpExtMPJoinSynAckRx) - joins))
  # Every NVMe connection an MPTCP connection (MP_CAPABLE answered), with
  # subflows joined on the other paths.
  ((capable >= 8 && joins >= capable)) && ok "$name: $capable MPTCP connections, $joins subflows joined" ||
    bad "$name: $capable MP_CAPABLE connections and $joins joins: not NVMe over MPTCP on 4 paths" \
      "(MPTCP blackholes the host's kernel detected: $(counter host MPTcpExtBlackhole))"
  # Each of the 4 controllers' lines, not the subsystem NQN (which says mptcp too).
  [[ $host == kernel ]] && { (($(grep -c ' mptcp traddr=10\.1\.' /tmp/$name.show) == 4)) &&
    ok "$name: mpnvme-iopolicy show reports mptcp for the 4 controllers" ||
    bad "$name: mpnvme-iopolicy show: $(tr '\n' ' ' </tmp/$name.show)"; }

  local timeouts=$(($(counter target TcpExtTCPTimeouts) + $(counter host TcpExtTCPTimeouts)))
  local drops=$($LAB counters --json | jq "$DROPS")
  # The blackhole is scheduled in its rule by fio's prerun command, which
  # fio runs once the job's connections are up (after the engine's init;
  # the kernel host connected before fio). A lab command run at the time
  # would come late on the emulated CPU that fio and the target keep busy.
  # A blackhole over a connection's SYNs would test something else: after
  # two lost MP_CAPABLE SYNs the kernel falls back to TCP and disables
  # MPTCP for new connections in the namespace (net.mptcp.blackhole_timeout).
  host_run "$host" "$port" "$name-blackhole" --time_based=1 --runtime=22 --exec_prerun="$LAB loss 2 100 --at 3 --for 4"
  rc=$?
  # One look at the lab after the run: the window and the drops.
  local after from until ran_from ran_until
  after=$($LAB counters --json)
  $LAB loss 2 0 >/dev/null
  # fio's run (its report's time less the elapsed seconds) held the window.
  read -r from until <<<"$(jq -r '.paths[1].loss_window | "\(.from) \(.until)"' <<<"$after")"
  # (no process substitution: the guest has no /dev/fd)
  read -r ran_from ran_until <<<"$(sed -n '/^{/,$p' "/tmp/$name-blackhole.json" | jq -r '"\(.timestamp - .jobs[0].elapsed) \(.timestamp)"')"
  echo "PAIRS $name: path 2 blackholed from $((from - ran_from)) s to $((until - ran_from)) s of a run of $((ran_until - ran_from)) s"
  ((${ran_from:-0} < from && until < ${ran_until:-0})) || bad "$name: the blackhole ($from..$until) fell outside the run ($ran_from..$ran_until)"
  drops=$(($(jq "$DROPS" <<<"$after") - drops))
  timeouts=$(($(counter target TcpExtTCPTimeouts) + $(counter host TcpExtTCPTimeouts) - timeouts))
  v=$(passed $rc "$name-blackhole") && ok "$name: path 2 blackholed for 4 s: 0 I/O errors, verify passed ($v bytes)"
  # The fault as a network makes it: the senders' own timers saw it.
  ((drops > 0 && timeouts > 0)) && ok "$name: the blackhole dropped $drops packets, the senders timed out $timeouts times" ||
    bad "$name: blackhole: $drops drops, $timeouts retransmission timeouts; $($LAB counters 2>&1 | tr '\n' ' ')" \
      "$(engine_paths "$name-blackhole")"
}

# engine_paths NAME: what the engine's paths did in run NAME (commands,
# state, seconds down, subflows), so that a fault that found no traffic
# says whether the engine sent any on that path.
engine_paths() {
  [[ -s /tmp/$1.paths ]] || return 0
  echo "engine paths: $(jq -r '.paths[] | "\(.path) qid \(.qid) \(.commands) commands \(.state) down \(.down_s) s \(.subflows) subflows;"' "/tmp/$1.paths" | tr '\n' ' ')"
}

# discovery NAME PORT: nvme-cli (unstable's) reads the discovery log of
# the target on PORT over MPTCP and runs connect-all; prints "TRTYPES
# CONTROLLERS" (the entries' trtype as nvme-cli names it, the MPTCP
# controllers connect-all made) for the comparison with nvmet in main.
discovery() {
  local name=$1 port=$2 out
  [[ -d /opt/tls/unstable ]] || { mkdir -p /opt/tls && tar -C /opt/tls -xzf /files/tls-tools.tar.gz; } ||
    { bad "$name: the nvme-cli userland (/files/tls-tools.tar.gz) did not unpack"; return; }
  local before=$(counter host MPTcpExtMPCapableSYNACKRX)
  out=$($LAB exec host /usr/local/bin/bash -c "source /lib/guest-lib.sh; tls_tool unstable nvme discover -t mptcp -a 10.1.1.1 -s $port" 2>&1)
  local records=$(sed -n 's/.*Number of Records \([0-9]*\).*/\1/p' <<<"$out")
  ((${records:-0} > 0 && $(counter host MPTcpExtMPCapableSYNACKRX) > before)) &&
    ok "$name: nvme discover -t mptcp read $records entries over an MPTCP connection" >&2 ||
    bad "$name: nvme discover -t mptcp: $(tr '\n' ' ' <<<"$out" | cut -c1-400)"
  local trtypes=$(grep -v 'current discovery' <<<"$out" | sed -n 's/^trtype: *//p' | sort -u | tr '\n' ',')
  $LAB exec host /usr/local/bin/bash -c "source /lib/guest-lib.sh; tls_tool unstable nvme connect-all -t mptcp -a 10.1.1.1 -s $port" >/dev/null 2>&1
  local made=$($LAB exec host mpnvme-iopolicy show 2>&1 | grep -c " mptcp traddr=10.1")
  echo "PAIRS $name: discovery entries' trtype ${trtypes%,}; connect-all made $made controllers over MPTCP" >&2
  for c in /sys/class/nvme/nvme*; do echo 1 >"$c/delete_controller"; done 2>/dev/null
  for _ in $(seq 100); do ls -d /sys/class/nvme/nvme* >/dev/null 2>&1 || break; sleep 0.2; done
  echo "${trtypes%,} $made"
}

main() {
  local out
  # 40 Mbit per path, as the bench's guest cells: the emulated CPU keeps
  # up, and stays free enough for the lab's own commands.
  out=$($LAB up --paths 4 --rate 40mbit --endpoints all --cc cubic 2>&1) || { bad "lab up: $out"; return; }
  MPNVME_PORT=4420 $LAB exec target mpnvme-target --job "$JOB" --discovery-trtype-mptcp --log-level warn >/tmp/target.log 2>&1 &
  for _ in $(seq 100); do grep -q 'mpnvme-target: ready' /tmp/target.log && break; sleep 0.2; done
  grep -q 'mpnvme-target: ready' /tmp/target.log || { bad "mpnvme-target: $(tail -3 /tmp/target.log)"; return; }
  out=$(MPNVME_PORT=4421 $LAB exec target mpnvme-nvmet apply --job "$JOB" 2>&1) && ok "nvmet: $(tr '\n' ' ' <<<"$out")" ||
    { bad "mpnvme-nvmet apply: $out"; return; }
  local n=$(grep -l mptcp /sys/kernel/config/nvmet/ports/*/addr_trtype | wc -l)
  ((n == 4)) && ok "nvmet: 4 ports with addr_trtype mptcp" || bad "nvmet: $n mptcp ports"
  local pairs=("engine target 4420" "engine nvmet 4421" "kernel target 4420" "kernel nvmet 4421") p
  # /files/only: the pairs to run (a developer's shortcut), e.g. "engine-nvmet".
  for p in "${pairs[@]}"; do
    local name=${p% *}
    [[ ! -s /files/only ]] || grep -qw -- "${name/ /-}" /files/only || continue
    pair $p
  done
  # mpnvme-target --discovery-trtype-mptcp against nvmet's mptcp ports, the
  # reference: the same trtype in the entries, the same connect-all result
  # (nvme-cli 2.16 names trtype 4 "unrecognized" and connects nothing).
  if [[ ! -s /files/only ]] || grep -qw discovery /files/only; then
    local ours=$(discovery mpnvme-target 4420) ref=$(discovery nvmet 4421)
    [[ -n $ref && $ours == "$ref" ]] && ok "discovery: mpnvme-target's MPTCP entries read as nvmet's ($ours)" ||
      bad "discovery: mpnvme-target '$ours', nvmet '$ref'"
  fi
  kill -INT %1 2>/dev/null; wait %1 2>/dev/null
  grep -qE 'ERROR: (Address|Undefined)Sanitizer|runtime error:' /tmp/target.log && bad "sanitizer report in mpnvme-target"
  mpnvme-nvmet clear >/dev/null 2>&1
}
# "PAIRS done" however the script ends, with a failure when it ended early
# (an unset variable, a command that killed it): the test waits for it.
trap 'rc=$?; [[ -n ${finished:-} ]] || bad "the guest script stopped early (status $rc)"; echo "PAIRS done"' EXIT
main
finished=1
