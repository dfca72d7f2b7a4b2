#!/usr/local/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs inside the qemu kernel lab guest (bench/run soak, its guest half):
# the kernel's two pairs side by side on the same lossy lab paths, for
# SOAK_S seconds, while the faults of /files/faults come at their times.
#   engine-nvmet: fio with fio-mpnvme.so, NVMe multipath over TCP
#     (round-robin, a connection per path), on a file namespace of the
#     kernel's nvmet (a port per path, 4421);
#   kernel-host: the guest's nvme-tcp host, a controller per path (native
#     multipath, round-robin), fio libaio on the multipath device, on a
#     file namespace of mpnvme-target (4420).
# The host side of the lab is the guest's own namespace (mpnvme-lab
# --host-here): the kernel host's reconnects open their sockets from a
# kernel worker, in the initial namespace, and could not reach the target
# from a namespace of their own.
#   /files/params: SOAK_S PATHS RATE_MBIT BASE_LOSS_PCT NS_MIB CTRL_LOSS_TMO_S VERIFY_BACKLOG
#                  IO_TIMEOUT_S SAMPLE_S PRELOAD (shell variables)
#   /files/faults: AT_S KIND PATH SECONDS VALUE per line (soak.py's kinds;
#                  PATH and VALUE "-" when the fault has none)
# Console: "SOAK ready", "SOAK sample JSON" every SAMPLE_S, "SOAK fault
# JSON" as each fault ends, "SOAK event T WHO LINE" (the hosts' path
# events and any error, T seconds into the soak), "SOAK job NAME JSON",
# "SOAK bwlog NAME ROWS" and "SOAK failed WHY"; then "SOAK-DONE".
set -uo pipefail
export PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin # iproute2 before busybox's applets
source /files/params
LAB="bash /files/mpnvme-lab -n g"
ENGINE_NQN=nqn.2026-12.io.mpnvme:soak-nvmet
TARGET_NQN=nqn.2026-12.io.mpnvme:soak-target
SCRATCH_NQN=nqn.2026-12.io.mpnvme:soak-scratch
SCRATCH_HOST=nqn.2026-12.io.mpnvme:soak-visitor
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:5f1c0e2a-8d3b-4a7e-9c61-2b4d6e8f0a13
HOSTID=5f1c0e2a-8d3b-4a7e-9c61-2b4d6e8f0a13
NVMET_PORT=4421 TARGET_PORT=4420
CFS=/sys/kernel/config/nvmet
CONTROL=/tmp/target.control
# The hosts' words for a path event or an error: each such line is sent
# at once, with its time.
EVENTS='path down|path up again|reconnected after|controller reset|path not usable|verify|error|bad magic|crc32c'
# Straight to the console: a step's output may be sent elsewhere.
say() { echo "SOAK $*" >/dev/console; }
fail() { say "failed $*"; echo SOAK-DONE >/dev/console; exit 1; }

# Seconds since the soak began, to 0.1 s (the kernel's clock, as dmesg's).
T0=0
elapsed() { awk -v t0="$T0" '{ printf "%.1f", $1 - t0 }' /proc/uptime; }

# stamp WHO: each line of standard input kept in /tmp/WHO.log; an event
# line also goes to the console with its time.
stamp() {
  local line
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"/tmp/$1.log"
    [[ $line =~ $EVENTS ]] && say "event $(elapsed) $1 ${line:0:300}"
  done
}

# The lab: PATHS lossy paths with the kernel's own congestion control.
lab_up() {
  local out i
  out=$($LAB up --host-here --paths "$PATHS" --rate "${RATE_MBIT}mbit" --cc cubic --endpoints all 2>&1) ||
    fail "lab: $(tr '\n' ' ' <<<"$out")"
  for ((i = 1; i <= PATHS; i++)); do $LAB loss "$i" "$BASE_LOSS_PCT" >/dev/null || fail "lab loss on path $i"; done
}

# nvmet: a file namespace, one port per path; the ports are bound in the
# target namespace (nvmet-tcp listens in the namespace of the process
# that enables the port), where ip netns exec's fresh /sys has no configfs
# until it is mounted there.
nvmet_link() {
  $LAB exec target sh -c "grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs configfs /sys/kernel/config
    ln -s '$CFS/subsystems/$1' '$CFS/ports/$2/subsystems/$1'"
}
nvmet_unlink() { rm -f "$CFS/ports/$2/subsystems/$1"; }
nvmet_up() {
  local s=$CFS/subsystems/$ENGINE_NQN i p
  mkdir -p /tmp/ns && dd if=/dev/zero of=/tmp/ns/nvmet.img bs=1M count=0 seek="$NS_MIB" 2>/dev/null || return 1
  mkdir "$s" && echo 1 >"$s/attr_allow_any_host" && mkdir "$s/namespaces/1" || return 1
  echo -n /tmp/ns/nvmet.img >"$s/namespaces/1/device_path" && echo 1 >"$s/namespaces/1/enable" || return 1
  for ((i = 1; i <= PATHS; i++)); do
    p=$CFS/ports/$i
    mkdir "$p" && echo tcp >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" || return 1
    echo "10.1.$i.1" >"$p/addr_traddr" && echo $NVMET_PORT >"$p/addr_trsvcid" && nvmet_link "$ENGINE_NQN" "$i" || return 1
  done
}

