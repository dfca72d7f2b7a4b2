#!/usr/local/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs inside the qemu kernel lab guest (bench/run guest): the
# plan's cells on mpnvme-lab paths made inside the guest, where the Debian
# kernel has netem, the nvme-tcp host and native multipath. Each cell is
# the engine (fio with fio-mpnvme.so) or the kernel host (mpnvme-nvmet
# connect --job, mpnvme-iopolicy, fio libaio on the multipath device)
# against mpnvme-target --job serving the same job file, or the raw
# control (mpnvme-floor stream against mpnvme-floor sink: the engine's
# connections, direction and time over bare sockets). One line per run
# on the console: "BENCH TAG JSON", then "BENCH-DONE".
#   /files/params: PATHS RATE_MBIT DELAY_MS LOSS_PCT LOSS_VIA LOSS_UNIT RUNTIME RAMP
#                  IO_TIMEOUT_S KATO_S PRELOAD NVMET_TRTYPE (shell variables;
#                  IO_TIMEOUT_S, KATO_S: both hosts' I/O and keep-alive
#                  timeouts (the kernel's admin timeout twice the I/O
#                  timeout, as its defaults); the loss model as
#                  mpnvme-lab's --loss-via and --loss-unit; PRELOAD: the ASan
#                  runtime of a sanitizer build; NVMET_TRTYPE: nvmet's port
#                  transport, mptcp on a kernel with NVMe over MPTCP)
#   /files/plan:   CONDITION SIDE TRANSPORT IOPOLICY RW TAG, one per line
#                  (SIDE: engine, kernel or raw against mpnvme-target;
#                  engine@nvmet, kernel@nvmet against the kernel's nvmet,
#                  served from the same job file by mpnvme-nvmet apply on
#                  port 4421. CONDITION: lossless, lossy, lossy-inline, or
#                  unequal: lossless with the last path at half the rate)
set -uo pipefail
export PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin # iproute2 before busybox's applets
source /files/params
source /files/mptcp-stuck.sh
LAB="bash /files/mpnvme-lab -n g"
JOB=/files/guest-seed.fio
JOBS=2             # guest-seed.fio's numjobs: the engine's connections per path
CONTROL_PORT=5201  # mpnvme-floor sink, beside the target's 4420 on every path
NVMET_PORT=4421    # nvmet's ports, beside mpnvme-target's
NVMET_TRTYPE=${NVMET_TRTYPE:-tcp}
# A kernel host run that completes no I/O for this long after its time is
# stalled (kernel_cell): 240 of the lab's round trips; a lossy TCP queue
# that drains for minutes completes I/O all the while.
STALL_QUIET_S=60
export MPNVME_ENGINE=/usr/local/bin/fio-mpnvme.so MPNVME_SUBNQN=nqn.2026-12.io.mpnvme:guest-seed
MPNVME_TRADDR=10.1.1.1 NVMET_TRADDR=10.1.1.1:$NVMET_PORT
for ((i = 2; i <= PATHS; i++)); do MPNVME_TRADDR+=,10.1.$i.1 NVMET_TRADDR+=,10.1.$i.1:$NVMET_PORT; done
export MPNVME_TRADDR MPNVME_RUNTIME=$RUNTIME MPNVME_RAMP=$RAMP MPNVME_IO_TIMEOUT=$((IO_TIMEOUT_S * 1000)) MPNVME_KATO=${KATO_S:-5}
# The kernel host's I/O timeout is one module parameter, read when a
# controller is created: set before any connect.
echo "$IO_TIMEOUT_S" >/sys/module/nvme_core/parameters/io_timeout || echo "BENCH note: nvme_core.io_timeout not set to $IO_TIMEOUT_S"
# Its admin commands' timeout likewise, at the kernel's ratio (60 s against
# 30 s): Connect and the property commands cross the same lossy paths.
echo "$((IO_TIMEOUT_S * 2))" >/sys/module/nvme_core/parameters/admin_timeout ||
  echo "BENCH note: nvme_core.admin_timeout not set to $((IO_TIMEOUT_S * 2))"
