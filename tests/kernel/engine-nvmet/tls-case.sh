#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# One engine run against nvmet's TLS port in the qemu lab (tlshd in the
# guest does nvmet's handshake with the PSK nvme-cli put into the keyring).
#   tls-case.sh STATEDIR EXPECT NAME HOST KEY [fio options...]
# HOST: sha256, sha384 or compat, a host of tls-keys.sh; KEY: right, wrong (a key
# nvmet does not have) or none (no TLS: a plaintext host). The key goes in
# through tls_key_file= (mode 600); --tls_identity=v0 in the options stands
# for that host's version 0 identity. EXPECT as case.sh. Whatever
# the outcome, no key may appear in fio's output or this test's output.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state=$1 expect=$2 name=$3 host=$4 key=$5
shift 5
source "$here/../shared/tls-keys.sh"
line=$(grep -m1 ":tls-$host " <<<"$TLS_HOSTS") || { echo "no host $host in tls-keys.sh"; exit 2; }
read -r hostnqn _ host_key <<<"$line"
port=$(cat "$state/port-$TLS_PORT") || { echo "lab not running with TLS ($state)"; exit 1; }
dir=$state/keys-$name
mkdir -p "$dir" && chmod 700 "$dir"
args=(--trsvcid="$port" --hostnqn="$hostnqn" --subnqn="$TLS_SUBNQN")
case $key in
  right) (umask 077 && echo "$host_key" >"$dir/psk") ;;
  wrong) (umask 077 && echo "$TLS_WRONG_KEY" >"$dir/psk") ;;
  none) ;;
  *) echo "bad key choice $key"; exit 2 ;;
esac
[[ $key == none ]] || args+=(--tls=1 --tls_key_file="$dir/psk")
hh=$([[ $host == sha384 ]] && echo 02 || echo 01) # the identity's hash: the key's
for a in "$@"; do
  [[ $a == --tls_identity=v0 ]] && a="--tls_identity=NVMe0R$hh $hostnqn $TLS_SUBNQN"
  args+=("$a")
done
out=$("$here/case.sh" "$state" "$expect" "$name" "${args[@]}" 2>&1)
rc=$?
for v in "$host_key" "$TLS_WRONG_KEY"; do
  if grep -qF -- "${v:16:24}" <<<"$out" || grep -qF -- "${v:16:24}" "$state/$name.log" "$state/$name.json" 2>/dev/null; then
    echo "FAIL: a key appears in the output or the logs"
    exit 1
  fi
done
echo "$out"
exit $rc