# mpnvme-target: a file namespace on every path, a control socket; each
# start is a generation of its own (the file keeps the data), its process
# and number in /tmp/target.now for the sampler.
GENERATION=0 TARGET_PID=
target_start() {
  local listen=10.1.1.1:$TARGET_PORT i log
  for ((i = 2; i <= PATHS; i++)); do listen+=,10.1.$i.1:$TARGET_PORT; done
  GENERATION=$((GENERATION + 1))
  log=/tmp/target-$GENERATION.log
  $LAB exec target env ${PRELOAD:+LD_PRELOAD=$PRELOAD ASAN_OPTIONS=detect_leaks=0:abort_on_error=1} mpnvme-target \
    --listen "$listen" --subnqn "$TARGET_NQN" --ns "file:/tmp/ns/target.img,nsid=1" --control "$CONTROL" \
    --log-level info >"$log" 2>&1 &
  TARGET_PID=$!
  echo "$TARGET_PID $GENERATION" >/tmp/target.now
  for _ in $(seq 150); do grep -q 'mpnvme-target: ready' "$log" && return 0; sleep 0.2; done
  fail "mpnvme-target generation $GENERATION not ready: $(tail -3 "$log" | tr '\n' ' ')"
}
ctl() { mpnvme-target ctl "$CONTROL" "$*" | grep -q '^ok' || say "event $(elapsed) control refused: $*"; }

# The kernel host: one controller per path, reconnecting as a user's would.
host_up() {
  local i sys dev
  for ((i = 1; i <= PATHS; i++)); do
    echo "nqn=$TARGET_NQN,transport=tcp,traddr=10.1.$i.1,trsvcid=$TARGET_PORT,hostnqn=$HOSTNQN,hostid=$HOSTID,ctrl_loss_tmo=$CTRL_LOSS_TMO_S,reconnect_delay=1,keep_alive_tmo=5" \
      >/dev/nvme-fabrics || fail "kernel host connect over path $i: $(dmesg | grep -a nvme | tail -2 | tr '\n' ' ')"
  done
  # The namespace appears once the host has scanned it.
  for _ in $(seq 150); do
    for sys in /sys/class/nvme-subsystem/*; do
      [[ -e $sys/subsysnqn && $(cat "$sys/subsysnqn") == "$TARGET_NQN" ]] || continue
      for dev in "$sys"/nvme*n1; do
        dev=${dev##*/}
        [[ -b /dev/$dev ]] && echo round-robin >"$sys/iopolicy" && echo "$dev" && return 0
      done
    done
    sleep 0.2
  done
  return 1
}

# senders: both directions' lab drops and the sending namespace's TCP
# retransmissions and timeouts since the lab came up (soak.py's record).
senders() {
  $LAB counters --json | jq -c '.directions | map_values({dropped: .dropped_packets, retrans: .sender_tcp.TcpRetransSegs,
    timeouts: .sender_tcp.TcpExtTCPTimeouts})'
}

# usage PID: RSS in MiB and open descriptors, or null null once it is gone.
usage() {
  local rss
  rss=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null)
  [[ -n $rss ]] && echo "$rss $(ls "/proc/$1/fd" 2>/dev/null | wc -l)" || echo "null null"
}

# A sample: both fio processes, mpnvme-target and the kernel's own memory
# (slab: nvmet's and the host's allocations live there), and the senders.
sample() {
  local e k t slab pid generation
  read -r pid generation </tmp/target.now
  read -r -a e <<<"$(usage "$ENGINE_FIO")"
  read -r -a k <<<"$(usage "$KERNEL_FIO")"
  read -r -a t <<<"$(usage "$pid")"
  slab=$(awk '/^Slab:/ { printf "%.1f", $2 / 1024 }' /proc/meminfo)
  say "sample {\"t_s\": $(elapsed), \"engine_fio_rss_mib\": ${e[0]}, \"engine_fio_fds\": ${e[1]}, \"kernel_fio_rss_mib\": ${k[0]}," \
    "\"kernel_fio_fds\": ${k[1]}, \"target_rss_mib\": ${t[0]}, \"target_fds\": ${t[1]}, \"target_generation\": $generation," \
    "\"kernel_slab_mib\": $slab, \"senders\": $(senders)}"
}

