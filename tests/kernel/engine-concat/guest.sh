# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the engine's concatenation test: nvmet serves a port with
# TLS optional (tlshd doing its handshakes) and a subsystem whose hosts
# have only DH-HMAC-CHAP keys (auth-keys.sh); the engine (fio, inside the
# guest) connects with concat=1: verified I/O with kernel TLS and with
# user-space records, a wrong key, and a host nvmet gives the NULL group.
. /files/auth-keys.sh
tls_tools || return 1
nvmet_closed_subsystem $CONCAT_SUBNQN || return 1
nvmet_namespace $CONCAT_SUBNQN 1 "$(nvmet_file 64 1)" || return 1
echo "$AUTH_HOSTS" | while read -r host key ctrl hash group; do
  [ -n "$host" ] || continue
  nvmet_auth_host $CONCAT_SUBNQN "$host" "$key" - "$hash" "$group" || { echo "auth host $host failed"; exit 1; }
done || return 1
nvmet_tls_port 1 4420 $CONCAT_SUBNQN "not required" || return 1
mkdir -p /tmp/keys && chmod 700 /tmp/keys
host_of() { echo "$AUTH_HOSTS" | grep ":host-$1 "; }
run() { # NAME HOST right|wrong [fio options...]
  local name=$1 host key
  host=$(host_of "$2" | cut -d' ' -f1) key=$(host_of "$2" | cut -d' ' -f2)
  [ "$3" = wrong ] && key=$AUTH_WRONG_KEY
  shift 3
  echo "$key" >/tmp/keys/$name && chmod 600 /tmp/keys/$name
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 LD_PRELOAD=$(cat /files/preload) /usr/local/bin/fio --name=$name \
    --ioengine=external:/usr/local/bin/fio-mpnvme.so --traddr=127.0.0.1 --trsvcid=4420 --transport=tcp \
    --subnqn=$CONCAT_SUBNQN --hostnqn="$host" --dhchap_secret_file=/tmp/keys/$name --concat=1 --log_level=info \
    --output-format=terse "$@" >/tmp/$name.out 2>&1
  echo "CONCAT $name rc $?"
  grep -a 'transport in effect\|error\|association up' /tmp/$name.out | sed "s/^/CONCAT $name /"
}
V="--rw=randrw --bs=16k --iodepth=8 --size=8m --verify=crc32c --verify_fatal=1 --do_verify=1"
scenario() {
  wait_until 30 tlshd grep -q 'priority string' /tmp/tlshd.log || { echo "CONCAT done"; return 1; }
  run ktls sha384 right $V --tls_mode=ktls --dhchap_hash=sha256
  run user sha384 right $V --tls_mode=user --dhchap_hash=sha256
  # SHA-384: nvmet's tlshd (1.4 on 7.x) takes SHA-384 PSK binders.
  run sha384 sha384 right $V --tls_mode=user --dhchap_hash=sha384
  run wrong sha384 wrong --rw=read --size=1m --ctrl_loss_tmo=0
  run null sha256 right --rw=read --size=1m --ctrl_loss_tmo=0
  dmesg | grep -a 'nvmet' | tail -20 | sed 's/^/CONCAT nvmet /'
  echo "CONCAT done"
}
scenario >/dev/console 2>&1 &
