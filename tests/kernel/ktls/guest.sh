# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the kernel-TLS test: the engine (fio) and mpnvme-target run
# inside the guest, whose kernel has the tls module. nvmet serves a TLS
# port (tlshd doing its handshakes, the PSK nvme-cli 2.16 inserted); the
# engine hands its records to kernel TLS (tls_mode=ktls) and verifies I/O
# there; then mpnvme-target, which hands its accepted sockets to the
# kernel, is verified against the engine's user-space records, and against
# the engine's kernel TLS.
. /files/tls-keys.sh
tls_tools || return 1
set -- $(echo "$TLS_HOSTS" | grep ':tls-sha256 ')
HOST=$1 KEY=$3
nvmet_subsystem $TLS_SUBNQN || return 1
nvmet_namespace $TLS_SUBNQN 1 "$(nvmet_file 64 1)" || return 1
tls_psk "$HOST" $TLS_SUBNQN "$KEY" 1 rfc >/dev/null || return 1
nvmet_tls_port 1 4430 $TLS_SUBNQN || return 1
mkdir -p /tmp/keys && echo "$KEY" >/tmp/keys/psk && chmod 600 /tmp/keys/psk
/usr/local/bin/mpnvme-target --transport tcp --listen 127.0.0.1:4431:tls --subnqn $TLS_SUBNQN --ns ram:64m \
  --tls-key "$HOST=@/tmp/keys/psk" --log-level info >/tmp/target.log 2>&1 &
run() { # NAME PORT MODE
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 LD_PRELOAD=$(cat /files/preload) /usr/local/bin/fio --name=$1 --ioengine=external:/usr/local/bin/fio-mpnvme.so \
    --traddr=127.0.0.1 --trsvcid=$2 --transport=tcp --subnqn=$TLS_SUBNQN --hostnqn="$HOST" --tls=1 --tls_key_file=/tmp/keys/psk \
    --tls_mode=$3 --rw=randrw --bs=16k --iodepth=4 --size=4m --verify=crc32c --verify_fatal=1 --do_verify=1 --log_level=info \
    --output-format=terse >/tmp/$1.out 2>&1
  rc=$?
  echo "KTLS $1 rc $rc"
  grep -a 'transport in effect\|error' /tmp/$1.out | sed "s/^/KTLS $1 /"
  [ $rc = 0 ] || tail -5 /tmp/$1.out | sed "s/^/KTLS $1 /"
}
scenario() {
  # Both servers up before the first client: the target's ready line, and
  # tlshd's start finished (its priority strings) for nvmet's handshakes.
  wait_until 30 target-ready grep -q 'mpnvme-target: ready' /tmp/target.log &&
    wait_until 30 tlshd grep -q 'priority string' /tmp/tlshd.log || { echo "KTLS done"; return 1; }
  run nvmet 4430 ktls
  run target-user 4431 user
  run target-ktls 4431 ktls
  grep -a 'TLS 1.3' /tmp/target.log | sed 's/^/KTLS target /'
  echo "KTLS done"
}
scenario >/dev/console 2>&1 &