export MPNVME_IOPOLICY=round-robin MPNVME_RW=randread MPNVME_IODEPTH=32 MPNVME_NUMJOBS=$JOBS MPNVME_NR_IO_QUEUES=1 MPNVME_POLL=hybrid MPNVME_PATH_STATS=/dev/null
mkdir -p /run /var /etc/nvme && mount -t tmpfs tmpfs /run && ln -sfn /run /var/run
echo "nqn.2014-08.org.nvmexpress:uuid:5f1c0e2a-8d3b-4a7e-9c61-2b4d6e8f0a13" > /etc/nvme/hostnqn
echo "5f1c0e2a-8d3b-4a7e-9c61-2b4d6e8f0a13" > /etc/nvme/hostid
say() { echo "BENCH $*"; }
# tcp_mem (pages: no pressure, pressure, limit): one limit on every socket
# buffer of both lab namespaces, sized by the kernel from the guest memory.
say "tcp_mem $(cat /proc/sys/net/ipv4/tcp_mem)"
# First, so that a report of a run cut short (a cell that hung until the
# guest's time ran out) still names the kernel.
say "kernel $(uname -r) cpus $(nproc)"
# failed TAG WHAT: the run's line when it produced no result (quotes,
# backslashes and newlines of WHAT made JSON-safe).
failed() { say "$1 {\"failed\": \"$(tr '\n"\\' '   ' <<<"$2")\"}"; }

# The runs' throughput logs: 500 ms samples from the end of the ramp.
BWLOG_MS=500
BWLOG=(--write_bw_log=/tmp/bw --log_avg_msec=$BWLOG_MS)

# steady: MiB/s from the jobs' bandwidth logs after their first interval,
# each interval weighted by its length (as bench/fio_logs.py's steady_mib_s,
# which says why neither fio's own figure nor the mean of the rates).
# steady [FROM_MS]: the same over the intervals that end after FROM_MS
# (the second half of a run: whether it was still ramping up).
# A row after intervals fio left out (nothing completed) is credited with
# one interval, as in fio_logs.py's log_rate.
steady() {
  awk -F, -v from="${1:-0}" -v every=$BWLOG_MS 'FNR == 1 { if (span > 0) total += kib / span; kib = 0; span = 0; first = -1 }
    FNR > 1 && $1 > from { if (first < 0) first = prev; d = $1 - prev; if (d > 1.5 * every) d = every
      kib += $2 * d / 1000; span = ($1 - first) / 1000 } { prev = $1 }
    END { if (span > 0) total += kib / span; print total / 1024 }' /tmp/bw_bw.*.log
}

# result TAG read|write FILE: the run as one JSON line, then its logs go.
result() {
  local rw=$2
  say "$1 $(sed -n '/^{/,$p' "$3" | jq -c --arg rw "$rw" --argjson steady "$(steady)" --argjson late "$(steady $((RUNTIME * 500)))" \
    '.jobs[0] | {mib_s: $steady, late_mib_s: $late,
    fio_mib_s: (.[$rw].bw_bytes / 1048576), io_bytes: .[$rw].io_bytes,
    clat_p99_us: (.[$rw].clat_ns.percentile["99.000000"] / 1000), error}')"
  rm -f /tmp/bw_bw.*.log
}

# The kernel's TCP and MPTCP counters of both lab namespaces, "SIDE.Group.Name value"
# per line (/proc/net/netstat and snmp: a names line, then a values line).
snapshot() {
  local side
  for side in host target; do
    $LAB exec $side cat /proc/net/netstat /proc/net/snmp | awk -v side=$side '
      { g = substr($1, 1, length($1) - 1) } seen[g] { for (i = 2; i <= NF; i++) print side "." g "." name[g, i], $i; next }
      { seen[g] = 1; for (i = 2; i <= NF; i++) name[g, i] = $i }'
  done
}

