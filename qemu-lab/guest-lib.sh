# SPDX-License-Identifier: GPL-2.0-only
# Helpers for the guest's /setup.sh (busybox sh).

# nvmet_subsystem NQN: create a subsystem that allows any host.
nvmet_subsystem() {
  local s=/sys/kernel/config/nvmet/subsystems/$1
  mkdir -p "$s" && echo 1 > "$s/attr_allow_any_host"
}

# nvmet_namespace NQN NSID DEVICE: add and enable a namespace.
nvmet_namespace() {
  local n=/sys/kernel/config/nvmet/subsystems/$1/namespaces/$2
  mkdir -p "$n" && echo -n "$3" > "$n/device_path" && echo 1 > "$n/enable"
}

# nvmet_file MB: a file on tmpfs for a 4096-byte-LBA namespace; prints its path.
nvmet_file() {
  mkdir -p /tmp/ns && dd if=/dev/zero of=/tmp/ns/file$2 bs=1M count=0 seek="$1" 2>/dev/null && echo /tmp/ns/file$2
}

# nvmet_port ID TRSVCID NQN [INLINE]: a TCP port on all addresses serving NQN.
nvmet_port() {
  local p=/sys/kernel/config/nvmet/ports/$1
  mkdir -p "$p"
  echo tcp > "$p/addr_trtype"
  echo ipv4 > "$p/addr_adrfam"
  echo 0.0.0.0 > "$p/addr_traddr"
  echo "$2" > "$p/addr_trsvcid"
  [ -n "$4" ] && echo "$4" > "$p/param_inline_data_size"
  ln -s "/sys/kernel/config/nvmet/subsystems/$3" "$p/subsystems/$3"
}

# nvmet_closed_subsystem NQN: a subsystem that admits only its allowed hosts.
nvmet_closed_subsystem() {
  local s=/sys/kernel/config/nvmet/subsystems/$1
  mkdir -p "$s" && echo 0 > "$s/attr_allow_any_host"
}

# nvmet_auth_host SUBNQN HOSTNQN KEY CTRLKEY|- HASH DHGROUP: a host allowed
# on the subsystem only with DH-HMAC-CHAP (bidirectional with CTRLKEY).
nvmet_auth_host() {
  local h=/sys/kernel/config/nvmet/hosts/$2
  mkdir -p "$h" || return 1
  echo -n "$3" > "$h/dhchap_key" || return 1
  [ "$4" = - ] || echo -n "$4" > "$h/dhchap_ctrl_key" || return 1
  echo -n "$5" > "$h/dhchap_hash" && echo -n "$6" > "$h/dhchap_dhgroup" || return 1
  ln -s "$h" "/sys/kernel/config/nvmet/subsystems/$1/allowed_hosts/$2"
}

# tls_tool SUITE BINARY ARGS...: tlshd or nvme-cli of a Debian suite
# (tls-tools.sh: trixie or unstable), with that suite's loader and libraries.
tls_tool() {
  local s=$1 b=$2
  shift 2
  /opt/tls/$s/lib/ld-linux-x86-64.so.2 --library-path /opt/tls/$s/lib "/opt/tls/$s/bin/$b" "$@"
}

# tlshd_suite: whose tlshd suits this kernel (tls-tools.sh): Debian 13's
# 1.0 on 6.x, unstable's 1.4 (SHA-384 PSKs too) on 7.x and later.
tlshd_suite() { case $(uname -r) in [1-6].*) echo trixie ;; *) echo unstable ;; esac; }

# tls_tools: unpack the TLS userland and start tlshd, which runs the TLS
# handshakes of nvmet and of the kernel host with the PSKs of the .nvme
# keyring. It logs to the console and to /tmp/tlshd.log (its priority
# strings, the last lines of its start, say it is up).
tls_tools() {
  mkdir -p /opt/tls && tar -C /opt/tls -xzf /files/tls-tools.tar.gz || return 1
  printf '[debug]\nloglevel=%s\ntls=%s\nnl=0\n[authenticate]\nkeyrings=.nvme\n[authenticate.client]\n[authenticate.server]\n' \
    "${TLSHD_LOGLEVEL:-1}" "${TLSHD_TLS_DEBUG:-0}" >/etc/tlshd.conf
  tls_tool "$(tlshd_suite)" tlshd -c /etc/tlshd.conf -s 2>&1 | tee /tmp/tlshd.log >/dev/console &
}

