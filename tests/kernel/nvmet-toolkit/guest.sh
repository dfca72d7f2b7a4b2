# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the kernel toolkit test: mpnvme-nvmet and mpnvme-iopolicy
# against the guest's real nvmet, nvme-tcp, configfs and sysfs. Markers:
# "TK ok: ...", "TK FAIL: ...", "TK done". mp.go=PORT: the machine's
# handshake port (10.0.2.2), used while the engine runs against this nvmet.
for kv in $(cat /proc/cmdline); do case $kv in mp.go=*) GO=${kv#*=} ;; esac; done
export MPNVME_ENGINE=/unused MPNVME_TRADDR1=10.0.2.15 MPNVME_PORT1=4420 MPNVME_TRADDR2=10.0.2.15 MPNVME_PORT2=4421
mkdir -p /etc/nvme /run
echo "nqn.2014-08.org.nvmexpress:uuid:0b3e5b2c-6f7e-4c1a-9d3e-1f2a3b4c5d6e" > /etc/nvme/hostnqn
echo "0b3e5b2c-6f7e-4c1a-9d3e-1f2a3b4c5d6e" > /etc/nvme/hostid
JOB=/files/nvmet-two-paths.fio
NQN=nqn.2026-11.io.mpnvme:nvmet-lab
NV=/usr/local/bin/mpnvme-nvmet
IP=/usr/local/bin/mpnvme-iopolicy
export ASAN_OPTIONS=detect_leaks=0
ok() { echo "TK ok: $*"; }
bad() { echo "TK FAIL: $*"; }
expect_fail() { # TEXT CMD...: the command fails and says TEXT
  want=$1; shift
  out=$("$@" 2>&1) && { bad "accepted: $* -> $out"; return; }
  out=$(echo "$out" | tr "\n" " ")
  case $out in *"$want"*) ok "refused: $out" ;; *) bad "'$*' failed without '$want': $out" ;; esac
}
listening() { # PORT: a socket listens on PORT (IPv4 or IPv6), by /proc/net
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
    awk -v p="$(printf ':%04X' "$1")" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }'
}
connect_reads() { # JOB WHAT: connect --job, read through its device, disconnect
  if out=$($NV connect --job $1 2>&1); then
    cdev=$(echo "$out" | sed -n 's/^device //p')
    dd if=$cdev of=/dev/null bs=4k count=100 iflag=direct 2>/dev/null && ok "connect --job: $2" || bad "read from $cdev after connect ($2)"
    $NV disconnect >/dev/null 2>&1
  else
    bad "connect --job ($2): $out"
  fi
}
reads() { # per-path read counts of the subsystem, "nvmeA=N nvmeB=M"
  $IP show --json | tr -d ' \n' | sed 's/},{/}\n{/g' | sed -n 's/.*"controller":"\(nvme[0-9]*\)".*"reads":\([0-9]*\).*/\1=\2/p' | tr '\n' ' '
}

