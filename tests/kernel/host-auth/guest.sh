# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the kernel host's DH-HMAC-CHAP test: the Linux nvme-tcp
# host connects to mpnvme-target on the machine (10.0.2.2, port mp.port)
# with the secrets of /files/auth-keys.sh: unidirectional (verified write
# and read, re-authenticated, read again), bidirectional, without a
# secret, and with the wrong one.
mp_args
. /files/auth-keys.sh
host_of() { echo "$AUTH_HOSTS" | grep ":host-$1 "; }
admin_authentications() { dmesg | grep -ac 'qid 0: authenticated with hash'; }
admin_authenticated_since() { [ "$(admin_authentications)" -gt "$1" ]; }
scenario() {
  set -- $(host_of sha256); uni_nqn=$1 uni_key=$2
  set -- $(host_of sha512); bidi_nqn=$1 bidi_key=$2 bidi_ctrl=$3
  host_connect uni "$uni_nqn" "dhchap_secret=$uni_key"
  wait_until 30 "uni device" host_device_ready
  dev=/dev/$(host_device)
  yes mpnvme-auth | head -c 8388608 | dd of=$dev bs=1M oflag=direct 2>/dev/null || say "uni write-failed"
  say "uni md5 $(dd if=$dev bs=1M count=8 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  # Re-authentication: writing the secret makes the host authenticate
  # every queue again; the data must read back afterwards. The host logs
  # each admin queue's authentication: the next one is the re-authentication.
  before=$(admin_authentications)
  for c in /sys/class/nvme/nvme*; do echo "$uni_key" >$c/dhchap_secret && say "uni reauth requested $(basename $c)"; done
  wait_until 60 "uni reauth" admin_authenticated_since "$before"
  say "uni after-reauth md5 $(dd if=$dev bs=1M count=8 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  say "uni state $(cat /sys/class/nvme/nvme*/state | tr '\n' ' ')"
  host_drop
  host_connect bidi "$bidi_nqn" "dhchap_secret=$bidi_key,dhchap_ctrl_secret=$bidi_ctrl"
  wait_until 30 "bidi device" host_device_ready
  say "bidi device $(host_device)"
  host_drop
  host_connect nokey "$uni_nqn"
  host_drop
  host_connect wrong "$uni_nqn" "dhchap_secret=$AUTH_WRONG_KEY"
  host_drop
  say "done"
}
scenario &
