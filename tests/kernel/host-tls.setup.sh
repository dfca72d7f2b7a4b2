# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the kernel host's TLS test: the Linux nvme-tcp host, with
# tlshd doing its handshakes, connects to mpnvme-target on the machine
# (10.0.2.2, port mp.port) over TLS: with PSKs nvme-cli 2.16 inserted
# (RFC 8446 derivation; verified write and read), with PSKs Debian 13's
# nvme-cli inserted (libnvme's older derivation), without TLS, and with a
# key the target does not have.
for kv in $(cat /proc/cmdline); do
  case $kv in mp.port=*) PORT=${kv#*=} ;; mp.nqn=*) NQN=${kv#*=} ;; esac
done
. /files/tls-keys.sh
tls_tools || return 1
host_of() { echo "$TLS_HOSTS" | grep ":tls-$1 "; }
scenario() {
  say() { echo "HOSTTEST $*"; }
  set -- $(host_of sha256); rfc_nqn=$1 rfc_key=$3
  set -- $(host_of compat); compat_nqn=$1 compat_key=$3
  wrong_nqn=nqn.2026-12.io.mpnvme:tls-unknown
  tls_psk "$rfc_nqn" "$NQN" "$rfc_key" 1 rfc >/dev/null && tls_psk "$compat_nqn" "$NQN" "$compat_key" 1 compat >/dev/null &&
    tls_psk "$wrong_nqn" "$NQN" "$TLS_WRONG_KEY" 1 rfc >/dev/null || say "key insertion failed"
  connect() { # NAME HOSTNQN [OPTIONS]
    # The kernel keeps one host ID per host NQN: derive it from the NQN.
    local name=$1 hostnqn=$2 id
    id=$(echo -n "$hostnqn" | md5sum | sed -E 's/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/\1-\2-\3-\4-\5/')
    echo "nqn=$NQN,transport=tcp,traddr=10.0.2.2,trsvcid=$PORT,hostnqn=$hostnqn,hostid=$id,ctrl_loss_tmo=0${3:+,$3}" \
      > /dev/nvme-fabrics 2>/dev/null && say "$name connected" || say "$name refused"
  }
  device() { ls /sys/class/nvme-subsystem/*/ 2>/dev/null | grep -m1 '^nvme[0-9]*n1$'; }
  drop() { for c in /sys/class/nvme/nvme*; do echo 1 > $c/delete_controller; done 2>/dev/null; sleep 1; }
  connect rfc "$rfc_nqn" tls
  sleep 2
  dev=/dev/$(device)
  yes mpnvme-tls | head -c 8388608 | dd of=$dev bs=1M oflag=direct 2>/dev/null || say "rfc write-failed"
  say "rfc md5 $(dd if=$dev bs=1M count=8 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  drop
  connect compat "$compat_nqn" tls
  sleep 2
  say "compat md5 $(dd if=/dev/$(device) bs=1M count=8 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  drop
  connect plain "$rfc_nqn"
  drop
  connect wrong "$wrong_nqn" tls
  drop
  say "done"
}
scenario &
