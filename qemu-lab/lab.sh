#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The qemu lab: a real Debian kernel (nvmet-tcp target, nvme-tcp host, netem)
# booted under TCG with a busybox initramfs, for tests that need the Linux
# kernel as the reference peer. See docs/design.md, "Kernel lab".
#
#   lab.sh prepare                      fetch the kernel (cached in .deps/kernel)
#   lab.sh start STATEDIR SETUP.sh      boot; SETUP.sh runs as root in the guest
#                                       (helpers from guest-lib.sh are sourced);
#                                       guest port 4420 is forwarded to a free
#                                       127.0.0.1 port written to STATEDIR/port
#   lab.sh stop STATEDIR                power off and clean up
# Environment: MPNVME_LAB_KERNEL=6.12 (default), 6.1, latest (Debian's newest
#   cloud kernel, from the unstable suite through a private apt source
#   list: the machine's apt sources are not touched) or a directory with a
#   kernel a user built (vmlinuz and lib/modules/VERSION, as `make
#   modules_install INSTALL_MOD_PATH=DIR` leaves them); MPNVME_LAB_MEM (MiB);
#   MPNVME_LAB_SMP (vCPUs, default 1: the kernel host opens one I/O queue
#                  per CPU at most, so a test of queue counts needs 2)
#   MPNVME_LAB_BINARIES="PATH..."  programs copied to /usr/local/bin in the
#                                  guest, with their libraries
#   MPNVME_LAB_FILES="PATH..."     files copied to /files/ in the guest
#   MPNVME_LAB_TLS=1               the TLS userland (tlshd, nvme-cli 2.13 from
#                                  Debian 13: tls-tools.sh) in
#                                  /files/tls-tools.tar.gz
#   MPNVME_LAB_FWD="PORT..."       more guest ports forwarded; the host side
#                                  of guest port P is in STATEDIR/port-P
#   MPNVME_LAB_APPEND="..."        extra kernel command line
#   MPNVME_LAB_DISK=IMAGE          a raw disk image the guest sees as
#                                  /dev/vda, never written (its writes go
#                                  to a temporary overlay: qemu snapshot)
#   MPNVME_LAB_NVME=IMAGE          a raw image the guest sees as an NVMe
#                                  PCIe controller's namespace (qemu's
#                                  emulated controller), written
#   MPNVME_LAB_GUESTFWD="PORT=COMMAND..."  a guest connection to
#                                  10.0.2.100:PORT runs COMMAND on this
#                                  machine, its standard input and output
#                                  the connection (qemu guestfwd; ";"
#                                  separates several, no commas in COMMAND)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cache="$root/.deps/kernel"
series=${MPNVME_LAB_KERNEL:-6.12}
apt_opts=()
case "$series" in
  6.12) meta=linux-image-6.12-cloud-amd64 ;;
  6.1) meta=linux-image-cloud-amd64 ;;
  latest)
    meta=linux-image-cloud-amd64
    # Unstable's package lists in a private apt state under the cache.
    sid="$cache/apt-unstable"
    apt_opts=(-o "Dir::Etc::SourceList=$sid/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$sid/lists" -o "Dir::Cache=$sid/cache" -o "Dir::State::status=$sid/status") ;;
  /*) [[ -f $series/vmlinuz && -d $series/lib/modules ]] ||
        { echo "lab: MPNVME_LAB_KERNEL=$series: needs vmlinuz and lib/modules/VERSION in that directory" >&2; exit 2; }
      meta="" ;;
  *) echo "lab: MPNVME_LAB_KERNEL=$series: accepted 6.12, 6.1, latest or a directory (absolute path)" >&2; exit 2 ;;
esac
# The NVMe drivers, a RAM disk, the network card, what mpnvme-lab needs
# inside the guest (bench/guest.py): veth, the qdiscs and nftables, socket
# diagnostics for ss -i (the bench's flow counts: without them ss reads
# /proc/net/tcp, which has no byte counts), and kernel TLS with its
# AES-GCM (no modprobe in the guest loads it on demand); a virtio disk
# with ext4 (MPNVME_LAB_DISK).
modules=(configfs nvmet nvmet-tcp nvme-tcp nvme-fabrics brd loop virtio_pci virtio_net sch_netem
  veth sch_tbf sch_htb nf_tables nft_numgen inet_diag tcp_diag mptcp_diag tls gcm ghash-generic aesni-intel virtio_blk ext4)

die() { echo "lab: $*" >&2; exit 1; }
source "$here/machine.sh"

# The private apt state for `latest`, updated at most once a day.
unstable_lists() {
  mkdir -p "$sid/lists/partial" "$sid/cache/archives/partial"
  [[ -f $sid/status ]] || : >"$sid/status"
  echo "deb http://deb.debian.org/debian unstable main" >"$sid/sources.list"
  if [[ -z $(find "$sid/lists" -name '*unstable*Packages*' -mtime -1 2>/dev/null) ]]; then
    apt-get "${apt_opts[@]}" update -qq >/dev/null 2>&1 || die "apt-get update of the unstable suite (private list) failed"
  fi
}

kernel_dir() {
  local pkg
  if [[ -z $meta ]]; then # a kernel the user built
    echo "$cache/custom-$(echo "$series" | md5sum | cut -c1-12)"
    return
  fi
  [[ $series == latest ]] && unstable_lists
  resolve() { apt-cache "${apt_opts[@]}" depends "$meta" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | head -1; }
  pkg=$(resolve)
  if [[ -z "$pkg" && $(id -u) == 0 && $series != latest ]]; then apt-get update -qq >/dev/null 2>&1 || true; pkg=$(resolve); fi
  [[ -n "$pkg" ]] || die "cannot resolve $meta to a kernel package (apt-get update as root)"
  echo "$cache/$pkg"
}

prepare() {
  # Tests that boot guests run side by side: one prepares a kernel while
  # the others wait for it (the lock goes with the process).
  mkdir -p "$cache" && exec {lock}>"$cache/.prepare.lock" && flock "$lock"
  local kd; kd=$(kernel_dir)
  # The base initramfs is rebuilt when the module list or the guest's
  # scripts change; the kernel package is fetched once.
  local want; want=$(cat <(echo "${modules[*]}") "$here/guest-init.sh" "$here/guest-lib.sh" | md5sum | cut -d' ' -f1)
  # A kernel the user built: its config, when the directory has one
  # (build-kernel leaves it there), for the guests' Debian root.
  keep_config() { if [[ -z $meta && -f $series/config ]]; then cp "$series/config" "$kd/config"; fi; }
  [[ -f "$kd/ready" && $(cat "$kd/ready") == "$want" ]] && { keep_config; echo "$kd"; return; }
  if [[ ! -f "$kd/extracted" ]]; then
    rm -rf "$kd"; mkdir -p "$kd/deb"
    if [[ -z $meta ]]; then
      mkdir -p "$kd/root/boot" "$kd/root/lib"
      cp -a "$series/lib/modules" "$kd/root/lib/"
      cp "$series/vmlinuz" "$kd/root/boot/vmlinuz-custom"
    else
      # Newer kernels (7.x) split the image package: the kernel binary, its
      # modules and base files are packages of their own.
      local pkg=$(basename "$kd") part pkgs=()
      pkgs=("$pkg")
      for part in binary modules base; do
        apt-cache "${apt_opts[@]}" show "linux-$part-${pkg#linux-image-}" >/dev/null 2>&1 && pkgs+=("linux-$part-${pkg#linux-image-}")
      done
      (cd "$kd/deb" && apt-get "${apt_opts[@]}" download -q "${pkgs[@]}" >/dev/null 2>&1) ||
        die "apt-get download ${pkgs[*]} failed"
      local deb
      for deb in "$kd"/deb/*.deb; do dpkg-deb -x "$deb" "$kd/root"; done
    fi
    rm -rf "$kd/deb"
    # Merged-/usr kernels (trixie and later) ship their modules under /usr.
    if [[ -d $kd/root/usr/lib/modules && ! -d $kd/root/lib/modules ]]; then
      mkdir -p "$kd/root/lib" && mv "$kd/root/usr/lib/modules" "$kd/root/lib/modules"
    fi
    local v; v=$(ls "$kd/root/lib/modules")
    find "$kd/root/lib/modules/$v" -name '*.ko.xz' -exec xz -d {} +
    if [[ -n $(find "$kd/root/lib/modules/$v" -name '*.ko.zst' -print -quit) ]]; then
      command -v zstd >/dev/null || die "the kernel's modules are zstd-compressed: apt-get install zstd"
      find "$kd/root/lib/modules/$v" -name '*.ko.zst' -exec zstd -q -d --rm {} +
    fi
    depmod -b "$kd/root" "$v"
    # /boot/vmlinuz-VERSION, or (7.x packages) beside the modules.
    if compgen -G "$kd/root/boot/vmlinuz-*" >/dev/null; then
      cp "$kd"/root/boot/vmlinuz-* "$kd/vmlinuz"
    else
      cp "$kd/root/lib/modules/$v/vmlinuz" "$kd/vmlinuz" || die "no kernel image in $(basename "$kd")"
    fi
    touch "$kd/extracted"
  fi
  local ver; ver=$(ls "$kd/root/lib/modules")
  rm -rf "$kd/initramfs"
  # Base initramfs: busybox, the modules in dependency order, iproute2's tc
  # (busybox tc cannot do netem), the guest helper library and /init.
  local ir="$kd/initramfs"; mkdir -p "$ir"/{bin,sbin,lib/modules,proc,sys,dev,tmp,etc,mnt}
  cp /bin/busybox "$ir/bin/busybox"
  : > "$ir/lib/modules/order"
  local m line
  for m in "${modules[@]}"; do
    while read -r line; do
      [[ $line == insmod* ]] || continue
      set -- $line
      local f=$2 name; name=$(basename "$f")
      grep -qx "$name" "$ir/lib/modules/order" && continue
      cp "$f" "$ir/lib/modules/$name"
      echo "$name" >> "$ir/lib/modules/order"
    done < <(modprobe -d "$kd/root" -S "$ver" --show-depends "$m" 2>/dev/null)
  done
  copy_binary "$ir" "$(command -v tc)"
  cp "$here/guest-init.sh" "$ir/init"; chmod +x "$ir/init"
  cp "$here/guest-lib.sh" "$ir/lib/guest-lib.sh"
  (cd "$ir" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) > "$kd/base.cpio.gz"
  echo "$want" > "$kd/ready"
  keep_config
  echo "$kd"
}

# Copy a host binary (to the same path, or to DEST) and the shared libraries
# it needs into the initramfs.
copy_binary() {
  local ir=$1 bin=$2 dest=${3:-$2} lib
  mkdir -p "$ir$(dirname "$dest")"; cp "$bin" "$ir$dest"
  for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
    mkdir -p "$ir$(dirname "$lib")"; cp -L "$lib" "$ir$lib"
  done
}

start() {
  local state=$1 setup=$2 kd
  kd=$(prepare)
  rm -rf "$state/extra"
  mkdir -p "$state/extra/files"
  cp "$setup" "$state/extra/setup.sh"
  local b f
  for b in ${MPNVME_LAB_BINARIES:-}; do copy_binary "$state/extra" "$b" "/usr/local/bin/$(basename "$b")"; done
  for f in ${MPNVME_LAB_FILES:-}; do cp "$f" "$state/extra/files/"; done
  if [[ ${MPNVME_LAB_TLS:-} == 1 ]]; then
    local t; t=$("$here/tls-tools.sh") || die "the TLS userland could not be fetched"
    cp "$t" "$state/extra/files/"
  fi
  (cd "$state/extra" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) > "$state/extra.cpio.gz"
  cat "$kd/base.cpio.gz" "$state/extra.cpio.gz" > "$state/initramfs.gz"
  local port; port=$(free_port)
  echo "$port" > "$state/port"
  local fwd="hostfwd=tcp:127.0.0.1:$port-:4420" gp hp
  for gp in ${MPNVME_LAB_FWD:-}; do
    hp=$(free_port)
    echo "$hp" > "$state/port-$gp"
    fwd+=",hostfwd=tcp:127.0.0.1:$hp-:$gp"
  done
  local spec cmd disk=()
  while IFS= read -r spec; do
    [[ -n $spec ]] || continue
    cmd=${spec#*=}
    [[ $spec == [0-9]*=?* && $cmd != *,* ]] || die "MPNVME_LAB_GUESTFWD: '$spec' is not PORT=COMMAND (without commas)"
    fwd+=",guestfwd=tcp:10.0.2.100:${spec%%=*}-cmd:$cmd"
  done < <(tr ';' '\n' <<<"${MPNVME_LAB_GUESTFWD:-}")
  if [[ -n ${MPNVME_LAB_DISK:-} ]]; then
    [[ -f $MPNVME_LAB_DISK && $MPNVME_LAB_DISK != *,* ]] || die "MPNVME_LAB_DISK=$MPNVME_LAB_DISK: not a file (or a path with a comma)"
    disk=(-drive "file=$MPNVME_LAB_DISK,if=virtio,format=raw,snapshot=on")
  fi
  if [[ -n ${MPNVME_LAB_NVME:-} ]]; then
    [[ -f $MPNVME_LAB_NVME && $MPNVME_LAB_NVME != *,* ]] || die "MPNVME_LAB_NVME=$MPNVME_LAB_NVME: not a file (or a path with a comma)"
    disk+=(-drive "file=$MPNVME_LAB_NVME,if=none,id=nvm,format=raw" -device "nvme,serial=mpnvme-lab,drive=nvm")
  fi
  : > "$state/console.log"
  setsid qemu-system-x86_64 -accel tcg -cpu max -smp "${MPNVME_LAB_SMP:-1}" -m "${MPNVME_LAB_MEM:-512}" \
    -display none -monitor none -serial "file:$state/console.log" -no-reboot \
    -kernel "$kd/vmlinuz" -initrd "$state/initramfs.gz" \
    -append "console=ttyS0 quiet panic=-1 ${MPNVME_LAB_APPEND:-}" \
    -netdev "user,id=n0,$fwd" \
    -device virtio-net-pci,netdev=n0,romfile= "${disk[@]}" </dev/null >"$state/qemu.log" 2>&1 &
  echo $! > "$state/pid"
  local deadline=$((SECONDS + ${MPNVME_LAB_TIMEOUT:-180}))
  while ((SECONDS < deadline)); do
    grep -q 'MPNVME-LAB-READY' "$state/console.log" && return 0
    if grep -q 'MPNVME-LAB-FAILED' "$state/console.log" || ! kill -0 "$(cat "$state/pid")" 2>/dev/null; then
      tail -30 "$state/console.log" >&2; die "guest setup failed"
    fi
    sleep 0.5
  done
  tail -30 "$state/console.log" >&2
  stop "$state"
  die "guest not ready after ${MPNVME_LAB_TIMEOUT:-180}s"
}

stop() {
  local state=$1 pid
  [[ -f "$state/pid" ]] || return 0
  pid=$(cat "$state/pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$state/pid"
}

case "${1:-}" in
  prepare) prepare ;;
  start) [[ $# == 3 ]] || die "usage: lab.sh start STATEDIR SETUP.sh"; start "$2" "$3" ;;
  stop) [[ $# == 2 ]] || die "usage: lab.sh stop STATEDIR"; stop "$2" ;;
  *) die "usage: lab.sh prepare | start STATEDIR SETUP.sh | stop STATEDIR" ;;
esac
