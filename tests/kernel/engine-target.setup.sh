# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the engine tests: one subsystem, two namespaces, one port.
#   nsid 1: brd RAM disk, 512-byte LBAs, supports discard
#   nsid 2: file on tmpfs, 4096-byte LBAs
nqn=nqn.2026-11.io.mpnvme:kernel-lab
nvmet_subsystem $nqn || return 1
nvmet_namespace $nqn 1 /dev/ram0 || return 1
nvmet_namespace $nqn 2 "$(nvmet_file 64 2)" || return 1
nvmet_port 1 4420 $nqn || return 1