# cpu_sample: where the guest's CPU time went so far, one block:
# "T UPTIME IDLE" (/proc/uptime: seconds, and the CPUs' idle seconds),
# "S user nice system idle iowait irq softirq" (/proc/stat ticks), then
# "P PID/TID ROLE NS" per thread: its time on a CPU (its schedstat), the
# role its process's. Per thread, so that threads ending inside a window
# (the raw control's, at its end) are not taken off the others. Roles:
# fio (the engine in engine cells; fio and libaio in the kernel host's),
# target (mpnvme-target), floor (the raw
# control's stream and sink), kworker (the kernel host's and nvmet's I/O
# work), ksoftirqd, other.
cpu_sample() {
  awk 'BEGIN { getline up < "/proc/uptime"; split(up, u, " "); print "T", u[1], u[2] }
    FILENAME == "/proc/stat" { if ($1 == "cpu") print "S", $2, $3, $4, $5, $6, $7, $8; nextfile }
    { split(FILENAME, p, "/") }
    p[4] == "stat" { o = index($0, "("); c = index($0, ") "); comm = substr($0, o + 1, c - o - 1)
      role = "other"
      if (comm == "fio") role = "fio"; else if (comm == "mpnvme-target") role = "target"; else if (comm == "mpnvme-floor") role = "floor"
      else if (comm ~ /^kworker/) role = "kworker"; else if (comm ~ /^ksoftirqd/) role = "ksoftirqd"
      roles[p[3]] = role; nextfile }
    p[4] == "task" { id = p[3] "/" p[5]; ns[id] = $1; owner[id] = p[3]; nextfile }
    END { for (id in ns) if (owner[id] in roles) print "P", id, roles[owner[id]], ns[id] }' \
    /proc/stat /proc/[0-9]*/stat /proc/[0-9]*/task/[0-9]*/schedstat 2>/dev/null
}

# cpu_roles TAG LOG END: the run's measured window (the RUNTIME seconds
# before END, in /proc/uptime seconds) from the samples in LOG: busy, the
# share of the guest's CPUs x the window not idle (/proc/uptime); softirq
# and system as shares of /proc/stat's ticks; and each role's share of
# the time all tasks ran (their time between the window's first and last
# sample; a thread born inside it counts whole, one that ended inside it
# not at all). Task times run on the
# scheduler's clock, which under TCG does not keep pace with uptime (a
# window's tasks add up to more than its CPUs had), so they are given as
# shares of each other, never of the window. With tick accounting a
# softirq is also charged to the task it interrupted.
cpu_roles() {
  say "$1-cpuroles $(awk -v end="$3" -v runtime="$RUNTIME" -v cpus="$(nproc)" '
    $1 == "T" { n++; t[n] = $2; idle[n] = $3; next }
    $1 == "S" { for (i = 2; i <= 8; i++) s[n, i] = $i; next }
    $1 == "P" { role[n, $2] = $3; ns[n, $2] = $4; pids[n] = pids[n] " " $2 }
    END { a = 0; b = 0
      for (i = 1; i <= n; i++) { if (t[i] <= end - runtime) a = i; if (t[i] <= end) b = i }
      if (!a) a = 1
      if (b <= a) { print "{}"; exit }
      wall = (t[b] - t[a]) * cpus; ticks = 0; for (i = 2; i <= 8; i++) ticks += s[b, i] - s[a, i]
      if (wall <= 0 || ticks <= 0) { print "{}"; exit }
      m = split(pids[b], list, " "); tasks = 0
      for (k = 1; k <= m; k++) { pid = list[k]; d = ns[b, pid] - ns[a, pid]; r[role[b, pid]] += d; tasks += d }
      if (tasks <= 0) { print "{}"; exit }
      printf "{\"window_s\": %.1f, \"busy\": %.3f, \"system\": %.3f, \"softirq\": %.3f, \"task_s\": %.1f, \"roles\": {",
        t[b] - t[a], 1 - (idle[b] - idle[a]) / wall, (s[b, 4] - s[a, 4]) / ticks, (s[b, 8] - s[a, 8]) / ticks, tasks / 1e9
      split("fio target floor kworker ksoftirqd other", names, " ")
      for (k = 1; k <= 6; k++) printf "%s\"%s\": %.3f", (k > 1 ? ", " : ""), names[k], r[names[k]] / tasks
      print "}}" }' "$2")"
}

# target_rest: mpnvme-target's user and system ticks over 2 s (-1: none).
target_rest() {
  local pid a b
  pid=$(pidof mpnvme-target | cut -d' ' -f1)
  [[ -n $pid ]] || { echo -1; return; }
  a=$(awk '{ print $14 + $15 }' "/proc/$pid/stat"); sleep 2; b=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  echo $((b - a))
}

