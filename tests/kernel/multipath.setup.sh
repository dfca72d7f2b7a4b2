# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the engine multipath tests: one subsystem with a brd RAM
# disk, served on two nvmet ports (4420 and 4421), as two paths.
nqn=nqn.2026-11.io.mpnvme:kernel-multipath
nvmet_subsystem $nqn || return 1
nvmet_namespace $nqn 1 /dev/ram0 || return 1
nvmet_port 1 4420 $nqn || return 1
nvmet_port 2 4421 $nqn || return 1
