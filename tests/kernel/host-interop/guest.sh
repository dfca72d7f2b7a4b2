# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the kernel-host interop test: the Linux nvme-tcp host
# connects to mpnvme-target on the machine (10.0.2.2) over two ports (two
# paths, one subsystem), writes and reads back data, keeps reading while the
# machine cuts one path, while port 2 is inaccessible (ANA), and while this
# guest blackholes path 1, then disconnects. Parameters come from the kernel
# command line: mp.p1, mp.p2 (ports), mp.nqn.
for kv in $(cat /proc/cmdline); do
  case $kv in mp.p1=*) P1=${kv#*=} ;; mp.p2=*) P2=${kv#*=} ;; mp.nqn=*) NQN=${kv#*=} ;; esac
done
now() { cut -d' ' -f1 /proc/uptime; }
timeouts() { awk '$1 == "TcpExt:" { if (!n) { for (i = 2; i <= NF; i++) if ($i == "TCPTimeouts") n = i } else print $n }' /proc/net/netstat; }
# A silent blackhole on path 1, made in this guest so that its own TCP
# meets it: for 8 s everything from the target's first port vanishes on
# arrival (the host's segments are never acknowledged: its retransmission
# timer runs, as behind a failed link). Reads go on throughout; each one's
# time says how long the path's commands waited before they failed over.
blackhole() {
  NFT=/usr/local/bin/nft
  [ -x $NFT ] || { say "blackhole nft-missing"; return; }
  for i in $(seq 60); do # the machine makes port 2 optimized again first
    [ "$(cat /sys/class/nvme/*/nvme*c*n1/ana_state | sort -u)" = optimized ] && break
    sleep 0.5
  done
  t0=$(timeouts)
  $NFT add table inet bh && $NFT add chain inet bh pre '{ type filter hook prerouting priority -300; }' &&
    $NFT add rule inet bh pre ip saddr 10.0.2.2 tcp sport $P1 counter drop || { say "blackhole nft-failed"; return; }
  start=$(now) errors=0 longest=0 reads=0 lifted=""
  while awk -v n=$(now) -v s=$start 'BEGIN { exit !(n - s < 20) }'; do
    r0=$(now)
    sum=$(dd if=$dev bs=1M count=16 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1) || errors=$((errors + 1))
    [ "$sum" = "$expected" ] || errors=$((errors + 1))
    reads=$((reads + 1))
    longest=$(awk -v a=$longest -v b=$(awk -v x=$r0 -v y=$(now) 'BEGIN { print y - x }') 'BEGIN { print (b > a) ? b : a }')
    if [ -z "$lifted" ] && awk -v n=$(now) -v s=$start 'BEGIN { exit !(n - s >= 8) }'; then
      say "blackhole dropped $($NFT list table inet bh | grep -o 'packets [0-9]*')"
      $NFT delete table inet bh
      lifted=$(now)
    fi
  done
  say "blackhole reads=$reads errors=$errors longest=${longest}s timeouts=$(($(timeouts) - t0))"
  for c in $(ctrls); do say "blackhole after path $(basename $c) state=$(cat $c/state)"; done
}
scenario() {
  say() { echo "HOSTTEST $*"; }
  expected=$(yes mpnvme0 | head -c 16777216 | md5sum | cut -d' ' -f1)
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
  # Two controllers live, and the namespace's device reads.
  both_live() {
    sub=$(ls /sys/class/nvme-subsystem | head -1)
    [ -n "$sub" ] && [ "$(cat $(ctrls | sed 's|$|/state|') 2>/dev/null | grep -c '^live$')" = 2 ] && host_device_ready
  }
  # port_inaccessible PORT: the host sees ANA state inaccessible through PORT.
  port_inaccessible() {
    for c in $(ctrls); do
      case $(cat $c/address) in *trsvcid=$1*) grep -q inaccessible /sys/class/nvme/$(basename $c)/nvme*c*n1/ana_state && return 0 ;; esac
    done
    return 1
  }
  for p in $P1 $P2; do
    echo "nqn=$NQN,transport=tcp,traddr=10.0.2.2,trsvcid=$p,hostnqn=nqn.2014-08.org.nvmexpress:uuid:$uuid,hostid=$uuid,reconnect_delay=1,ctrl_loss_tmo=60" \
      > /dev/nvme-fabrics || { say "connect-failed port $p"; return; }
  done
  wait_until 60 connected both_live || return
  sub=$(ls /sys/class/nvme-subsystem | head -1)
  n=$(ctrls | wc -l)
  echo round-robin > /sys/class/nvme-subsystem/$sub/iopolicy
  say "connected subsys=$sub controllers=$n iopolicy=$(cat /sys/class/nvme-subsystem/$sub/iopolicy) model=$(cat /sys/class/nvme-subsystem/$sub/model | tr -d ' ')"
  for c in $(ctrls); do say "path $(basename $c) $(cat $c/address) state=$(cat $c/state) ana=$(cat /sys/class/nvme/$(basename $c)/nvme*c*n1/ana_state 2>/dev/null)"; done
  dev=/dev/$(ls /sys/class/nvme-subsystem/$sub | grep -m1 '^nvme[0-9]*n1$')
  yes mpnvme0 | head -c 16777216 | dd of=$dev bs=1M oflag=direct 2>/dev/null || say "write-failed"
  say "md5 $(dd if=$dev bs=1M count=16 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  # The machine cuts path 1 when it reads "readloop start" and restores it
  # when it reads "path-lost": reads go on until a controller has left
  # "live" and both are live again (at most 120 s).
  say "readloop start"
  errors=0 i=0 lost="" start=$(now)
  while [ $i -lt 3 ] || [ -z "$lost" ] || ! both_live; do
    awk -v n=$(now) -v s=$start 'BEGIN { exit !(n - s > 120) }' && { say "readloop timed-out lost=${lost:-no}"; break; }
    i=$((i + 1))
    sum=$(dd if=$dev bs=1M count=16 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1) || errors=$((errors + 1))
    say "read $i md5 $sum"
    if [ -z "$lost" ] && ! both_live; then
      lost=$(now)
      say "path-lost $(for c in $(ctrls); do echo "$(basename $c)=$(cat $c/state)"; done | tr '\n' ' ')"
    fi
  done
  say "readloop done errors=$errors"
  for c in $(ctrls); do say "after path $(basename $c) state=$(cat $c/state)"; done
  # The machine makes port 2 inaccessible now; the AEN makes the host re-read
  # the ANA log, and I/O must keep working on the optimized path.
  say "ana-check start"
  wait_until 60 "ana-check" port_inaccessible $P2
  for c in $(ctrls); do say "ana $(cat $c/address | cut -d, -f2) $(cat /sys/class/nvme/$(basename $c)/nvme*c*n1/ana_state)"; done
  say "ana-read md5 $(dd if=$dev bs=1M count=16 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  blackhole
  for c in $(ctrls); do echo 1 > /sys/class/nvme/$(basename $c)/delete_controller; done
  wait_until 30 disconnect host_none
  if ls /sys/class/nvme-subsystem/ | grep -q nvme-subsys; then say "disconnect-incomplete"; else say "disconnected"; fi
}
scenario &
