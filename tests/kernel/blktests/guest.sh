#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The blktests job of the Debian-root lab guest (debian-root-init.sh):
# blktests' ./check once per target: against nvmet in this kernel over
# TCP (the reference), and against mpnvme-target on the machine through
# blktests' remote-target mode (NVME_TARGET_CONTROL=mpnvme-blktests-control,
# reaching the target's control socket through the guestfwd port
# LAB_ctl). Each run is framed by "BLKTESTS-RUN TARGET" and "BLKTESTS-END
# TARGET" lines with ./check's own output between; a failed test's output
# and diff follow its line.
# Settings: LAB_targets, LAB_tests (comma-separated), LAB_img
# (NVME_IMG_SIZE), LAB_port (mpnvme-target's NVMe/TCP port, 10.0.2.2),
# LAB_ctl.
set -uo pipefail
tar -C /opt -xzf /opt/lab/blktests.tar.gz || exit 1
# nvme/062 and 063 (TLS, concatenation): tlshd (ktls-utils 1.4 of Debian
# unstable on 7.x, 1.0 of Debian 13 before) for the host's and nvmet's handshakes, started here as a machine
# without systemd does (blktests patch 11 takes a running tlshd), and
# nvme-cli 2.16 with libnvme 1.16 (Debian unstable; Debian 12's 2.4 has
# neither --concat nor the libnvme these tests ask for), each run with
# its suite's loader and libraries; only those two tests get them.
tls_path=""
if [[ -f /opt/lab/tls-tools.tar.gz ]]; then
  mkdir -p /opt/tls/wrap && tar -C /opt/tls -xzf /opt/lab/tls-tools.tar.gz || exit 1
  # tlshd 1.4 on Debian's 7.x (SHA-384 PSKs: qemu-lab/tls-tools.sh), 1.0 before.
  case $(uname -r) in [1-6].*) tlshd_suite=trixie ;; *) tlshd_suite=unstable ;; esac
  for tool in $tlshd_suite:tlshd unstable:nvme; do
    suite=${tool%%:*} prog=${tool#*:}
    printf '#!/bin/sh\nexec /opt/tls/%s/lib/ld-linux-x86-64.so.2 --library-path /opt/tls/%s/lib /opt/tls/%s/bin/%s "$@"\n' \
      "$suite" "$suite" "$suite" "$prog" >"/opt/tls/wrap/$prog" && chmod 755 "/opt/tls/wrap/$prog"
  done
  printf '[debug]\nloglevel=1\ntls=0\nnl=0\n[authenticate]\nkeyrings=.nvme\n[authenticate.client]\n[authenticate.server]\n' \
    >/etc/tlshd.conf
  /opt/tls/wrap/tlshd -c /etc/tlshd.conf -s >/tmp/tlshd.log 2>&1 &
  for _ in $(seq 50); do grep -q 'priority string' /tmp/tlshd.log && break; sleep 0.2; done
  grep -q 'priority string' /tmp/tlshd.log && tls_path=/opt/tls/wrap: || echo "blktests-run: tlshd did not start: $(cat /tmp/tlshd.log)"
fi
install -D -m 755 /opt/lab/mpnvme-blktests-control /usr/local/sbin/mpnvme-blktests-control || exit 1
mkdir -p /etc/mpnvme
# The host blktests connects as is its own default host.
cat >/etc/mpnvme/blktests-control.conf <<CONF
control=tcp:10.0.2.100:$LAB_ctl
traddr=10.0.2.2
trsvcid=$LAB_port
hostid=0f01fb42-9f7f-4856-b0b3-51e60b8de349
hostnqn=nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349
namespace=ram:$LAB_img
blkdev_type=device
CONF
# nvmet-remote: the guest's own nvmet through blktests' remote-target
# mode, driven by contrib/nvme_target_control.py's configfs backend (the
# patch series), on a loop device of its own.
modprobe nvmet-tcp
truncate -s "$LAB_img" /tmp/nvmet-remote.img && remote_blkdev=$(losetup -f --show /tmp/nvmet-remote.img) || exit 1
mkdir -p /root/.config/blktests
cat >/root/.config/blktests/nvme_target_control.toml <<TOML
[main]
backend='configfs'
skip_setup_cleanup=false

[host]
blkdev_type='device'
trtype='tcp'
hostnqn='nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349'
hostid='0f01fb42-9f7f-4856-b0b3-51e60b8de349'
host_traddr='127.0.0.1'

[subsys_0]
traddr='127.0.0.1'
trsvid='4420'
subsysnqn='blktests-subsystem-1'
subsys_uuid='91fdba0d-f87b-4c25-b80f-db7be1418b9e'
blkdev='$remote_blkdev'
TOML
cd /opt/blktests || exit 1
IFS=, read -r -a targets <<<"$LAB_targets"
IFS=, read -r -a tests <<<"$LAB_tests"
# blktests' device tests among them (test_device() without a fallback)
# need TEST_DEVS: the emulated PCIe NVMe controller's namespace.
# The controller is there before udevd (no coldplug here): udev is asked
# to add it, so that /dev/char/MAJ:MIN, which nvmet's passthru opens, is made.
plain=() on_device=() with_tls=() pcie_dev=""
modprobe nvme
udevadm trigger --action=add --subsystem-match=nvme --subsystem-match=block
udevadm settle --timeout=60
for c in /sys/class/nvme/nvme*; do
  [[ $(cat "$c/transport" 2>/dev/null) == pcie && -b /dev/$(basename "$c")n1 ]] || continue
  # The link udev makes for every device node, made as udev makes it
  # where this guest's udev did not.
  [[ -e /dev/char/$(cat "$c/dev") ]] || { mkdir -p /dev/char && ln -s "../$(basename "$c")" "/dev/char/$(cat "$c/dev")"; }
  pcie_dev=/dev/$(basename "$c")n1
done
echo "blktests-run: test device ${pcie_dev:-none}, /dev/char: $(ls /dev/char 2>/dev/null | wc -l) links"
for t in "${tests[@]}"; do
  if [[ -n $tls_path && ($t == 062 || $t == 063) ]]; then
    with_tls+=("$t")
  elif grep -q '^test_device()' "tests/nvme/$t" && ! grep -q '^fallback_device()' "tests/nvme/$t"; then
    [[ -b $pcie_dev ]] || { echo "blktests-run: nvme/$t needs a test device and the guest has no PCIe NVMe"; exit 1; }
    on_device+=("$t")
  else
    plain+=("$t")
  fi
done
export NVME_IMG_SIZE=$LAB_img NVMET_TRTYPES=tcp NVMET_BLKDEV_TYPES=device
for target in "${targets[@]}"; do
  echo "BLKTESTS-RUN $target"
  case $target in
    nvmet) unset NVME_TARGET_CONTROL ;;
    nvmet-remote) export NVME_TARGET_CONTROL=/opt/blktests/contrib/nvme_target_control.py HOME=/root ;;
    mpnvme-target) export NVME_TARGET_CONTROL=/usr/local/sbin/mpnvme-blktests-control ;;
    *) echo "blktests-run: unknown target $target"; continue ;;
  esac
  # Through a pipe: on a terminal ./check rewrites its lines in place.
  # The tests on a test device (passthru of the PCIe controller) in a run
  # of their own, the others without one, as blktests runs them by default.
  rc=0
  if ((${#plain[@]})); then ./check -o "/tmp/results-$target" "${plain[@]/#/nvme/}" 2>&1 | cat; rc=${PIPESTATUS[0]}; fi
  if ((${#with_tls[@]})); then
    # nvme/062 inserts a new TLS key on every run and leaves it; the host
    # then finds several for one host and subsystem and may offer an older
    # one, which the host's own nvmet has (the same keyring) and a remote
    # target does not. Each target starts from an empty keyring.
    # keyctl(2): link .nvme into this session (its keys' possessor rights
    # allow revoking them), then revoke each PSK.
    python3 -c 'import ctypes, sys
keyctl = lambda *a: ctypes.CDLL(None).syscall(250, *a)
keys = [l.split() for l in open("/proc/keys")]
ring = [int(f[0], 16) for f in keys if f[7] == "keyring" and f[8].startswith(".nvme")]
for r in ring: keyctl(8, r, ctypes.c_int(-3))  # KEYCTL_LINK to KEY_SPEC_SESSION_KEYRING
live = [f[0] for f in keys if f[7] == "psk" and "R" not in f[1] and "D" not in f[1]]  # not revoked or dead yet
left = [k for k in live if keyctl(3, int(k, 16)) != 0]  # KEYCTL_REVOKE
left and print("blktests-run: could not revoke TLS keys", left)'
    PATH=$tls_path$PATH ./check -o "/tmp/results-$target-tls" "${with_tls[@]/#/nvme/}" 2>&1 | cat
    tls_rc=${PIPESTATUS[0]}
    ((rc)) || rc=$tls_rc
  fi
  if ((${#on_device[@]})); then
    echo "TEST_DEVS=($pcie_dev)" >config
    ./check -o "/tmp/results-$target-device" "${on_device[@]/#/nvme/}" 2>&1 | cat
    device_rc=${PIPESTATUS[0]}
    ((rc)) || rc=$device_rc
    rm -f config
  fi
  echo "BLKTESTS-END $target rc $rc"
done
