#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Install every build/test dependency from Debian packages and obtain the fio
# source matching the installed fio binary (Debian ships no fio headers).
# Idempotent: quiet and fast when everything is already present.
#   FIO_SRC=/path   use an existing configured fio source tree instead
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
depdir="$root/.deps"
mkdir -p "$depdir"

packages=(
  build-essential cmake pkg-config dpkg-dev clang clang-format libclang-rt-14-dev
  fio liburing-dev libnvme-dev libjson-c-dev libcmocka-dev libspdlog-dev libfmt-dev
  libisal-dev nlohmann-json3-dev libcli11-dev libssl-dev libkeyutils-dev
  iproute2 nftables kmod busybox-static xz-utils cpio qemu-system-x86 ethtool
  python3 python3-matplotlib jq man-db nvme-cli openssl
)

# Another apt (unattended-upgrades on a fresh machine) may hold the dpkg
# lock: wait for it up to 10 minutes instead of failing at once (apt says
# "Waiting for cache lock ... held by process N" on stderr meanwhile).
apt_get() { apt-get -o DPkg::Lock::Timeout=600 "$@"; }

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) != 0 ]]; then
    echo "deps: missing packages (${missing[*]}) and not root: install them or run as root" >&2
    exit 1
  fi
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# fio source: the headers must come from exactly the fio version installed.
fio_version=$(dpkg-query -W -f='${Version}' fio)   # e.g. 3.33-3
upstream=${fio_version%-*}
if [[ -n "${FIO_SRC:-}" ]]; then
  src="$FIO_SRC"
else
  src="$depdir/fio-$upstream"
fi

# A deb-src entry mirroring the configured binary archive, so that
# 'apt-get source' works on a stock Debian 12 image that only has 'deb' lines.
ensure_deb_src() {
  if apt-get source --print-uris fio >/dev/null 2>&1; then return; fi
  local out=/etc/apt/sources.list.d/mpnvme-deb-src.sources
  echo "deps: adding deb-src entries in $out"
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    sed -n 's/^Types:.*\bdeb\b.*/Types: deb-src/;p' /etc/apt/sources.list.d/debian.sources > "$out"
  else
    grep -hE '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
      > /etc/apt/sources.list.d/mpnvme-deb-src.list
  fi
  apt_get update -qq
}

if [[ ! -f "$src/config-host.h" ]]; then
  if [[ -n "${FIO_SRC:-}" ]]; then
    echo "deps: FIO_SRC=$FIO_SRC has no config-host.h (run ./configure --disable-native --prefix=/usr there)" >&2
    exit 1
  fi
  ensure_deb_src
  echo "deps: fetching fio $fio_version source"
  (cd "$depdir" && rm -rf "fio-$upstream" && apt_get source -qq "fio=$fio_version" >/dev/null 2>&1 ||
     apt_get source -qq fio >/dev/null)
  [[ -d "$src" ]] || { echo "deps: apt-get source fio did not produce $src" >&2; exit 1; }
  (cd "$src" && ./configure --disable-native --prefix=/usr >"$depdir/fio-configure.log" 2>&1) ||
    { echo "deps: fio configure failed, see $depdir/fio-configure.log" >&2; exit 1; }
fi
echo "$src" > "$depdir/fio-src"
