#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The reservations job of the Debian-root lab guest: the same nvme-cli
# reservation commands from two hosts of this kernel, A and B, first
# against nvmet here (a file namespace with resv_enable), then against
# mpnvme-target on the machine (10.0.2.2, port LAB_port). Every outcome
# is a "RESV TARGET ..." line, so the machine compares the two targets
# line by line: blktests' nvme/054 sequence as host A (the Reservation
# Report lines 054 compares), then who may read and write under Write
# Exclusive and Exclusive Access, a preemption and a clear. Then what
# nvmet does where mpnvme-target chose (admission.py from /opt/lab, a host
# apart from the kernel's): a host ID presented by a second host NQN, and
# which discovery controllers hear of a subsystem linked to a port.
set -uo pipefail
nqn=nqn.2026-12.io.mpnvme:reservations
id_a=6f1b2c3d-0000-4000-8000-00000000000a id_b=6f1b2c3d-0000-4000-8000-00000000000b
modprobe nvme-tcp

# ctrl ID: the controller character device of host ID's connection.
ctrl() {
  local c
  for c in /sys/class/nvme/nvme*; do
    [[ $(cat "$c/hostid" 2>/dev/null) == "$1" && $(cat "$c/subsysnqn") == "$nqn" ]] && { echo "/dev/${c##*/}"; return; }
  done
}
# The outcome of one command: "ok", or the status nvme-cli reports.
outcome() {
  local out
  if out=$("$@" 2>&1); then echo ok; else grep -m1 -io 'nvme status.*' <<<"$out" || echo "failed: ${out//$'\n'/ }"; fi
}
sequence() { # TARGET TRADDR TRSVCID
  local t=$1 a b
  say() { echo "RESV $t $*"; }
  for h in "$id_a" "$id_b"; do
    # Straight to the fabrics device: nvme-cli 2.4 takes a second host to
    # the same port for a connection it already has, --duplicate-connect
    # or not.
    echo "transport=tcp,traddr=$2,trsvcid=$3,nqn=$nqn,hostnqn=nqn.2014-08.org.nvmexpress:uuid:$h,hostid=$h" \
      >/dev/nvme-fabrics || { say "connect failed"; nvme disconnect -n "$nqn" >/dev/null; return 1; }
  done
  udevadm settle
  a=$(ctrl "$id_a") b=$(ctrl "$id_b")
  [[ -n $a && -n $b ]] || { say "no controllers"; return 1; }
  report() { nvme resv-report "$a" -n 1 --eds 2>&1 | grep -v hostid | grep -E "gen|rtype|regctl|cntlid|rcsts|rkey" | while read -r l; do say "$l"; done; }
  resv() { local who=$1 cmd=$2; shift 2; say "$who $cmd $*: $(outcome nvme "resv-$cmd" "$who" -n 1 "$@")"; }
  io() { # HOST read|write: LBA 0 (512 bytes) through that host's controller
    local dev=$1 op=$2
    local f=/tmp/resv-$op
    [[ $op == write ]] && head -c 512 /dev/urandom >"$f"
    say "${dev##*/}=$( [[ $dev == "$a" ]] && echo A || echo B) $op: $(outcome nvme "$op" "$dev" -n 1 -s 0 -c 0 -z 512 -d "$f")"
  }
  # blktests' nvme/054, host A alone.
  say "Register"; report
  resv "$a" register --nrkey=4 --rrega=0; report
  resv "$a" register --crkey=4 --nrkey=5 --rrega=2; report
  resv "$a" register --crkey=5 --rrega=1; report
  resv "$a" register --nrkey=4 --rrega=0
  resv "$a" acquire --crkey=4 --rtype=1 --racqa=0; report
  resv "$a" acquire --crkey=4 --prkey=4 --rtype=2 --racqa=1; report
  resv "$a" release --crkey=4 --rtype=2 --rrela=0; report
  resv "$a" acquire --crkey=4 --rtype=1 --racqa=0; report
  resv "$a" release --crkey=4 --rrela=1; report
  # Two hosts: Write Exclusive held by A; B not registered, then registered.
  resv "$a" register --nrkey=10 --rrega=0
  resv "$a" acquire --crkey=10 --rtype=1 --racqa=0
  io "$b" read; io "$b" write; io "$a" write
  resv "$b" register --nrkey=11 --rrega=0
  io "$b" write
  resv "$b" acquire --crkey=11 --rtype=1 --racqa=0
  resv "$a" release --crkey=10 --rtype=2 --rrela=0
  # Exclusive Access held by A: B can neither read nor write.
  resv "$a" release --crkey=10 --rtype=1 --rrela=0
  resv "$a" acquire --crkey=10 --rtype=2 --racqa=0
  io "$b" read; io "$b" write; report
  # B preempts A by A's key: A is unregistered and locked out.
  resv "$b" acquire --crkey=11 --prkey=10 --rtype=2 --racqa=1; report
  io "$a" read; io "$b" write
  resv "$a" register --crkey=10 --rrega=1
  resv "$b" release --crkey=11 --rrela=1; report
  io "$a" write
  nvme disconnect -n "$nqn" >/dev/null
}

