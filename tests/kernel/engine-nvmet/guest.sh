# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the engine tests: one subsystem, two namespaces, one port.
#   nsid 1: brd RAM disk, 512-byte LBAs, supports discard
#   nsid 2: file on tmpfs, 4096-byte LBAs
nqn=nqn.2026-11.io.mpnvme:kernel-lab
nvmet_subsystem $nqn || return 1
nvmet_namespace $nqn 1 /dev/ram0 || return 1
nvmet_namespace $nqn 2 "$(nvmet_file 64 2)" || return 1
nvmet_port 1 4420 $nqn || return 1
# DH-HMAC-CHAP: a subsystem only the hosts of auth-keys.sh may use, each
# with its key, hash and DH group, on the same port.
. /files/auth-keys.sh
nvmet_closed_subsystem $AUTH_SUBNQN || return 1
nvmet_namespace $AUTH_SUBNQN 1 "$(nvmet_file 64 3)" || return 1
echo "$AUTH_HOSTS" | while read -r host key ctrl hash group; do
  [ -n "$host" ] || continue
  nvmet_auth_host $AUTH_SUBNQN "$host" "$key" "$ctrl" "$hash" "$group" || { echo "auth host $host failed"; exit 1; }
done || return 1
ln -s /sys/kernel/config/nvmet/subsystems/$AUTH_SUBNQN /sys/kernel/config/nvmet/ports/1/subsystems/$AUTH_SUBNQN || return 1
# TLS: a subsystem on a port that requires TLS 1.3, tlshd doing nvmet's
# handshakes, the hosts of tls-keys.sh with PSKs that nvme-cli derived
# (identity versions 0 and 1, each host's derivation) in the .nvme keyring.
. /files/tls-keys.sh
tls_tools || return 1
nvmet_subsystem $TLS_SUBNQN || return 1
nvmet_namespace $TLS_SUBNQN 1 "$(nvmet_file 64 4)" || return 1
echo "$TLS_HOSTS" | while read -r host derivation key; do
  [ -n "$host" ] || continue
  tls_psk "$host" $TLS_SUBNQN "$key" 1 $derivation && tls_psk "$host" $TLS_SUBNQN "$key" 0 $derivation ||
    { echo "tls psk for $host failed"; exit 1; }
done || return 1
nvmet_tls_port 2 $TLS_PORT $TLS_SUBNQN || return 1
