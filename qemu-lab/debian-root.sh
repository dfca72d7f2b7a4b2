#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A Debian root for lab guests whose jobs the busybox initramfs cannot run
# (debian-root.guest.sh): blktests wants GNU bash, coreutils and gawk,
# util-linux, kmod with the kernel's whole module tree and its config,
# udevadm, nvme-cli with JSON output, fio, jq and xfsprogs; python3 for the
# test hosts that play what no kernel host would (tests/pylib).
# Debian 12's packages of those and their dependencies, unpacked (no
# maintainer scripts run: the few links and files they would make are made
# here), with the lab kernel's modules and config, as an ext4 image the
# guest gets as a virtio disk (qemu -snapshot: the image is never written).
# Fetched through a private apt source list (the machine's is not touched).
#   debian-root.sh KERNEL_DIR   prints the image's path (built once per
#                               kernel, in .deps/debian-root; the packages
#                               are kept there too)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cache="$root/.deps/debian-root"
die() { echo "debian-root: $*" >&2; exit 1; }
(($# == 1)) && [[ -d $1/root/lib/modules ]] || die "usage: debian-root.sh KERNEL_DIR (lab.sh prepare prints it)"
kd=$1
packages=(base-files base-passwd bash dash coreutils util-linux mount gawk sed grep findutils diffutils kmod udev
  nvme-cli fio jq xfsprogs procps psmisc ncurses-bin libc-bin gzip bsdextrautils python3)
version=$(ls "$kd/root/lib/modules")
stamp=$(echo "${packages[*]} $version $(md5sum <"$0")" | md5sum | cut -c1-12)
image="$cache/$version-$stamp.ext4"
[[ -s $image ]] && { echo "$image"; exit 0; }
for tool in mke2fs dpkg-deb apt-get; do command -v $tool >/dev/null || die "$tool is missing (apt-get install e2fsprogs dpkg apt)"; done

apt="$cache/apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
[[ -f $apt/status ]] || : >"$apt/status"
echo "deb http://deb.debian.org/debian bookworm main" >"$apt/sources.list"
O=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$apt/lists"
  -o "Dir::Cache=$apt/cache" -o "Dir::State::status=$apt/status" -o APT::Architecture=amd64)
apt-get "${O[@]}" update -qq >/dev/null 2>&1 || die "apt-get update of bookworm (private list) failed"
# Every package the ones above depend on, recursively (virtual names left
# out: their providers are listed in their own right).
mapfile -t closure < <(apt-cache "${O[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "${packages[@]}" | grep -E '^[a-z0-9]' | sort -u)
((${#closure[@]} > ${#packages[@]})) || die "apt-cache found no dependencies of ${packages[*]}"
work=$(mktemp -d "$cache/work.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache/debs" "$work/root"
(cd "$cache/debs" && apt-get "${O[@]}" download -qq "${closure[@]}" >/dev/null 2>&1) ||
  die "apt-get download of ${#closure[@]} packages from bookworm failed"
for p in "${closure[@]}"; do
  deb=$(ls -t "$cache"/debs/"${p}"_*.deb 2>/dev/null | head -1)
  [[ -n $deb ]] || die "$p was not downloaded"
  dpkg-deb -x "$deb" "$work/root"
done
r=$work/root
# What the maintainer scripts would have made: the shell and awk links,
# the user and group tables, the loader cache, a machine ID for udev.
ln -sf dash "$r/bin/sh"
ln -sf gawk "$r/usr/bin/awk"
printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$r/etc/passwd"
printf 'root:x:0:\ndisk:x:6:\nkmem:x:15:\ntty:x:5:\nnogroup:x:65534:\n' >"$r/etc/group"
mkdir -p "$r/root" "$r/tmp" "$r/run" "$r/proc" "$r/sys" "$r/dev" "$r/boot" "$r/etc/nvme" "$r/opt"
chmod 1777 "$r/tmp"
echo "mpnvme-lab" >"$r/etc/hostname"
cat /proc/sys/kernel/random/uuid | tr -d - >"$r/etc/machine-id"
# The lab kernel's modules (blktests loads and unloads the NVMe modules
# itself) and config (it checks kernel options).
mkdir -p "$r/lib/modules"
cp -a "$kd/root/lib/modules/$version" "$r/lib/modules/"
# Debian's 7.x packages keep the config beside the modules; blktests reads
# /boot/config-VERSION.
for config in "$kd/root/boot/config-$version" "$kd/root/lib/modules/$version/config" "$kd/config"; do
  [[ -f $config ]] && { cp "$config" "$r/boot/config-$version"; break; }
done
[[ -f $r/boot/config-$version ]] || echo "debian-root: no config of kernel $version: blktests will not run tests that check kernel options" >&2
chroot "$r" /sbin/ldconfig 2>/dev/null || true
# Room for blktests' own backing files (NVME_IMG_SIZE, 350m for nvme/012)
# on a sparse image.
size_mb=$(($(du -sm "$r" | cut -f1) * 13 / 10 + 2048))
mkdir -p "$cache"
mke2fs -q -t ext4 -L debian-root -d "$r" "$work/image.ext4" "${size_mb}M" >&2 || die "mke2fs -d failed"
mv "$work/image.ext4" "$image"
find "$cache" -maxdepth 1 -name "$version-*.ext4" ! -name "$(basename "$image")" -delete
echo "$image"
