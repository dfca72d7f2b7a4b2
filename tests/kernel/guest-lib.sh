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