# workload_ended [INFLIGHT_BYTES]: when the cell's measured window ended,
# for cpu_roles. After its runtime fio waits for the commands still in
# flight (at 4 x QD256 on these paths, 128 MiB: about ten seconds of
# draining); that time at the run's own rate (its bandwidth log, still
# there) is taken off, at most RUNTIME.
workload_ended() {
  local now drain=0
  now=$(cut -d' ' -f1 /proc/uptime)
  [[ -n ${1:-} ]] && drain=$(awk -v b="$1" -v r="$(steady)" -v max="$RUNTIME" 'BEGIN {
    d = r > 0 ? b / (r * 1048576) : 0; print (d > max ? max : d) }')
  awk -v n="$now" -v d="$drain" 'BEGIN { print n - d }' >/tmp/workload.end
}

# counters TAG BEFORE: what changed during the run, one JSON line (the
# TCP, TcpExt and MPTcpExt counters that moved).
counted() {
  snapshot >/tmp/after
  say "$1-counters $(awk 'NR == FNR { b[$1] = $2; next } $1 ~ /\.(Tcp|TcpExt|MPTcpExt|IpExt)\./ && $2 != b[$1] && $2 ~ /^[0-9]+$/ {
    printf "%s\"%s\": %d", n++ ? ", " : "{", $1, $2 - b[$1] } END { print n ? "}" : "{}" }' "$2" /tmp/after)"
}

up() { # CONDITION: the lab and mpnvme-target --job serving every path
  # (lossy-inline: lossy, and the target takes 128 KiB of data in a write's
  # capsule, so a write needs no R2T round trip)
  local cond=$1 rate="${RATE_MBIT}mbit" inline=() i
  # unequal: the last path at half the rate (a reviewer's case)
  if [[ $cond == unequal ]]; then
    for ((i = 2; i <= PATHS; i++)); do rate+=",${RATE_MBIT}mbit"; done
    rate="${rate%,*},$(awk -v r="$RATE_MBIT" 'BEGIN { print r / 2 }')mbit"
  fi
  local args=(--paths "$PATHS" --rate "$rate" --cc cubic --endpoints all)
  [[ $cond == lossy* ]] && args+=(--delay "$DELAY_MS" --loss "$LOSS_PCT" --loss-via "$LOSS_VIA" --loss-unit "$LOSS_UNIT")
  [[ $cond == *-inline ]] && inline=(--inline-data-size 131072)
  local out
  out=$($LAB up "${args[@]}" 2>&1) || { say "lab-failed $cond: $(tr '\n' ' ' <<<"$out")"; return 1; }
  pdu_rules || say "note: no PDU counters (nft @ih) in $cond"
  # The target listens MPTCP: plain TCP hosts (the kernel's, the engine's
  # tcp cells) are served by the fallback to TCP.
  MPNVME_TRANSPORT=mptcp $LAB exec target mpnvme-target --job "$JOB" "${inline[@]}" --log-level warn >/tmp/target-$cond.log 2>&1 &
  local listen=10.1.1.1:$CONTROL_PORT i
  for ((i = 2; i <= PATHS; i++)); do listen+=,10.1.$i.1:$CONTROL_PORT; done
  $LAB exec target mpnvme-floor sink --listen "$listen" --transport mptcp >/tmp/sink-$cond.log 2>&1 &
  ready target "$cond" 'mpnvme-target: ready' && ready sink "$cond" 'mpnvme-floor: sink ready' || return 1
  # The kernel's nvmet on the same paths from the same job file, when the
  # plan has cells against it (an mptcp port where the kernel has one;
  # TCP hosts use its fallback, as with mpnvme-target).
  if grep -q '@nvmet' /files/plan; then
    local out
    local nvmet_inline=()
    [[ $cond == *-inline ]] && nvmet_inline=(--inline-data-size 131072)
    out=$(MPNVME_TRADDR=$NVMET_TRADDR MPNVME_TRANSPORT=$NVMET_TRTYPE $LAB exec target mpnvme-nvmet apply --job "$JOB" "${nvmet_inline[@]}" 2>&1) ||
      { say "nvmet-failed $cond: $(tr '\n' ' ' <<<"$out")"; return 1; }
  fi
}

