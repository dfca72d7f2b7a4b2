# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the scripts that run the qemu lab from this machine (the
# kernel tests, the bench's guest experiments, lab.sh itself): free ports,
# the guest's console, mpnvme-target on this machine, the Debian-root
# guest. `state` is the lab's state directory; `fail` is the sourcing
# script's; `qemu_lab` is this directory.
qemu_lab=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# A loopback TCP port nobody listens on right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The guest's serial console, without the \r of its line ends.
console() { tr -d '\r' <"$state/console.log"; }

# Whether a console line matches REGEX. No pipe into grep -q: under
# pipefail its early exit would kill the writer and turn a match into a miss.
seen() { grep -aqE -- "$1" <<<"$(console)"; }

# Wait up to TIMEOUT seconds for a console line matching REGEX.
wait_for() { # REGEX TIMEOUT
  local t=$((SECONDS + $2))
  while ((SECONDS < t)); do
    seen "$1" && return 0
    sleep 0.5
  done
  fail "guest did not print /$1/ within $2 s"
}

# start_machine_target LOG ARGS...: mpnvme-target ($build's) on this machine,
# where the guest reaches it as 10.0.2.2; ready (bounded) when it says so.
# Its pid is in tpid, for the caller's cleanup.
start_machine_target() {
  local log=$1
  shift
  "$build/mpnvme-target/mpnvme-target" "$@" >"$log" 2>&1 &
  tpid=$!
  for _ in $(seq 50); do grep -q ready "$log" && break; kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
  grep -q 'mpnvme-target: ready' "$log" || fail "mpnvme-target did not start"
}

# stop_machine_target LOG: SIGINT; it must exit 0 with no sanitizer report.
stop_machine_target() {
  local rc
  kill -INT "$tpid"; wait "$tpid"; rc=$?; tpid=
  ((rc == 0)) || fail "target exited $rc"
  grep -qE 'ERROR: (Address|Undefined|Leak)Sanitizer|runtime error:' "$1" && fail "sanitizer report in the target"
}

# kernel_host_test NAME CONSOLE_RE: the frame of the kernel-host tests (the
# guest's host against mpnvme-target on this machine): a state directory,
# the guest and the target stopped at exit (the console kept in
# MPNVME_KEEP_CONSOLE when set), and fail() showing the console lines that
# match CONSOLE_RE and the target's log.
kernel_host_test() {
  state=$(mktemp -d "/tmp/mpnvme-$1.XXXXXX")
  console_re=$2
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
  trap kernel_host_cleanup EXIT
  fail() {
    echo "FAIL: $*"
    echo "--- guest console"; console | grep -aE "$console_re"
    echo "--- target log"; tail -30 "$state/target.log"
    exit 1
  }
}
kernel_host_cleanup() {
  "$qemu_lab/lab.sh" stop "$state"
  [[ -n ${MPNVME_KEEP_CONSOLE:-} ]] && cp "$state/console.log" "$MPNVME_KEEP_CONSOLE"
  [[ -n ${tpid:-} ]] && kill "$tpid" 2>/dev/null && wait "$tpid" 2>/dev/null
  rm -rf "$state"
}

# debian_guest_start JOB "NAME=VALUE ..." [FILE...]: boot the lab guest
# ($state) in the Debian root of debian-root.sh (the modules of
# MPNVME_LAB_KERNEL's kernel), where debian-root-init.sh runs JOB (a
# script) with the settings as LAB_NAME; the FILEs beside it in /opt/lab.
# The guest says "LAB-JOB-DONE rc N" when the job ends.
debian_guest_start() {
  local job=$1 settings=$2 kd image append="" kv
  shift 2
  kd=$("$qemu_lab/lab.sh" prepare) || fail "the lab kernel could not be prepared"
  image=$("$qemu_lab/debian-root.sh" "$kd") || fail "the guest's Debian root could not be built"
  for kv in $settings; do append+=" lab.$kv"; done
  MPNVME_LAB_MEM=${MPNVME_LAB_MEM:-1024} MPNVME_LAB_DISK=$image \
    MPNVME_LAB_FILES="$qemu_lab/debian-root-init.sh $job $*" MPNVME_LAB_APPEND="${MPNVME_LAB_APPEND:-} lab.job=$(basename "$job")$append" \
    "$qemu_lab/lab.sh" start "$state" "$qemu_lab/debian-root.guest.sh" || fail "the guest did not boot"
}