tk() {
  cd /tmp
  out=$($NV apply --job $JOB 2>&1) && ok "apply: $(echo $out | tr '\n' ' ')" || { bad "apply: $out"; echo "TK done"; return; }
  out2=$($NV apply --job $JOB 2>&1) && [ "$out" = "$out2" ] && ok "apply is idempotent" || bad "second apply: $out2"
  n=$(ls /sys/kernel/config/nvmet/ports | wc -l)
  [ "$n" = 2 ] && ok "2 ports" || bad "$n ports"
  [ "$(cat /sys/module/nvmet_tcp/parameters/so_priority)" = 3 ] && ok "nvmet_tcp so_priority=3 from the job's sk_priority" || bad "so_priority $(cat /sys/module/nvmet_tcp/parameters/so_priority)"
  echo "TK engine-ready"
  nc 10.0.2.2 $GO > /tmp/go 2>/dev/null   # blocks until the machine's engine run is over
  ok "machine engine run finished: $(cat /tmp/go)"

  out=$($NV connect --job $JOB 2>&1) && ok "connect: $(echo $out | tr '\n' ' ')" || bad "connect: $out"
  dev=$(echo "$out" | sed -n 's/^device //p')
  [ "$($IP show | grep -c 'nvme[0-9]* tcp')" = 2 ] && ok "one subsystem, two controllers" || bad "$($IP show)"
  $IP show | sed 's/^/TK show: /'
  grep -q round-robin /sys/class/nvme-subsystem/*/iopolicy && ok "connect applied iopolicy=round-robin" || bad "iopolicy $(cat /sys/class/nvme-subsystem/*/iopolicy)"
  kv=$(uname -r | awk -F. '{print $1 * 100 + $2}')
  for pol in numa round-robin queue-depth; do
    if [ $pol = queue-depth ] && [ $kv -lt 611 ]; then # the policy arrived in Linux 6.11
      expect_fail "the queue-depth policy needs Linux 6.11 or later (this kernel is $(uname -r))" $IP set queue-depth --nqn $NQN
      expect_fail "needs Linux 6.11" $IP set queue-depth --default
      continue
    fi
    out=$($IP set $pol --nqn $NQN 2>&1) || { bad "set $pol: $out"; continue; }
    [ "$(cat /sys/class/nvme-subsystem/*/iopolicy)" = $pol ] || bad "read back after set $pol"
    before=$(reads)
    dd if=$dev of=/dev/null bs=4k count=4000 iflag=direct 2>/dev/null
    echo "TK split $pol before $before after $(reads)"
  done
  $IP set numa --subsys $(ls /sys/class/nvme-subsystem | head -1) >/dev/null 2>&1 && ok "set --subsys" || bad "set --subsys"
  $IP set round-robin --all >/dev/null 2>&1 && ok "set --all" || bad "set --all"
  $IP set round-robin --default >/dev/null && [ "$(cat /sys/module/nvme_core/parameters/iopolicy)" = round-robin ] &&
    ok "set --default round-robin" || bad "default $(cat /sys/module/nvme_core/parameters/iopolicy)"
  $IP set numa --default >/dev/null
  $IP show --json | grep -q '"iopolicy": "round-robin"' && ok "show --json" || bad "show --json"
  expect_fail "no NVMe subsystem with NQN nqn.nope" $IP set numa --nqn nqn.nope
  expect_fail "unknown policy 'fastest'" $IP set fastest --all
  expect_fail "set needs one of" $IP set numa

  # Errors of the kernel target, explained, and rolled back.
  nc -l -p 4425 </dev/null >/dev/null 2>&1 &
  ncpid=$!
  for _ in $(seq 50); do listening 4425 && break; sleep 0.1; done
  listening 4425 || bad "nc never listened on port 4425"
  sed 's/${MPNVME_PORT2}/4425/; s/nvmet-lab/busy-port/' $JOB > /tmp/busy.fio
  expect_fail "Address already in use" $NV apply --job /tmp/busy.fio
  kill $ncpid
  [ ! -e /sys/kernel/config/nvmet/subsystems/nqn.2026-11.io.mpnvme:busy-port ] && ok "failed apply rolled back its subsystem" || bad "busy-port subsystem left behind"
  [ "$(ls /sys/kernel/config/nvmet/ports | wc -l)" = 2 ] && ok "failed apply rolled back its ports" || bad "ports: $(ls /sys/kernel/config/nvmet/ports)"
  expect_fail "does not know this transport type; mptcp needs a kernel with the NVMe-over-MPTCP series" $NV apply --job $JOB --trtype mptcp
  expect_fail "this kernel's NVMe host has no mptcp transport" $NV connect --job $JOB --trtype mptcp
  expect_fail "the port is enabled" $NV apply --job $JOB --inline-data-size 8192

  # Only root may change the kernel's configuration.
  expect_fail "needs root" /usr/local/bin/setpriv --reuid=65534 --regid=65534 --clear-groups $IP set numa --all
  expect_fail "needs root" /usr/local/bin/setpriv --reuid=65534 --regid=65534 --clear-groups $NV apply --job $JOB
  # Access control and ANA state from the command line.
  sed 's/${MPNVME_PORT2}/4427/; s/${MPNVME_PORT1}/4426/; s/nvmet-lab/acl/' $JOB > /tmp/acl.fio
  if out=$($NV apply --job /tmp/acl.fio --allow-host nqn.2014-08.org.nvmexpress:uuid:acl-host --ana 2:non-optimized 2>&1); then
    s=/sys/kernel/config/nvmet/subsystems/nqn.2026-11.io.mpnvme:acl
    [ "$(cat $s/attr_allow_any_host)" = 0 ] && [ -L $s/allowed_hosts/nqn.2014-08.org.nvmexpress:uuid:acl-host ] &&
      ok "--allow-host: only the listed host" || bad "allowed hosts: $(ls $s/allowed_hosts)"
    p2=$(grep -l 4427 /sys/kernel/config/nvmet/ports/*/addr_trsvcid | xargs dirname)
    [ "$(cat $p2/ana_groups/1/ana_state)" = non-optimized ] && ok "--ana 2:non-optimized on the second path's port" || bad "ana $(cat $p2/ana_groups/1/ana_state)"
  else
    bad "apply --allow-host --ana: $out"
  fi

  out=$($NV disconnect 2>&1) && ok "disconnect: $(echo $out | tr '\n' ' ')" || bad "disconnect: $out"
  [ -z "$(ls /sys/class/nvme-subsystem 2>/dev/null)" ] && ok "no subsystem left on the host" || bad "left: $(ls /sys/class/nvme-subsystem)"
  # disconnect --job: the job's controllers, with no record (as after a reboot).
  $NV connect --job $JOB >/dev/null 2>&1 || bad "second connect"
  rm -f /run/mpnvme-nvmet/connected
  out=$($NV disconnect --job $JOB 2>&1) && [ "$(echo "$out" | grep -c '^disconnected nvme')" = 2 ] &&
    ok "disconnect --job without a record: $(echo $out | tr '\n' ' ')" || bad "disconnect --job: $out"
  [ -z "$(ls /sys/class/nvme-subsystem 2>/dev/null)" ] && ok "disconnect --job left no subsystem" || bad "left: $(ls /sys/class/nvme-subsystem)"

  # DH-HMAC-CHAP from a job's options: nvmet's host entry gets the keys,
  # the subsystem admits that host only, and the kernel host connected by
  # the same job authenticates (a job with another key cannot).
  . /files/auth-keys.sh
  set -- $(echo "$AUTH_HOSTS" | grep ':host-sha512 ')
  ahost=$1 akey=$2 actrl=$3
  sed 's/${MPNVME_PORT2}/4432/; s/${MPNVME_PORT1}/4431/; s/nvmet-lab/auth/' $JOB > /tmp/auth.fio
  printf 'hostnqn=%s\ndhchap_secret=%s\ndhchap_ctrl_secret=%s\n' "$ahost" "$akey" "$actrl" >> /tmp/auth.fio
  sed "s|^dhchap_secret=.*|dhchap_secret=$AUTH_WRONG_KEY|" /tmp/auth.fio > /tmp/auth-wrong.fio
  as=/sys/kernel/config/nvmet/subsystems/nqn.2026-11.io.mpnvme:auth
  ah=/sys/kernel/config/nvmet/hosts/$ahost
  # Linux 6.1's nvmet has no in-band authentication: apply says so.
  mkdir /sys/kernel/config/nvmet/hosts/probe-auth
  has_auth=0
  [ -e /sys/kernel/config/nvmet/hosts/probe-auth/dhchap_key ] && has_auth=1
  rmdir /sys/kernel/config/nvmet/hosts/probe-auth
  if [ $has_auth = 0 ]; then
    expect_fail "this kernel's nvmet has no in-band authentication" $NV apply --job /tmp/auth.fio
  elif out=$($NV apply --job /tmp/auth.fio 2>&1); then
    [ "$(cat $ah/dhchap_key)" = "$akey" ] && [ "$(cat $ah/dhchap_ctrl_key)" = "$actrl" ] &&
      [ "$(cat $ah/dhchap_hash)" = "hmac(sha256)" ] && [ "$(cat $ah/dhchap_dhgroup)" = null ] &&
      ok "apply --job: the job's keys, hash and group in nvmet's host entry" || bad "host entry: hash $(cat $ah/dhchap_hash) group $(cat $ah/dhchap_dhgroup)"
    [ "$(cat $as/attr_allow_any_host)" = 0 ] && [ -L "$as/allowed_hosts/$ahost" ] &&
      ok "apply --job: only the job's host admitted" || bad "auth subsystem admits: any=$(cat $as/attr_allow_any_host) $(ls $as/allowed_hosts)"
    connect_reads /tmp/auth.fio "the kernel host authenticated (bidirectional) and reads"
    expect_fail "connect" $NV connect --job /tmp/auth-wrong.fio
  else
    bad "apply --job with dhchap_secret: $out"
  fi

  # TLS from a job's options: nvmet's ports require TLS 1.3, the job's PSKs
  # (identity versions 1 and 0) go into the .nvme keyring, and the kernel
  # host connected by the same job reads over TLS (tlshd on both sides).
  . /files/tls-keys.sh
  set -- $(echo "$TLS_HOSTS" | grep ':tls-sha256 ')
  thost=$1 tkey=$3
  sed 's/${MPNVME_PORT2}/4434/; s/${MPNVME_PORT1}/4433/; s/nvmet-lab/tls/' $JOB > /tmp/tls.fio
  printf 'hostnqn=%s\ntls=1\ntls_key=%s\ntransport=tcp\n' "$thost" "$tkey" >> /tmp/tls.fio
  mkdir /sys/kernel/config/nvmet/ports/99
  has_tls=0
  [ -e /sys/kernel/config/nvmet/ports/99/addr_tsas ] && has_tls=1
  rmdir /sys/kernel/config/nvmet/ports/99
  has_tls_tools=0
  [ -f /files/tls-tools.tar.gz ] && tls_tools && has_tls_tools=1
  if [ $has_tls = 0 ]; then
    expect_fail "this kernel's nvmet has no TLS" $NV apply --job /tmp/tls.fio
  elif [ $has_tls_tools = 0 ]; then
    bad "no TLS userland in the guest (MPNVME_LAB_TLS=1)"
  elif out=$($NV apply --job /tmp/tls.fio 2>&1); then
    tp=$(grep -l 4433 /sys/kernel/config/nvmet/ports/*/addr_trsvcid | head -1 | xargs dirname)
    [ "$(cat $tp/addr_tsas)" = tls1.3 ] && [ "$(cat $tp/addr_treq)" = required ] &&
      ok "apply --job: the job's ports require TLS 1.3" || bad "TLS port: tsas $(cat $tp/addr_tsas) treq $(cat $tp/addr_treq)"
    grep -q "psk .*NVMe1R01 $thost nqn.2026-11.io.mpnvme:tls " /proc/keys && grep -q "psk .*NVMe0R01 $thost nqn.2026-11.io.mpnvme:tls" /proc/keys &&
      ok "apply --job: the job's PSKs (identity versions 1 and 0) in the .nvme keyring" || bad "keyring: $(grep psk /proc/keys | cut -c1-120)"
    connect_reads /tmp/tls.fio "the kernel host reads over TLS"
  else
    bad "apply --job with tls=1: $out"
  fi

  $NV save /tmp/saved.json && ok "save" || bad "save"
  [ "$(stat -c %a /tmp/saved.json)" = 600 ] && ok "save: a file only its owner reads" || bad "save: mode $(stat -c %a /tmp/saved.json)"
  if [ $has_auth = 1 ]; then
    grep -q '"dhchap_key"' /tmp/saved.json && ok "save: the host's keys" || bad "save: no dhchap_key in the saved file"
  fi
  if [ $has_tls = 1 ]; then
    grep -q '"tsas": "tls1.3"' /tmp/saved.json && ok "save: the TLS ports' addr_tsas" || bad "save: no tsas in the saved file"
  fi
  $NV clear && [ -z "$(ls /sys/kernel/config/nvmet/subsystems)" ] && [ -z "$(ls /sys/kernel/config/nvmet/ports)" ] && ok "clear" || bad "clear"
  if out=$($NV restore /tmp/saved.json 2>&1); then
    $NV save /tmp/restored.json && cmp -s /tmp/saved.json /tmp/restored.json &&
      ok "save/clear/restore round trip is identical" || bad "restored config differs: $(diff /tmp/saved.json /tmp/restored.json | head -8 | tr '\n' ' ')"
  else
    bad "restore: $out"
  fi
  grep -q '"trtype": "tcp"' /tmp/saved.json && grep -q '"allow_any_host": "1"' /tmp/saved.json && ok "nvmetcli layout" || bad "saved JSON layout"
  # A file in the layout nvmetcli writes (extra attributes it saves included).
  if out=$($NV restore /files/nvmetcli-example.json 2>&1); then
    s=/sys/kernel/config/nvmet/subsystems/nqn.2026-11.io.mpnvme:nvmetcli
    [ "$(cat $s/namespaces/1/enable)" = 1 ] && [ "$(tr -d " " < $s/attr_serial)" = 8a5b4a5b1c2d3e4f ] &&
      [ "$(cat /sys/kernel/config/nvmet/ports/7/addr_trsvcid)" = 4430 ] && [ -L /sys/kernel/config/nvmet/ports/7/subsystems/nqn.2026-11.io.mpnvme:nvmetcli ] &&
      ok "nvmetcli-format file restored" ||
      bad "nvmetcli restore incomplete: enable=$(cat $s/namespaces/1/enable) serial=$(cat $s/attr_serial) port7=$(cat /sys/kernel/config/nvmet/ports/7/addr_trsvcid) links=$(ls /sys/kernel/config/nvmet/ports/7/subsystems)"
  else
    bad "restore nvmetcli example: $out"
  fi
  $NV clear --remove-ram-files && [ -z "$(ls /dev/shm/mpnvme-nvmet)" ] && ok "clear --remove-ram-files" || bad "RAM files left"
  if [ $has_tls = 0 ]; then
    # A saved TLS port does not come back in plaintext on a kernel without TLS.
    printf '{"ports": [{"portid": 9, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "0.0.0.0", "trsvcid": "4439", "tsas": "tls1.3", "treq": "required"}}]}\n' >/tmp/tls-port.json
    expect_fail "addr_tsas" $NV restore /tmp/tls-port.json
  fi
  echo "TK done"
}
tk > /dev/console 2>&1 &