# apply KIND PATH VALUE: start one fault on both pairs at once.
# end_fault KIND PATH: end it.
apply() {
  case $1 in
    blackhole) $LAB loss "$2" 100 ;;
    carrier) $LAB link "$2" down ;;
    loss-burst) $LAB loss "$2" "$3" ;;
    rate) $LAB rate "$2" "${3}mbit" ;;
    # Both targets gone at once: mpnvme-target killed, nvmet's subsystem
    # off its ports (nvmet deletes the controllers there and closes the
    # listeners).
    target-restart)
      kill -9 "$TARGET_PID"
      wait "$TARGET_PID" 2>/dev/null
      for ((i = 1; i <= PATHS; i++)); do nvmet_unlink "$ENGINE_NQN" "$i"; done ;;
    ana)
      ctl ana "$2" 1 inaccessible
      echo inaccessible >"$CFS/ports/$2/ana_groups/1/ana_state" ;;
    control)
      # A subsystem and a host come and go beside the soak's, on both.
      ctl subsystem add "$SCRATCH_NQN" any-host ram:16m
      ctl host allow "$SCRATCH_NQN" "$SCRATCH_HOST"
      mkdir -p "$CFS/subsystems/$SCRATCH_NQN" "$CFS/hosts/$SCRATCH_HOST" &&
        ln -s "$CFS/hosts/$SCRATCH_HOST" "$CFS/subsystems/$SCRATCH_NQN/allowed_hosts/$SCRATCH_HOST" &&
        nvmet_link "$SCRATCH_NQN" 1 ;;
  esac
}
end_fault() {
  case $1 in
    blackhole | loss-burst) $LAB loss "$2" "$BASE_LOSS_PCT" ;;
    carrier) $LAB link "$2" up ;;
    rate) $LAB rate "$2" "${RATE_MBIT}mbit" ;;
    target-restart)
      target_start
      for ((i = 1; i <= PATHS; i++)); do nvmet_link "$ENGINE_NQN" "$i"; done ;;
    ana)
      ctl ana "$2" 1 optimized
      echo optimized >"$CFS/ports/$2/ana_groups/1/ana_state" ;;
    control)
      ctl host deny "$SCRATCH_NQN" "$SCRATCH_HOST"
      ctl subsystem remove "$SCRATCH_NQN"
      nvmet_unlink "$SCRATCH_NQN" 1
      rm -f "$CFS/subsystems/$SCRATCH_NQN/allowed_hosts/$SCRATCH_HOST"
      rmdir "$CFS/subsystems/$SCRATCH_NQN" "$CFS/hosts/$SCRATCH_HOST" ;;
  esac
}

# The faults, each at its time, one at a time.
run_faults() {
  local at kind path secs value before started
  while read -r at kind path secs value; do
    while awk -v a="$at" -v t="$(elapsed)" 'BEGIN { exit !(t < a) }'; do sleep 0.2; done
    before=$(senders) started=$(elapsed)
    apply "$kind" "$path" "$value" >>/tmp/faults.log 2>&1 || say "event $started soak $kind could not be applied"
    sleep "$secs"
    end_fault "$kind" "$path" >>/tmp/faults.log 2>&1 || say "event $(elapsed) soak $kind could not be ended"
    say "fault {\"kind\": \"$kind\", \"path\": $([[ $path == - ]] && echo null || echo "$path"), \"seconds\": $secs," \
      "\"value\": $([[ $value == - ]] && echo null || echo "$value"), \"at_s\": $at, \"started_s\": $started," \
      "\"ended_s\": $(elapsed), \"before\": $before, \"after\": $(senders)}"
  done </files/faults
}

# The workload of both jobs: the lab soak's (soak.py), verified as it goes.
WORKLOAD=(--rw=randrw --bsrange=4k-128k --iodepth=16 --size="${NS_MIB}m" --verify=crc32c --verify_fatal=1 --do_verify=1
  --verify_backlog="$VERIFY_BACKLOG"
  --time_based=1 --runtime="$SOAK_S" --thread=1 --log_avg_msec=1000 --output-format=json)