# tls_psk HOSTNQN SUBNQN KEY VERSION rfc|compat: nvme-cli derives the
# retained and the TLS PSK of KEY (NVMeTLSkey-1:...) and inserts it into
# the .nvme keyring under the identity of VERSION (0 or 1), as `nvme
# connect --tls-key` does: unstable's 2.16 with RFC 8446's HkdfLabel
# (rfc), Debian 13's 2.13 with libnvme's older derivation (compat).
tls_psk() {
  local suite=unstable
  [ "$5" = compat ] && suite=trixie
  tls_tool $suite nvme check-tls-key --keydata="$3" --hostnqn="$1" --subsysnqn="$2" --identity="$4" --insert
}

# nvmet_tls_port ID TRSVCID NQN [TREQ]: a port that requires TLS 1.3
# (nvmet hands the handshake to tlshd); TREQ "not required" takes plaintext
# too (secure channel concatenation's first admin queue).
nvmet_tls_port() {
  local p=/sys/kernel/config/nvmet/ports/$1
  mkdir -p "$p"
  echo tcp >"$p/addr_trtype"
  echo ipv4 >"$p/addr_adrfam"
  echo 0.0.0.0 >"$p/addr_traddr"
  echo "$2" >"$p/addr_trsvcid"
  echo tls1.3 >"$p/addr_tsas" || return 1
  echo "${4:-required}" >"$p/addr_treq" || return 1
  ln -s "/sys/kernel/config/nvmet/subsystems/$3" "$p/subsystems/$3"
}

# mp_args: PORT and NQN from the kernel command line (mp.port=, mp.nqn=:
# where the kernel-host tests' run.sh started mpnvme-target).
mp_args() {
  local kv
  for kv in $(cat /proc/cmdline); do
    case $kv in mp.port=*) PORT=${kv#*=} ;; mp.nqn=*) NQN=${kv#*=} ;; esac
  done
}

# The kernel-host tests' steps against mpnvme-target on the machine
# (10.0.2.2, port $PORT, subsystem $NQN), reported as "HOSTTEST ..." lines.
say() { echo "HOSTTEST $*"; }
# host_connect NAME HOSTNQN [OPTIONS]: connect as that host ("NAME connected"
# or "NAME refused: why"); the kernel keeps one host ID per host NQN, so the
# ID is derived from the NQN.
host_connect() {
  local name=$1 hostnqn=$2 id
  id=$(echo -n "$hostnqn" | md5sum | sed -E 's/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/\1-\2-\3-\4-\5/')
  echo "nqn=$NQN,transport=tcp,traddr=10.0.2.2,trsvcid=$PORT,hostnqn=$hostnqn,hostid=$id,ctrl_loss_tmo=0${3:+,$3}" \
    >/dev/nvme-fabrics 2>/dev/null && say "$name connected" || say "$name refused: $(dmesg | grep -a nvme | tail -2 | tr '\n' ' ')"
}
# The namespace block device of the connected subsystem, e.g. nvme0n1.
host_device() { ls /sys/class/nvme-subsystem/*/ 2>/dev/null | grep -m1 '^nvme[0-9]*n1$'; }
# wait_until SECONDS WHAT CMD...: run CMD every 0.2 s until it succeeds;
# after SECONDS say "WHAT timed-out after SECONDS s" and return 1. The
# steps wait on what they need, never for a fixed time.
wait_until() {
  local limit=$(($1 * 5)) what=$2 i=0
  shift 2
  until "$@" 2>/dev/null; do
    i=$((i + 1))
    [ $i -ge $limit ] && { say "$what timed-out after $((limit / 5)) s"; return 1; }
    sleep 0.2
  done
}
# The namespace's block device is there and reads.
host_device_ready() {
  local d
  d=$(host_device) && [ -b "/dev/$d" ] && dd if="/dev/$d" of=/dev/null bs=4k count=1 iflag=direct 2>/dev/null
}
# No controller left.
host_none() { ! ls -d /sys/class/nvme/nvme* >/dev/null 2>&1; }
# Disconnect every controller, and wait until they are gone.
host_drop() {
  for c in /sys/class/nvme/nvme*; do echo 1 >$c/delete_controller; done 2>/dev/null
  wait_until 30 drop host_none
}
