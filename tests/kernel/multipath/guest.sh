# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the engine multipath tests: one subsystem with a brd RAM
# disk, served on two nvmet ports (4420 and 4421), as two paths, to one
# authenticating host.
# Only the sha384 host of auth-keys.sh, with DH-HMAC-CHAP (bidirectional,
# ffdhe2048): every reconnect after the blackhole authenticates again.
nqn=nqn.2026-11.io.mpnvme:kernel-multipath
. /files/auth-keys.sh
nvmet_closed_subsystem $nqn || return 1
set -- $(echo "$AUTH_HOSTS" | grep ':host-sha384 ')
nvmet_auth_host $nqn "$1" "$2" "$3" "$4" "$5" || return 1
nvmet_namespace $nqn 1 /dev/ram0 || return 1
nvmet_port 1 4420 $nqn || return 1
nvmet_port 2 4421 $nqn || return 1
