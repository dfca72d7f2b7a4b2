#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# What a Debian builder and a user of the package see: build the source
# package (scripts/dist.sh), unpack the .dsc in a clean directory and build
# it there without network, run lintian --pedantic on .dsc, .deb and
# .changes (nothing above I: allowed), install the .deb and run its
# autopkgtest with the null runner. Root (apt, unshare). Everything goes to
# a temporary directory; OUT=DIR keeps the results.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
for p in devscripts lintian autopkgtest debhelper; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$p" >/dev/null
done
work=${OUT:-$(mktemp -d /tmp/mpnvme-package.XXXXXX)}
mkdir -p "$work"
dsc=$("$root/scripts/dist.sh" "$work/source")
mkdir "$work/build"
(cd "$work/build" && dpkg-source -x "$dsc" >/dev/null)
tree=$(ls -d "$work"/build/mpnvme-*/)
echo "package: building $(basename "$dsc") in $tree without network"
(cd "$tree" && unshare -n dpkg-buildpackage -us -uc >"$work/build.log" 2>&1) ||
  { tail -40 "$work/build.log"; echo "FAIL: dpkg-buildpackage from the .dsc"; exit 1; }
changes=$(ls "$work"/build/mpnvme_*.changes)
deb=$(ls "$work"/build/mpnvme_*.deb)
lintian --pedantic --fail-on warning,error --display-level '>=pedantic' "$work"/build/mpnvme_*.dsc "$deb" "$changes" |
  tee "$work/lintian.txt"
if grep -qE '^[EW]: ' "$work/lintian.txt"; then echo "FAIL: lintian tags above I:"; exit 1; fi
echo "package: lintian: $(grep -c '^[IPX]: ' "$work/lintian.txt" || true) tag(s) at I: or below"
autopkgtest "$deb" "$tree" -- null >"$work/autopkgtest.log" 2>&1 ||
  { tail -40 "$work/autopkgtest.log"; echo "FAIL: autopkgtest"; exit 1; }
grep -E '^engine-loopback' "$work/autopkgtest.log"
echo "PASS: $(basename "$deb") built from the .dsc without network, lintian clean to I:, autopkgtest passed ($work)"
