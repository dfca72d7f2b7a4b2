#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# blktests' NVMe tests in the qemu lab, the Linux host judging two targets
# over TCP: nvmet in the guest's own kernel (the reference) and
# mpnvme-target on this machine, which blktests reaches in its
# remote-target mode (NVME_TARGET_CONTROL=mpnvme-blktests-control, whose
# control connection a qemu guestfwd relays to the target's --control
# socket). Writes the table test / nvmet / mpnvme-target / blktests'
# reason (blktests.md) and the guest's console into OUT.
#   blktests.sh BUILD_DIR [--tests 010,041] [--targets nvmet,mpnvme-target]
#               [--img-size 350m] [--out DIR] [--require 010,041]
# MPNVME_BLKTESTS names a blktests checkout (not in Debian; none is
# fetched). Exit 0 when every test that passes against nvmet passes against
# mpnvme-target or has its cause listed below, and every --require test
# passed against every target; 1 otherwise; 77 without MPNVME_BLKTESTS.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
(($# >= 1)) || { echo "usage: blktests.sh BUILD_DIR [--tests LIST] [--targets LIST] [--img-size SIZE] [--out DIR] [--require LIST]" >&2; exit 2; }
build=$1
shift
tests=010,012,040,041,042,043,044,045,054,057,062,063 targets=nvmet,mpnvme-target img=350m out="" require=""
while (($#)); do
  case $1 in
    --tests | --targets | --img-size | --out | --require)
      (($# >= 2)) || { echo "blktests.sh: $1 needs a value" >&2; exit 2; }
      case $1 in --tests) tests=$2 ;; --targets) targets=$2 ;; --img-size) img=$2 ;; --out) out=$2 ;; --require) require=$2 ;; esac
      shift 2 ;;
    *) echo "blktests.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ $tests =~ ^[0-9]{3}(,[0-9]{3})*$ ]] || { echo "blktests.sh: --tests $tests: expected NNN,NNN,..." >&2; exit 2; }
[[ $targets =~ ^(nvmet|mpnvme-target)(,(nvmet|mpnvme-target))?$ ]] ||
  { echo "blktests.sh: --targets $targets: expected nvmet and/or mpnvme-target" >&2; exit 2; }
[[ $img =~ ^[0-9]+[kmg]$ ]] || { echo "blktests.sh: --img-size $img: expected a size like 350m" >&2; exit 2; }
blktests=${MPNVME_BLKTESTS:-}
if [[ -z $blktests ]]; then
  echo "blktests.sh: not run: set MPNVME_BLKTESTS to a blktests checkout (blktests is not packaged in Debian)"
  exit 77
fi
[[ -x $blktests/check && -d $blktests/tests/nvme ]] || { echo "blktests.sh: MPNVME_BLKTESTS=$blktests: no blktests checkout there" >&2; exit 2; }

# Why a test that passes against nvmet cannot pass against a remote
# target, and what it would take.
declare -A cause=(
  [042]="blktests changes the host's key by writing nvmet's configfs in the host's kernel (_set_nvmet_hostkey), which its remote-target mode does not route through NVME_TARGET_CONTROL; needs a control verb in blktests for key changes"
  [043]="blktests changes the hash and DH group by writing nvmet's configfs (_set_nvmet_hash, _set_nvmet_dhgroup), which its remote-target mode does not route through NVME_TARGET_CONTROL; needs a control verb in blktests"
  [044]="blktests sets the DH group by writing nvmet's configfs (_set_nvmet_dhgroup), which its remote-target mode does not route through NVME_TARGET_CONTROL; needs a control verb in blktests"
  [045]="blktests changes keys and DH group for re-authentication by writing nvmet's configfs, which its remote-target mode does not route through NVME_TARGET_CONTROL; needs a control verb in blktests"
  [054]="blktests runs its reservation commands only where the host's own nvmet configfs has the namespace's resv_enable, which a remote target's namespace never has; mpnvme-target's reservations are checked against nvmet's by kernel_target_reservations instead"
  [057]="blktests changes ANA states by writing nvmet's configfs ports (_setup_nvmet_port_ana) and adds ports through 'add-ports', a stub in blktests' own remote-target mode"
)

# What a result against a remote target does not show by itself.
declare -A note=(
  [057]="vacuous against a remote target: the test finds its ports in the host's own nvmet configfs (_get_nvmet_ports), which has none in remote-target mode, so it connects nothing and changes no ANA state; mpnvme-target's ANA failover is checked by kernel_host_interop and integration_multipath_failover"
)

source "$here/guest-common.sh"
if [[ -n $out ]]; then
  mkdir -p "$out" || exit 2
  export MPNVME_KEEP_CONSOLE=$out/console.log