# NVMe/TCP PDU headers that start a packet leaving the host namespace,
# counted by nft (@ih: the TCP payload): H2CData PDUs (a write's data sent
# after an R2T) and command capsules that carry data (in-capsule writes,
# and every Fabrics Connect's 1 KiB). PDU type, header length and data
# offset must all match (24 bits), so random data all but never does. A
# header in the middle of a packet is not seen: a host streaming 128 KiB
# PDUs starts few packets with one (on 1 Gbit, 257 of 1830 writes with
# R2Ts), so these are samples that show which kind crosses: with 128 KiB
# in the capsule, no H2CData at all.
pdu_rules() {
  $LAB exec host nft -f - <<EOF
table inet mpnvme_pdus {
  chain tx {
    type filter hook output priority -300; policy accept;
    tcp dport { 4420, $NVMET_PORT } @ih,0,8 0x06 @ih,16,16 0x1818 counter comment "h2cdata"
    tcp dport { 4420, $NVMET_PORT } @ih,0,8 0x04 @ih,16,16 0x4848 counter comment "capsule_data"
  }
}
EOF
}
# pdus_now: those counters so far, as JSON ({} without the rules).
pdus_now() {
  $LAB exec host nft -j list table inet mpnvme_pdus 2>/dev/null |
    jq -c '[.nftables[] | .rule? | select(.) | {(.comment): (.expr[] | .counter? | select(.) | .packets)}] | add // {}' 2>/dev/null || echo '{}'
}

down() { # the lab, and nvmet's configuration (configfs is not in a namespace)
  mpnvme-nvmet clear --remove-ram-files >/dev/null 2>&1
  $LAB down >/dev/null
}

ready() { # WHO CONDITION LINE: wait (bounded) for WHO's ready line in its log
  for _ in $(seq 100); do grep -q "$3" "/tmp/$1-$2.log" && return 0; sleep 0.2; done
  say "$1-failed $2 $(tail -3 "/tmp/$1-$2.log" | tr '\n' ' ')"
  return 1
}

# shape TRANSPORT: a cell's transport and workload from its name,
# TRANSPORT[-jN][-qdN][-qN]: mptcp1 is one MPTCP connection (per job) on
# path 1; -jN runs N jobs instead of JOBS, each with the depth that keeps
# the commands in flight the same (-j1: the kernel host's one queue per path
# on the one vCPU); -qdN sets each job's iodepth; -qN gives each job N I/O
# queues per path (nr_io_queues); -pblock, -pbusy or -phybrid the engine's
# poll mode (default hybrid). Sets transport, jobs, depth, queues, poll.
shape() {
  transport=${1%%-*} jobs=$JOBS depth=32 queues=1 poll=hybrid
  [[ $1 =~ -p(block|busy|hybrid) ]] && poll=${BASH_REMATCH[1]}
  [[ $1 =~ -j([0-9]+) ]] && jobs=${BASH_REMATCH[1]} depth=$((32 * JOBS / jobs))
  [[ $1 =~ -qd([0-9]+) ]] && depth=${BASH_REMATCH[1]}
  [[ $1 =~ -q([0-9]+)(-|$) ]] && queues=${BASH_REMATCH[1]}
  return 0
}

engine_cell() { # TAG TRANSPORT IOPOLICY RW TRADDR
  local traddr=$5 transport jobs depth queues poll
  shape "$2"
  [[ $transport == mptcp1 ]] && traddr=10.1.1.1 transport=mptcp
  MPNVME_TRADDR=$traddr MPNVME_TRANSPORT=$transport MPNVME_IOPOLICY=$3 MPNVME_RW=$4 MPNVME_IODEPTH=$depth MPNVME_NUMJOBS=$jobs \
    MPNVME_NR_IO_QUEUES=$queues MPNVME_POLL=$poll \
    MPNVME_PATH_STATS=/tmp/$1.paths $LAB exec host \
    env ${PRELOAD:+LD_PRELOAD=$PRELOAD ASAN_OPTIONS=detect_leaks=0:abort_on_error=1} fio "$JOB" "${BWLOG[@]}" --output-format=json \
    --output=/tmp/$1.json >/tmp/$1.log 2>&1 || { failed "$1" "$(tail -2 /tmp/$1.log)"; return; }
  workload_ended $((jobs * depth * 131072))
  result "$1" "${4#rand}" /tmp/$1.json
  # Per path and job: the subflows, the most commands in flight at once,
  # the bytes it carried.
  say "$1-pathstats $(jq -sc '[.[] | .paths[] | {path, subflows, inflight_max, failovers, bytes: (.bytes_read + .bytes_written)}]' /tmp/$1.paths)"
}