# nvmet: a file namespace with reservations enabled, a TCP port on loopback.
cfs=/sys/kernel/config/nvmet
modprobe nvmet-tcp
truncate -s 64M /tmp/resv.img
mkdir "$cfs/subsystems/$nqn" && echo 1 >"$cfs/subsystems/$nqn/attr_allow_any_host" &&
  mkdir "$cfs/subsystems/$nqn/namespaces/1" && echo -n /tmp/resv.img >"$cfs/subsystems/$nqn/namespaces/1/device_path" &&
  echo 1 >"$cfs/subsystems/$nqn/namespaces/1/resv_enable" && echo 1 >"$cfs/subsystems/$nqn/namespaces/1/enable" &&
  mkdir "$cfs/ports/1" && echo tcp >"$cfs/ports/1/addr_trtype" && echo ipv4 >"$cfs/ports/1/addr_adrfam" &&
  echo 127.0.0.1 >"$cfs/ports/1/addr_traddr" && echo 4420 >"$cfs/ports/1/addr_trsvcid" &&
  ln -s "$cfs/subsystems/$nqn" "$cfs/ports/1/subsystems/$nqn" || { echo "RESV nvmet setup failed"; exit 1; }
sequence nvmet 127.0.0.1 4420
sequence mpnvme-target 10.0.2.2 "$LAB_port"

# nvmet, a host ID under a second NQN: A registers and holds Write
# Exclusive, B presents A's host ID.
check=nqn.2026-12.io.mpnvme:check
truncate -s 16M /tmp/check.img
mkdir "$cfs/subsystems/$check" && echo 1 >"$cfs/subsystems/$check/attr_allow_any_host" &&
  mkdir "$cfs/subsystems/$check/namespaces/1" && echo -n /tmp/check.img >"$cfs/subsystems/$check/namespaces/1/device_path" &&
  echo 1 >"$cfs/subsystems/$check/namespaces/1/resv_enable" && echo 1 >"$cfs/subsystems/$check/namespaces/1/enable" &&
  ln -s "$cfs/subsystems/$check" "$cfs/ports/1/subsystems/$check" || echo "RESV nvmet check setup failed"
python3 /opt/lab/admission.py hostid-observe 127.0.0.1 "$check" 2>&1 | sed 's/^/RESV nvmet-check /'
# nvmet's discovery notices: a subsystem for host H1 only, linked to the
# port while discovery controllers of H1 and H2 wait for a change.
h1=nqn.2026-12.io.mpnvme:disc-h1 h2=nqn.2026-12.io.mpnvme:disc-h2 only=nqn.2026-12.io.mpnvme:for-h1
mkdir "$cfs/hosts/$h1" "$cfs/subsystems/$only" && echo 0 >"$cfs/subsystems/$only/attr_allow_any_host" &&
  ln -s "$cfs/hosts/$h1" "$cfs/subsystems/$only/allowed_hosts/$h1" || echo "RESV nvmet discovery setup failed"
python3 /opt/lab/admission.py discovery 127.0.0.1 "sh:ln -s $cfs/subsystems/$only $cfs/ports/1/subsystems/$only" "$h1" "$h2" 2>&1 |
  sed 's/^/RESV nvmet-check /'
