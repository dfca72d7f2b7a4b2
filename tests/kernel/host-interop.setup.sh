# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the kernel-host interop test: the Linux nvme-tcp host
# connects to mpnvme-target on the machine (10.0.2.2) over two ports (two
# paths, one subsystem), writes and reads back data, keeps reading while the
# machine cuts one path, then disconnects. Parameters come from the kernel
# command line: mp.p1, mp.p2 (ports), mp.nqn.
for kv in $(cat /proc/cmdline); do
  case $kv in mp.p1=*) P1=${kv#*=} ;; mp.p2=*) P2=${kv#*=} ;; mp.nqn=*) NQN=${kv#*=} ;; esac
done
scenario() {
  say() { echo "HOSTTEST $*"; }
  uuid=$(cat /proc/sys/kernel/random/uuid)
  # Discovery through nvme-cli (copied in from the machine): the target's
  # discovery controller must list the subsystem on both ports.
  NVME=/usr/local/bin/nvme
  mkdir -p /etc/nvme
  if [ -x "$NVME" ]; then
    $NVME discover -t tcp -a 10.0.2.2 -s $P1 --hostnqn=nqn.2014-08.org.nvmexpress:uuid:$uuid --hostid=$uuid 2>&1 | grep -E 'subnqn|trsvcid|trtype|subtype|rror|ailed' | tr -s ' ' | sed 's/^/HOSTTEST discovery /'
  else
    say "discovery nvme-cli-missing"
  fi
  ctrls() { # controller directories of the subsystem (not the namespace head)
    for c in /sys/class/nvme-subsystem/$sub/nvme*; do
      case $(basename $c) in nvme*n[0-9]*) ;; *) echo $c ;; esac
    done
  }
  for p in $P1 $P2; do
    echo "nqn=$NQN,transport=tcp,traddr=10.0.2.2,trsvcid=$p,hostnqn=nqn.2014-08.org.nvmexpress:uuid:$uuid,hostid=$uuid,reconnect_delay=1,ctrl_loss_tmo=60" \
      > /dev/nvme-fabrics || { say "connect-failed port $p"; return; }
  done
  sleep 2
  sub=$(ls /sys/class/nvme-subsystem | head -1)
  n=$(ctrls | wc -l)
  echo round-robin > /sys/class/nvme-subsystem/$sub/iopolicy
  say "connected subsys=$sub controllers=$n iopolicy=$(cat /sys/class/nvme-subsystem/$sub/iopolicy) model=$(cat /sys/class/nvme-subsystem/$sub/model | tr -d ' ')"
  for c in $(ctrls); do say "path $(basename $c) $(cat $c/address) state=$(cat $c/state) ana=$(cat /sys/class/nvme/$(basename $c)/nvme*c*n1/ana_state 2>/dev/null)"; done
  dev=/dev/$(ls /sys/class/nvme-subsystem/$sub | grep -m1 '^nvme[0-9]*n1$')
  yes mpnvme0 | head -c 16777216 | dd of=$dev bs=1M oflag=direct 2>/dev/null || say "write-failed"
  say "md5 $(dd if=$dev bs=1M count=16 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  say "readloop start"
  errors=0
  i=0
  while [ $i -lt 12 ]; do
    i=$((i + 1))
    sum=$(dd if=$dev bs=1M count=16 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1) || errors=$((errors + 1))
    say "read $i md5 $sum"
    sleep 1
  done
  say "readloop done errors=$errors"
  for c in $(ctrls); do say "after path $(basename $c) state=$(cat $c/state)"; done
  # The machine makes port 2 inaccessible now; the AEN makes the host re-read
  # the ANA log, and I/O must keep working on the optimized path.
  say "ana-check start"
  sleep 5
  for c in $(ctrls); do say "ana $(cat $c/address | cut -d, -f2) $(cat /sys/class/nvme/$(basename $c)/nvme*c*n1/ana_state)"; done
  say "ana-read md5 $(dd if=$dev bs=1M count=16 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  for c in $(ctrls); do echo 1 > /sys/class/nvme/$(basename $c)/delete_controller; done
  sleep 1
  if ls /sys/class/nvme-subsystem/ | grep -q nvme-subsys; then say "disconnect-incomplete"; else say "disconnected"; fi
}
scenario &