raw_cell() { # TAG TRANSPORT IOPOLICY RW: the engine cell's connections over bare sockets
  local transport jobs depth queues poll paths=$PATHS connect="" i j out
  shape "$2"
  # numa sends every command down one path; mptcp1 is one connection (per
  # job) on path 1 whose subflows join the rest.
  [[ $3 == numa || $transport == mptcp1 ]] && paths=1
  [[ $transport == mptcp1 ]] && transport=mptcp
  for ((i = 1; i <= paths; i++)); do for ((j = 0; j < jobs * queues; j++)); do connect+=${connect:+,}10.1.$i.1:$CONTROL_PORT; done; done
  out=$($LAB exec host mpnvme-floor stream --connect "$connect" --transport "$transport" --direction "${4#rand}" \
    --ramp "$RAMP" --seconds "$RUNTIME" 2>&1) || { failed "$1" "mpnvme-floor stream: $out"; return; }
  workload_ended
  say "$1 $(jq -c '{mib_s, subflows, connections}' <<<"$out")"
}

# delete_controllers [TAG]: the kernel host's controllers of the subsystem,
# deleted (each said under TAG's note, when given).
delete_controllers() {
  local c
  for c in /sys/class/nvme/nvme*; do
    [[ -e $c/subsysnqn && $(cat "$c/subsysnqn") == "$MPNVME_SUBNQN" ]] || continue
    [[ -n ${1:-} ]] && say "$1-note ${c##*/} left after disconnect ($(cat "$c/state")): deleted"
    echo 1 >"$c/delete_controller" 2>/dev/null
  done
}

