#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# One engine run against nvmet's DH-HMAC-CHAP subsystem in the qemu lab.
#   auth-case.sh STATEDIR EXPECT NAME HOST KEY CTRLKEY [fio options...]
# HOST: sha256, sha384 or sha512, the host of auth-keys.sh (its NQN, and
# the hash and DH group nvmet requires of it); KEY and CTRLKEY: right, wrong
# or none, the host's and the controller's secret the engine is given,
# through dhchap_secret_file= (mode 600) or, as inline-right,
# dhchap_secret=. EXPECT as case.sh. Whatever the outcome, neither
# secret may appear in fio's output, its JSON or this test's output.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state=$1 expect=$2 name=$3 host=$4 key=$5 ctrl=$6
shift 6
source "$here/../shared/auth-keys.sh"
line=$(grep -m1 ":host-$host " <<<"$AUTH_HOSTS") || { echo "no host $host in auth-keys.sh"; exit 2; }
read -r hostnqn host_key ctrl_key _ <<<"$line"
dir=$state/keys-$name
mkdir -p "$dir" && chmod 700 "$dir"
args=(--hostnqn="$hostnqn" --subnqn="$AUTH_SUBNQN")
given=()
secret() { # OPTION right|wrong|inline-right|none RIGHT WRONG
  local v
  case $2 in
    none) return ;;
    right | inline-right) v=$3 ;;
    wrong) v=$4 ;;
    *) echo "bad key choice $2"; exit 2 ;;
  esac
  given+=("$v")
  if [[ $2 == inline-right ]]; then
    args+=("--$1=$v")
  else
    (umask 077 && echo "$v" >"$dir/$1")
    args+=("--$1_file=$dir/$1")
  fi
}
secret dhchap_secret "$key" "$host_key" "$AUTH_WRONG_KEY"
[[ $ctrl == none || $ctrl_key != - ]] || { echo "host $host has no controller key"; exit 2; }
secret dhchap_ctrl_secret "$ctrl" "$ctrl_key" "$AUTH_WRONG_CTRL_KEY"
out=$("$here/case.sh" "$state" "$expect" "$name" "${args[@]}" "$@" 2>&1)
rc=$?
for v in "${given[@]}"; do
  b64=${v:10:24} # the key's text; a secret in any form fails the test
  if grep -qF -- "$b64" <<<"$out" || grep -qF -- "$b64" "$state/$name.log" "$state/$name.json" 2>/dev/null; then
    echo "FAIL: a secret appears in the output or the logs"
    exit 1
  fi
done
echo "$out"
exit $rc