say "kernel $(uname -r) cpus $(nproc)"
# bash's process substitution (the hosts' standard error, stamped) opens
# /dev/fd/N, which the guest's devtmpfs does not have.
[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
# Both hosts' I/O timeout: the kernel's module parameter, read when a
# controller is made, and the engine's io_timeout.
echo "$IO_TIMEOUT_S" >/sys/module/nvme_core/parameters/io_timeout || fail "nvme_core.io_timeout not set"
lab_up
nvmet_up 2>/tmp/nvmet.err || fail "nvmet: $(tail -2 /tmp/nvmet.err | tr '\n' ' ') $(dmesg | grep -a nvmet | tail -2 | tr '\n' ' ')"
dd if=/dev/zero of=/tmp/ns/target.img bs=1M count=0 seek="$NS_MIB" 2>/dev/null
target_start
DEV=$(host_up) || fail "kernel host: no multipath device ($(dmesg | grep -a nvme | tail -3 | tr '\n' ' '))"
traddr=10.1.1.1:$NVMET_PORT
for ((i = 2; i <= PATHS; i++)); do traddr+=,10.1.$i.1:$NVMET_PORT; done
read -r T0 _ </proc/uptime
env ${PRELOAD:+LD_PRELOAD=$PRELOAD ASAN_OPTIONS=detect_leaks=0:abort_on_error=1} fio --name=engine-nvmet \
  --ioengine=external:/usr/local/bin/fio-mpnvme.so --subnqn="$ENGINE_NQN" --transport=tcp --traddr="$traddr" \
  --iopolicy=round-robin --nsid=1 --ctrl_loss_tmo="$CTRL_LOSS_TMO_S" --reconnect_delay=1 --io_timeout=$((IO_TIMEOUT_S * 1000)) \
  --log_level=info --path_stats=/tmp/engine.paths "${WORKLOAD[@]}" --write_bw_log=/tmp/engine --output=/tmp/engine.json \
  2> >(stamp engine-nvmet) >/tmp/engine-nvmet.out &
ENGINE_FIO=$!
fio --name=kernel-host --filename="/dev/$DEV" --ioengine=libaio --direct=1 "${WORKLOAD[@]}" --write_bw_log=/tmp/kernel \
  --output=/tmp/kernel.json 2> >(stamp kernel-host) >/tmp/kernel-host.out &
KERNEL_FIO=$!
say "ready {\"device\": \"$DEV\", \"engine_fio\": $ENGINE_FIO, \"kernel_fio\": $KERNEL_FIO}"
(while kill -0 "$ENGINE_FIO" 2>/dev/null || kill -0 "$KERNEL_FIO" 2>/dev/null; do sample; sleep "$SAMPLE_S"; done) &
SAMPLER=$!
run_faults
wait "$ENGINE_FIO"
ENGINE_RC=$?
wait "$KERNEL_FIO"
KERNEL_RC=$?
kill "$SAMPLER" 2>/dev/null
sample

# job NAME RC JSON: what fio did (its error, bytes written and read), and
# its last words when it failed.
job() {
  (($2 == 0)) || say "failed $1 (fio exit status $2): $(tail -qn 4 "/tmp/$1.log" "/tmp/$1.out" 2>/dev/null | tr '\n' ' ')"
  # (fio may print other lines before its JSON)
  say "job $1 $(sed -n '/^{/,$p' "$3" | jq -c --argjson rc "$2" '.jobs[0] | {rc: $rc, error, written: .write.io_bytes, read: .read.io_bytes}' 2>/dev/null ||
    echo "{\"rc\": $2, \"error\": -1, \"written\": 0, \"read\": 0}")"
}
job engine-nvmet "$ENGINE_RC" /tmp/engine.json
job kernel-host "$KERNEL_RC" /tmp/kernel.json
say "paths engine-nvmet $(jq -sc '[.[] | .paths[]] | {failovers: (map(.failovers // 0) | add), reconnects: (map(.reconnects // 0) | add),
  down_s: (map(.down_s // 0) | add)}' /tmp/engine.paths 2>/dev/null || echo '{}')"
# The kernel host's record: its messages of the soak, each with its time.
dmesg | awk -v t0="$T0" 'match($0, /^\[ *[0-9]+\.[0-9]+\]/) { t = substr($0, RSTART + 1, RLENGTH - 2) + 0;
  if (t >= t0 && $0 ~ /nvme/) printf "SOAK event %.1f kernel %s\n", t - t0, substr($0, RLENGTH + 2, 300) }'
# The 1 s bandwidth logs, 100 rows a line.
for who in engine:engine-nvmet kernel:kernel-host; do
  for f in /tmp/${who%%:*}_bw.*.log; do
    [[ -f $f ]] && awk -F', ' -v n="${who#*:}" '{ r = r (r == "" ? "" : ";") $1 "," $2 }
      NR % 100 == 0 { print "SOAK bwlog " n " " r; r = "" } END { if (r != "") print "SOAK bwlog " n " " r }' "$f" >/dev/console
  done
done
kill -INT "$TARGET_PID" 2>/dev/null
wait "$TARGET_PID"
say "target {\"rc\": $?, \"generations\": $GENERATION}"
echo SOAK-DONE >/dev/console