# TAG IOPOLICY RW TRANSPORT TRADDR: the kernel host, connected from the lab's
# host namespace (mptcp: a kernel whose NVMe host has the mptcp transport)
# with the job's options (mpnvme-nvmet connect --job: queue size, queues,
# keep-alive, digests, reconnect settings), fio running the cell's jobs and
# depth (TRANSPORT's -jN, -qdN) on the multipath device.
kernel_cell() {
  local out dev transport jobs depth queues poll
  shape "$4"
  # the cell's jobs, depth and queues: what connect --job asks the kernel for
  local shaped=(MPNVME_IODEPTH="$depth" MPNVME_NUMJOBS="$jobs" MPNVME_NR_IO_QUEUES="$queues")
  # The kernel's time of its last message before the cell: the cell's own
  # messages are the later ones (a line count would shift when the ring
  # buffer wraps).
  local seen
  seen=$(dmesg | tail -n 1 | sed -nE 's/^\[ *([0-9]+\.[0-9]+)\].*/\1/p')
  out=$(env "${shaped[@]}" MPNVME_TRADDR=$5 MPNVME_TRANSPORT=$transport MPNVME_IOPOLICY=$2 $LAB exec host mpnvme-nvmet connect --job "$JOB" 2>&1) ||
    { failed "$1" "connect: $out"; return; }
  dev=$(sed -n 's/^device //p' <<<"$out")
  out=$(mpnvme-iopolicy set "$2" --nqn "$MPNVME_SUBNQN" 2>&1) || say "$1-note iopolicy $2 not set: $out"
  fio --name=seed --filename="$dev" --ioengine=libaio --direct=1 --rw="$3" --bs=128k --numjobs="$jobs" --iodepth="$depth" \
    --size=256m --time_based=1 --runtime="$RUNTIME" --ramp_time="$RAMP" --group_reporting=1 "${BWLOG[@]}" \
    --output-format=json --output=/tmp/$1.json >/tmp/$1.log 2>&1 &
  local fpid=$!
  # A queue whose MPTCP receiver stopped (bench/mptcp-rcvbuf-stall-repro)
  # holds fio until the I/O timeout, 750 s, and the guest's time runs out
  # before the cells after it: the run is stopped once the device has
  # completed nothing for STALL_QUIET_S after the run's time, with what
  # the stuck connections look like, and its controllers deleted.
  if no_progress $fpid $((RAMP + RUNTIME)) "$STALL_QUIET_S"; then
    mptcp_stuck | while read -r l; do say "$1-note stuck $l"; done
    failed "$1" "stalled: no I/O completed for $STALL_QUIET_S s after the run's time; controllers deleted"
    delete_controllers
    for _ in $(seq 120); do kill -0 $fpid 2>/dev/null || break; sleep 1; done
    kill -9 $fpid 2>/dev/null
    wait $fpid 2>/dev/null
  else
    wait $fpid || failed "$1" "$(tail -2 /tmp/$1.log)"
    workload_ended $((jobs * depth * 131072))
    [[ -s /tmp/$1.json ]] && result "$1" "${3#rand}" /tmp/$1.json
  fi
  # Per controller (NVMe path): its I/Os, and the transport its
  # connections use (mpnvme-iopolicy finds MPTCP ones in the host namespace).
  say "$1-paths $($LAB exec host mpnvme-iopolicy show --json 2>/dev/null | jq -c '[.. | objects | select(has("reads")) | {controller, transport, address, reads, writes}]' 2>/dev/null)"
  env "${shaped[@]}" MPNVME_TRADDR=$5 MPNVME_TRANSPORT=$transport $LAB exec host mpnvme-nvmet disconnect --job "$JOB" >/dev/null 2>&1
  # A controller that disconnect left (one resetting after a timeout) would
  # reconnect into the next cell's lab: delete it, and say so.
  delete_controllers "$1"
  # What the kernel host said during the cell (resets, keep-alive and I/O
  # timeouts, reconnects), each message with its count, controller names
  # folded: the events behind a controller that carried less than the others.
  say "$1-dmesg $(dmesg | awk -v t="${seen:-0}" 'match($0, /^\[ *[0-9]+\.[0-9]+\]/) &&
    substr($0, RSTART + 1, RLENGTH - 2) + 0 > t + 0' | grep -E '\] nvme' | sed -E 's/^\[[^]]*\] //; s/nvme[0-9]+/nvmeN/g' |
    sort | uniq -c | jq -Rsc 'split("\n") | map(select(length > 0) | capture("^ *(?<n>[0-9]+) (?<m>.*)$") | {(.m): (.n | tonumber)}) | add // {}')"
}

# What the lab dropped in each direction against what each side sent, and
# the senders' own TCP counters (the kernel's record of the loss): the lab's
# counters --json, with the host side's packets and bytes sent.
loss_counters() { # CONDITION
  say "counters $1 $($LAB counters --json | jq -c '{dropped: (.directions.to_target.dropped_packets + .directions.to_host.dropped_packets),
    loss_unit, loss_via, directions, sent: {tx_packets: ([.paths[].tx_packets] | add), tx_bytes: ([.paths[].tx_bytes] | add)}}')"
}

# lab_now: what the lab dropped so far, [to the target, to the host], and the
# bytes each link carried (both directions), one JSON line.
lab_now() {
  $LAB counters --json | jq -c '{drops: [.directions.to_target.dropped_packets, .directions.to_host.dropped_packets],
    links: [.paths[] | .tx_bytes + .rx_bytes]}'
}

