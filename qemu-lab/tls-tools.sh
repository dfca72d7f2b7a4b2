#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The TLS userland of the qemu lab's guest (bookworm has none of it):
#   tlshd (ktls-utils 1.0, Debian 13): the TLS handshakes of the Linux host
#     and nvmet on 6.12 and older. Unstable's 1.4 sets TLS_TX_MAX_PAYLOAD_LEN,
#     which 6.12 lacks, and then fails every handshake; on Debian's 7.x it
#     is the one to use: its GnuTLS (3.8.13) computes SHA-384 PSK binders
#     with SHA-384, where Debian 13's (3.8.9) uses SHA-256 and so fails
#     every SHA-384 handshake with OpenSSL (the engine, mpnvme-target).
#   nvme-cli 2.13 (Debian 13): derives the retained and TLS PSKs from a
#     configured key as libnvme did before RFC 8446's HkdfLabel, and puts
#     them into the kernel's .nvme keyring, as a Debian 13 host does.
#   nvme-cli 2.16 (unstable): the same with RFC 8446's HkdfLabel, as
#     current nvme-cli does.
# Binary packages and the libraries the programs load, through private apt
# source lists (the machine's sources are not touched), packed with each
# suite's dynamic loader into one tarball: SUITE/bin, SUITE/lib.
#   tls-tools.sh   prints the tarball's path (fetched once, in .deps/tls-tools)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cache="$root/.deps/tls-tools"
tarball="$cache/v2/tls-tools.tar.gz" # v2: unstable's tlshd too
die() { echo "tls-tools: $*" >&2; exit 1; }
# Guests boot side by side: one fetches, the others wait for its tarball.
mkdir -p "$cache" && exec {lock}>"$cache/.lock" && flock "$lock"
[[ -s $tarball ]] && { echo "$tarball"; exit 0; }

# Libraries the programs below need, in both suites' names.
libs=(libc6 libgcc-s1 libglib2.0-0t64 libgnutls30t64 libkeyutils1 libnl-3-200 libnl-genl-3-200 libjson-c5 libssl3t64
  libp11-kit0 libidn2-0 libunistring5 libtasn1-6 libnettle8t64 libhogweed6t64 libgmp10 libffi8 libpcre2-8-0 libmount1
  libselinux1 libblkid1 libzstd1 zlib1g libuuid1 libatomic1 libdbus-1-3 libsystemd0 libcap2 liblzma5 libnvme1t64)

# pack SUITE PROGRAM...: the suite's packages of the programs, unpacked;
# each program with the libraries its loader resolves into pack/SUITE.
pack() {
  local suite=$1 apt="$cache/apt-$1" work="$cache/work-$1"
  shift
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$work/debs"
  [[ -f $apt/status ]] || : >"$apt/status"
  echo "deb http://deb.debian.org/debian $suite main" >"$apt/sources.list"
  local O=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$apt/lists"
    -o "Dir::Cache=$apt/cache" -o "Dir::State::status=$apt/status")
  local pkgs=("${libs[@]}") p try
  for p in "$@"; do pkgs+=("${p%%:*}"); done
  # apt-get update exits 0 when a fetch failed (it only warns) unless told
  # otherwise; a mirror's hiccup then surfaces as packages it cannot
  # locate. Three tries before giving up, each from a fresh update.
  for try in 1 2 3; do
    apt-get "${O[@]}" update -qq --error-on=any >/dev/null 2>&1 &&
      (cd "$work/debs" && apt-get "${O[@]}" download -qq "${pkgs[@]}" >/dev/null 2>&1) && break
    ((try < 3)) || die "apt-get update or download from $suite failed 3 times"
    sleep $((try * 5))
  done
  rm -rf "$work/root" "$cache/pack/$suite" && mkdir -p "$work/root" "$cache/pack/$suite/bin" "$cache/pack/$suite/lib"
  local deb
  for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
  local lib="$work/root/usr/lib/x86_64-linux-gnu" ld="$work/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
  cp -L "$ld" "$cache/pack/$suite/lib/"
  for p in "$@"; do # PACKAGE:PROGRAM
    local bin="$work/root/usr/sbin/${p#*:}" name path
    [[ -x $bin ]] || die "$suite's ${p%%:*} has no ${p#*:}"
    cp "$bin" "$cache/pack/$suite/bin/"
    while read -r name _ path _; do
      [[ $path == not ]] && die "$suite's ${p#*:} needs $name, which is not in the packages fetched"
      [[ -n ${path:-} && -f $path ]] && cp -L "$path" "$cache/pack/$suite/lib/"
    done < <("$ld" --library-path "$lib" --list "$bin" | grep '=>')
  done
  rm -rf "$work"
}

pack trixie ktls-utils:tlshd nvme-cli:nvme
pack unstable ktls-utils:tlshd nvme-cli:nvme
for s in trixie unstable; do
  "$cache/pack/$s/lib/ld-linux-x86-64.so.2" --library-path "$cache/pack/$s/lib" "$cache/pack/$s/bin/nvme" version >/dev/null ||
    die "nvme-cli from $s does not run"
done
mkdir -p "${tarball%/*}" && tar -C "$cache/pack" -czf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
echo "$tarball"
