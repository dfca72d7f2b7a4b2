# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the kernel host's TLS test: the Linux nvme-tcp host, with
# tlshd doing its handshakes, connects to mpnvme-target on the machine
# (10.0.2.2, port mp.port) over TLS: with PSKs nvme-cli 2.16 inserted
# (RFC 8446 derivation; verified write and read), with PSKs Debian 13's
# nvme-cli inserted (libnvme's older derivation), without TLS, and with a
# key the target does not have.
mp_args
. /files/tls-keys.sh
tls_tools || return 1
host_of() { echo "$TLS_HOSTS" | grep ":tls-$1 "; }
scenario() {
  set -- $(host_of sha256); rfc_nqn=$1 rfc_key=$3
  set -- $(host_of compat); compat_nqn=$1 compat_key=$3
  wrong_nqn=nqn.2026-12.io.mpnvme:tls-unknown
  tls_psk "$rfc_nqn" "$NQN" "$rfc_key" 1 rfc >/dev/null && tls_psk "$compat_nqn" "$NQN" "$compat_key" 1 compat >/dev/null &&
    tls_psk "$wrong_nqn" "$NQN" "$TLS_WRONG_KEY" 1 rfc >/dev/null || say "key insertion failed"
  host_connect rfc "$rfc_nqn" tls
  wait_until 30 "rfc device" host_device_ready
  dev=/dev/$(host_device)
  yes mpnvme-tls | head -c 8388608 | dd of=$dev bs=1M oflag=direct 2>/dev/null || say "rfc write-failed"
  say "rfc md5 $(dd if=$dev bs=1M count=8 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  host_drop
  host_connect compat "$compat_nqn" tls
  wait_until 30 "compat device" host_device_ready
  say "compat md5 $(dd if=/dev/$(host_device) bs=1M count=8 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  host_drop
  host_connect plain "$rfc_nqn"
  host_drop
  host_connect wrong "$wrong_nqn" tls
  host_drop
  say "done"
}
scenario &