# flows PORT: until killed, every second, the TCP flows that carried data
# on each path to PORT (MPTCP subflows one by one) and their median round
# trip, counted in the host namespace (bench/flows.awk): one line per
# sample. Set-up under emulation takes seconds, so one sample could miss
# flows: the run's figure is each path's most, and its median round trip.
flows() {
  while :; do
    $LAB exec host ss -tinH state established "( dport = :$1 )" | awk -v paths="$PATHS" -f /files/flows.awk
    sleep 1
  done
}
# flows_seen TAG FILE: those figures of the samples in FILE, as JSON.
flows_seen() {
  say "$1-flows $(awk -v n="$PATHS" '{ for (i = 1; i <= n; i++) { if ($i > m[i]) m[i] = $i; if ($(n + i) > 0) r[i, ++k[i]] = $(n + i) } }
    END { printf "{\"flows\": ["; for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? "," : ""), m[i]
      printf "], \"rtt_ms\": ["
      for (i = 1; i <= n; i++) { c = k[i] + 0
        for (a = 2; a <= c; a++) for (b = a; b > 1 && r[i, b - 1] > r[i, b]; b--) { t = r[i, b]; r[i, b] = r[i, b - 1]; r[i, b - 1] = t }
        printf "%s%s", (i > 1 ? "," : ""), (c ? r[i, int((c + 1) / 2)] : 0) }
      print "]}" }' "$2")"
}

current=""
while read -r cond side transport policy rw tag; do
  [[ -z $cond ]] && continue
  if [[ $cond != "$current" ]]; then
    [[ -n $current ]] && { loss_counters "$current"; down; }
    up "$cond" || continue
    current=$cond
    say "lab $cond $($LAB status | grep -m2 -E 'qdisc (netem|tbf)' | tr -s ' ' | tr '\n' ';')"
  fi
  # Whether the target rests between runs: its CPU ticks over 2 s before
  # this run starts (a target still busy with the last run's connections
  # would load this one).
  say "$tag-target-rest {\"ticks\": $(target_rest)}"
  snapshot >/tmp/before
  lab_before=$(lab_now)
  pdus_before=$(pdus_now)
  # SIDE@nvmet: against nvmet's ports
  traddr=$MPNVME_TRADDR port=4420
  [[ $side == *@nvmet ]] && traddr=$NVMET_TRADDR port=$NVMET_PORT
  # The CPU every second, to take the run's last RUNTIME seconds (its
  # measured window; set-up under emulation takes longer than the run).
  (while sleep 1; do cpu_sample; done) >/tmp/cpuroles.log &
  roles_sampler=$!
  rm -f /tmp/workload.end
  [[ $side == raw ]] && port=$CONTROL_PORT
  flows $port >/tmp/flows &
  counter=$!
  case $side in
  engine*) engine_cell "$tag" "$transport" "$policy" "$rw" "$traddr" ;;
  raw) raw_cell "$tag" "$transport" "$policy" "$rw" ;;
  *) kernel_cell "$tag" "$policy" "$rw" "$transport" "$traddr" ;;
  esac
  kill $counter
  wait $counter 2>/dev/null
  flows_seen "$tag" /tmp/flows
  counted "$tag" /tmp/before
  lab_after=$(lab_now)
  say "$tag-drops $(jq -nc --argjson a "$lab_before" --argjson b "$lab_after" '{to_target: ($b.drops[0] - $a.drops[0]), to_host: ($b.drops[1] - $a.drops[1])}')"
  say "$tag-pdus $(jq -nc --argjson a "$pdus_before" --argjson b "$(pdus_now)" '$b | with_entries(.value -= ($a[.key] // 0))')"
  # The bytes each link carried during the run (set-up included).
  say "$tag-links $(jq -nc --argjson a "$lab_before" --argjson b "$lab_after" '[range($a.links | length) as $i | $b.links[$i] - $a.links[$i]]')"
  kill "$roles_sampler" 2>/dev/null
  [[ -s /tmp/workload.end ]] && cpu_roles "$tag" /tmp/cpuroles.log "$(cat /tmp/workload.end)"
  # How busy the one emulated CPU was over the measured window: near 1,
  # the cell measured the emulation, not the paths.
  # (/proc/stat's ticks in the samples' S lines: busy is all but idle and iowait)
  say "$tag-cpu {\"busy\": $(grep '^S ' /tmp/cpuroles.log | tail -n $((RUNTIME + 1)) |
    awk '{ t = 0; for (i = 2; i <= NF; i++) t += $i; busy = t - $5 - $6 }
      NR == 1 { b = busy; t0 = t } { lb = busy; lt = t } END { printf("%.3f", (lt > t0) ? (lb - b) / (lt - t0) : 0) }')}"
done </files/plan
[[ -n $current ]] && loss_counters "$current"
down
echo BENCH-DONE
