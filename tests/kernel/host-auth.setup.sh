# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the kernel host's DH-HMAC-CHAP test: the Linux nvme-tcp
# host connects to mpnvme-target on the machine (10.0.2.2, port mp.port)
# with the secrets of /files/auth-keys.sh: unidirectional (verified write
# and read), bidirectional, without a secret, and with the wrong one.
for kv in $(cat /proc/cmdline); do
  case $kv in mp.port=*) PORT=${kv#*=} ;; mp.nqn=*) NQN=${kv#*=} ;; esac
done
. /files/auth-keys.sh
host_of() { echo "$AUTH_HOSTS" | grep ":host-$1 "; }
scenario() {
  say() { echo "HOSTTEST $*"; }
  set -- $(host_of sha256); uni_nqn=$1 uni_key=$2
  set -- $(host_of sha512); bidi_nqn=$1 bidi_key=$2 bidi_ctrl=$3
  connect() { # NAME HOSTNQN [OPTIONS]
    # The kernel keeps one host ID per host NQN: derive it from the NQN.
    local name=$1 hostnqn=$2 id
    id=$(echo -n "$hostnqn" | md5sum | sed -E 's/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/\1-\2-\3-\4-\5/')
    echo "nqn=$NQN,transport=tcp,traddr=10.0.2.2,trsvcid=$PORT,hostnqn=$hostnqn,hostid=$id,ctrl_loss_tmo=0${3:+,$3}" \
      > /dev/nvme-fabrics 2>/dev/null && say "$name connected" || say "$name refused: $(dmesg | grep -a nvme | tail -2 | tr '\n' ' ')"
  }
  device() { ls /sys/class/nvme-subsystem/*/ 2>/dev/null | grep -m1 '^nvme[0-9]*n1$'; }
  drop() { for c in /sys/class/nvme/nvme*; do echo 1 > $c/delete_controller; done 2>/dev/null; sleep 1; }
  connect uni "$uni_nqn" "dhchap_secret=$uni_key"
  sleep 2
  dev=/dev/$(device)
  yes mpnvme-auth | head -c 8388608 | dd of=$dev bs=1M oflag=direct 2>/dev/null || say "uni write-failed"
  say "uni md5 $(dd if=$dev bs=1M count=8 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  drop
  connect bidi "$bidi_nqn" "dhchap_secret=$bidi_key,dhchap_ctrl_secret=$bidi_ctrl"
  sleep 2
  say "bidi device $(device)"
  drop
  connect nokey "$uni_nqn"
  drop
  connect wrong "$uni_nqn" "dhchap_secret=$AUTH_WRONG_KEY"
  drop
  say "done"
}
scenario &
