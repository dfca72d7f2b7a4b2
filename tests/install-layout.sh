#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# make install PREFIX=/usr DESTDIR=tmp from an existing build: check the
# layout and that fio lists the installed engine's options.
set -euo pipefail
src=$1 build=$2
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
make -s -C "$src" install PREFIX=/usr DESTDIR="$dest" BUILD="$build" >/dev/null
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
engine=$dest/usr/lib/$arch/mpnvme/fio-mpnvme.so
for f in "$engine" "$dest/usr/share/mpnvme/jobs/demo.fio" "$dest/usr/share/man/man7/fio-mpnvme.7" \
  "$dest/usr/bin/mpnvme-target" "$dest/usr/bin/mpnvme-lab" "$dest/usr/share/man/man8/mpnvme-target.8" \
  "$dest/usr/share/man/man8/mpnvme-lab.8" "$dest/usr/bin/mpnvme-iopolicy" "$dest/usr/bin/mpnvme-nvmet" \
  "$dest/usr/share/man/man8/mpnvme-iopolicy.8" "$dest/usr/share/man/man8/mpnvme-nvmet.8" \
  "$dest/usr/bin/mpnvme-blktests-control" "$dest/usr/share/man/man8/mpnvme-blktests-control.8"; do
  [[ -f $f ]] || { echo "FAIL: missing $f"; exit 1; }
done
export ASAN_OPTIONS=detect_leaks=0
preload=""
# (no grep -q on a pipe under pipefail: nm would die of SIGPIPE)
if [[ $(nm -D "$engine" | grep -c __asan_init) != 0 ]]; then preload=$(gcc -print-file-name=libasan.so); fi
help=$(LD_PRELOAD=$preload fio --enghelp="$engine")
grep -q '^sk_priority' <<<"$help" || { echo "FAIL: fio --enghelp lists no engine options"; exit 1; }
page=$(man -l "$dest/usr/share/man/man7/fio-mpnvme.7" 2>/dev/null)
grep -q "PRIORITY PAIRS" <<<"$page" || { echo "FAIL: man page does not render"; exit 1; }
# Each --help read whole before it is searched (grep -q on the pipe would
# end early and the program die of SIGPIPE under pipefail).
helps() { # PROGRAM TEXT
  local out
  out=$("$dest/usr/bin/$1" --help) || { echo "FAIL: $1 --help exited $?"; exit 1; }
  grep -qF -- "$2" <<<"$out" || { echo "FAIL: $1 --help does not mention '$2'"; exit 1; }
}
helps mpnvme-target --listen
helps mpnvme-lab 'link PATH down|up'
helps mpnvme-nvmet apply
helps mpnvme-iopolicy set
helps mpnvme-blktests-control 'setup --subsysnqn'
# EXIT STATUS as the man pages say: 2 for command line errors.
for cmd in "mpnvme-target --no-such-option" "mpnvme-target --listen" "mpnvme-nvmet" "mpnvme-nvmet apply" \
  "mpnvme-iopolicy --no-such-option" "mpnvme-lab" "mpnvme-blktests-control" "mpnvme-blktests-control frobnicate"; do
  rc=0
  "$dest/usr/bin/${cmd%% *}" ${cmd#* } >/dev/null 2>&1 || rc=$?
  [[ $cmd == *" "* ]] || { rc=0; "$dest/usr/bin/$cmd" >/dev/null 2>&1 || rc=$?; }
  ((rc == 2)) || { echo "FAIL: $cmd exited $rc, not 2"; exit 1; }
done
# One version everywhere: CMake's PROJECT_VERSION (the build's cache),
# --version of every program, the installed man pages, debian/changelog.
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[[ -n $version ]] || { echo "FAIL: no CMAKE_PROJECT_VERSION in $build/CMakeCache.txt"; exit 1; }
[[ $("$src/toolkit/lab/mpnvme-lab" --version) == "mpnvme-lab $version" ]] ||
  { echo "FAIL: mpnvme-lab --version from the checkout: $("$src/toolkit/lab/mpnvme-lab" --version)"; exit 1; }
[[ $("$src/toolkit/blktests/mpnvme-blktests-control" --version) == "mpnvme-blktests-control $version" ]] ||
  { echo "FAIL: mpnvme-blktests-control --version from the checkout"; exit 1; }
for p in mpnvme-target mpnvme-nvmet mpnvme-iopolicy mpnvme-lab mpnvme-blktests-control; do
  [[ $("$dest/usr/bin/$p" --version) == "$p $version" ]] || { echo "FAIL: $p --version: $("$dest/usr/bin/$p" --version)"; exit 1; }
done
for page in "$dest"/usr/share/man/man*/*; do
  th=$(grep -m1 '^\.TH' "$page")
  grep -qF "\"mpnvme $version\"" <<<"$th" || { echo "FAIL: $page: $th"; exit 1; }
done
deb=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
[[ ${deb%-*} == "$version" ]] || { echo "FAIL: debian/changelog has $deb, the project $version"; exit 1; }
echo PASS
