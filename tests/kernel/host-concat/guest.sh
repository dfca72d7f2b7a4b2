# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the kernel host's concatenation test: the Linux nvme-tcp
# host with only a DH-HMAC-CHAP key (concat: nvme connect --concat),
# tlshd doing its handshakes on the PSK the kernel generated, connects to
# mpnvme-target on the machine (10.0.2.2, port mp.port): verified write and
# read, a controller reset that generates another PSK, a SHA-384
# transaction, and a key the target does not have.
mp_args
. /files/auth-keys.sh
tls_tools || return 1
host_of() { echo "$AUTH_HOSTS" | grep ":host-$1 "; }
controller() { ls -d /sys/class/nvme/nvme* 2>/dev/null | head -1; }
tls_key_of() { cat "$(controller)/tls_key" 2>/dev/null; }
scenario() {
  set -- $(host_of sha256); h256=$1 k256=$2
  set -- $(host_of sha384); h384=$1 k384=$2
  host_connect sha256 "$h256" "dhchap_secret=$k256,concat"
  wait_until 30 "sha256 device" host_device_ready
  dev=/dev/$(host_device)
  say "sha256 tls_key $(tls_key_of)"
  yes mpnvme-concat | head -c 8388608 | dd of=$dev bs=1M oflag=direct 2>/dev/null || say "sha256 write-failed"
  say "sha256 md5 $(dd if=$dev bs=1M count=8 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  # A reset revokes the generated key and authenticates again (blktests' nvme/063).
  echo 1 >"$(controller)/reset_controller"
  wait_until 30 "reset device" host_device_ready
  say "reset tls_key $(tls_key_of)"
  say "reset md5 $(dd if=/dev/$(host_device) bs=1M count=8 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  host_drop
  # tlshd 1.0 with Debian 13's GnuTLS may fail SHA-384 PSK handshakes
  # (run.sh tells which happened); read only from a controller that came up.
  host_connect sha384 "$h384" "dhchap_secret=$k384,concat"
  if [ -n "$(controller)" ]; then
    wait_until 30 "sha384 device" host_device_ready
    say "sha384 md5 $(dd if=/dev/$(host_device) bs=1M count=8 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
  fi
  host_drop
  host_connect wrong "$h256" "dhchap_secret=$AUTH_WRONG_KEY,concat"
  host_drop
  say "done"
}
scenario &