fi
# On failure: each test's result line, the runs' frames, and errors.
kernel_host_test blktests '^nvme/[0-9]+ .*\]$|BLKTESTS|LAB-|rror|cannot|not found'
out=${out:-$state}

mkdir -p "$state/pack"
cp -a "$blktests" "$state/pack/blktests" && rm -rf "$state/pack/blktests/.git" "$state/pack/blktests/results"
tar -C "$state/pack" -czf "$state/blktests.tar.gz" blktests || fail "cannot pack blktests"
control="$here/../../toolkit/blktests/mpnvme-blktests-control"
[[ -x $build/toolkit/blktests/mpnvme-blktests-control ]] && control=$build/toolkit/blktests/mpnvme-blktests-control
cp "$control" "$state/mpnvme-blktests-control"

port=$(free_port) ctl_port=7100
start_machine_target "$state/target.log" --transport tcp --listen "127.0.0.1:$port" --control "$state/control" \
  --subnqn nqn.2026-12.io.mpnvme:blktests-idle --ns ram:1m --log-level info
guest_tests=$(echo "$tests" | tr -d ' ')
minutes=$((3 + $(tr ',' '\n' <<<"$guest_tests" | wc -l) * $(tr ',' '\n' <<<"$targets" | wc -l) * 3))
MPNVME_LAB_GUESTFWD="$ctl_port=$build/mpnvme-target/mpnvme-target ctl $state/control -" \
  debian_guest_start "$here/blktests-run.sh" "port=$port ctl=$ctl_port targets=$targets tests=$guest_tests img=$img" \
  "$state/blktests.tar.gz" "$state/mpnvme-blktests-control"
echo "blktests $(cd "$blktests" && git describe --always 2>/dev/null || echo '(not a git checkout)') in the guest; up to $minutes min"
wait_for 'LAB-JOB-DONE' $((minutes * 60))

# result TARGET TEST: "passed", "failed" or "not run" (blktests' words), a
# tab, and the reason lines after it, from the console in `log`.
result() {
  awk -v run="BLKTESTS-RUN $1" -v test="nvme/$2" '
    $0 == run { inside = 1; next }
    /^BLKTESTS-END / { inside = 0 }
    !inside { next }
    index($0, test " ") == 1 { match($0, /\[[a-z ]+\]$/); status = substr($0, RSTART + 1, RLENGTH - 2); why = ""; grab = 1; next }
    grab && /^nvme\/[0-9]/ { grab = 0 }
    # A skip reason, or the lines of the diff that differ (+ got, - expected).
    grab && /^    / {
      line = $0; sub(/^    /, "", line)
      if (line ~ /^(runtime|--- |\+\+\+ |@@|\(Run|\.\.\.| )/) next
      if (n++ < 3) why = why (why ? "; " : "") line
    }
    END { print (status ? status : "absent") "\t" why }' <<<"$log"
}
log=$(console)
{
  echo "| test | nvmet | mpnvme-target | reason |"
  echo "|---|---|---|---|"
} >"$out/blktests.md"
rc=0
for t in ${guest_tests//,/ }; do
  declare -A res=() why=()
  for target in ${targets//,/ }; do
    IFS=$'\t' read -r res[$target] why[$target] <<<"$(result "$target" "$t")"
  done
  reason=${why[mpnvme-target]:-${why[nvmet]:-}}
  [[ ${res[mpnvme-target]:-} == passed && -n ${note[$t]:-} ]] && reason=${note[$t]}
  for target in ${targets//,/ }; do
    [[ ${res[$target]} == absent ]] && { rc=1; reason="blktests did not report it against $target; ${reason}"; }
  done
  if [[ ${res[nvmet]:-} == passed && ${res[mpnvme-target]:-passed} != passed ]]; then
    if [[ -n ${cause[$t]:-} ]]; then reason="${cause[$t]} (blktests: ${reason:-no reason given})"; else rc=1; reason="REGRESSION: ${reason}"; fi
  fi
  if [[ ",$require," == *",$t,"* ]]; then
    for target in ${targets//,/ }; do [[ ${res[$target]} == passed ]] || { rc=1; reason="required to pass: ${reason}"; }; done
  fi
  echo "| nvme/$t | ${res[nvmet]:--} | ${res[mpnvme-target]:--} | ${reason//|//} |" >>"$out/blktests.md"
done
cat "$out/blktests.md"
grep -qE 'ERROR: (Address|Undefined|Leak)Sanitizer|runtime error:' "$state/target.log" && fail "sanitizer report in the target"
grep -a 'WARNING\|BUG:\|Oops' <<<"$log" | grep -v 'blktests-run' | head -5
((rc == 0)) || fail "a test that passes against nvmet did not pass against mpnvme-target, or a required test did not pass"
echo PASS
