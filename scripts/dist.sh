#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The Debian source package: mpnvme_V.orig.tar.xz (git HEAD without debian/),
# mpnvme_V.orig-fio.tar.gz (fio's upstream source as Debian ships it, from
# `apt-get source fio` in .deps/, so builders need no network) and the .dsc.
#   scripts/dist.sh OUTDIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
upstream=${version%-*}
fio_orig=$(ls "$root"/.deps/fio_*.orig.tar.* 2>/dev/null | head -1)
[[ -f $fio_orig ]] || { echo "dist: no fio orig tarball in .deps (run make deps)" >&2; exit 1; }
git -C "$root" diff --quiet HEAD -- || echo "dist: note: uncommitted changes are not in the tarball (git HEAD is)" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$root" archive --format=tar --prefix="mpnvme-$upstream/" HEAD -- . ':(exclude)debian' |
  xz -T0 >"$out/mpnvme_$upstream.orig.tar.xz"
cp "$fio_orig" "$out/mpnvme_$upstream.orig-fio.tar.${fio_orig##*.tar.}"
# dpkg-source -b wants the unpacked tree beside the tarballs.
tar -C "$work" -xJf "$out/mpnvme_$upstream.orig.tar.xz"
mkdir "$work/mpnvme-$upstream/fio"
tar -C "$work/mpnvme-$upstream/fio" --strip-components=1 -xf "$fio_orig"
git -C "$root" archive --format=tar HEAD debian | tar -C "$work/mpnvme-$upstream" -x
cp "$out"/mpnvme_"$upstream".orig*.tar.* "$work/"
(cd "$work" && dpkg-source -b "mpnvme-$upstream" >/dev/null)
cp "$work"/mpnvme_"$version".dsc "$work"/mpnvme_"$version".debian.tar.* "$out/"
echo "$out/mpnvme_$version.dsc"
