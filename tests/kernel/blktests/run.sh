#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# blktests' NVMe tests in the qemu lab, the Linux host judging targets over
# TCP: nvmet in the guest's own kernel (the reference) as blktests drives
# it (nvmet), the same nvmet in blktests' remote-target mode
# (nvmet-remote: NVME_TARGET_CONTROL=contrib/nvme_target_control.py with
# its configfs backend), and mpnvme-target on this machine in that mode
# (NVME_TARGET_CONTROL=mpnvme-blktests-control, whose control connection a
# qemu guestfwd relays to the target's --control socket; four ports, as
# nvme/057 asks). blktests is patched first with the series in
# patches/ (remote-target verbs for key, hash, group, port and
# ANA changes; the kernel-version parse of Debian's releases). Writes the
# table test / each target / blktests' reason (blktests.md), the guest's
# console and mpnvme-target's log into OUT.
#   blktests/run.sh BUILD_DIR [--tests 010,041] [--targets nvmet,nvmet-remote,mpnvme-target]
#               [--img-size 350m] [--out DIR] [--require 010,041] [--from-console FILE,...]
#               [--minutes N]
# --minutes bounds the guest's run (default 3 per test and target, and 3
# to boot): under a caller's own limit (ctest's TIMEOUT), so that a hung
# run still ends with its console and the target's log shown.
# --from-console runs nothing: it writes the table from consoles kept by
# earlier runs (--out), each test at its result in the last of them that
# ran it (a rerun after a fix replaces the first run's row). The checks
# that read the target's log (sanitizers, 057's ANA, 042-045's keys) are
# the runs' own then.
# MPNVME_BLKTESTS names a blktests checkout (not in Debian; none is
# fetched). Exit 0 when every test that passes against nvmet passes against
# mpnvme-target or has its cause listed below, and every --require test
# passed against every target; 1 otherwise; 77 without MPNVME_BLKTESTS.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: blktests/run.sh BUILD_DIR [--tests LIST] [--targets LIST] [--img-size SIZE] [--out DIR] [--require LIST] [--from-console FILE,...] [--minutes N]"
(($# >= 1)) || { echo "$usage" >&2; exit 2; }
build=$1
shift
# Every test of the group that blktests lets run over TCP (the survey in
# docs/testing.md: loop-only, PCI and device tests are not).
tcp_tests=003,004,005,006,008,010,012,014,018,019,021,022,023,025,026,027,028,029,030,031,033,034,035,036,037,038
tcp_tests+=,040,041,042,043,044,045,047,048,051,054,056,057,058,060,061,062,063,065,068,069
tests=$tcp_tests targets=nvmet,nvmet-remote,mpnvme-target img=350m out="" require="" consoles="" limit=""
while (($#)); do
  case $1 in
    --tests | --targets | --img-size | --out | --require | --from-console | --minutes)
      (($# >= 2)) || { echo "blktests/run.sh: $1 needs a value" >&2; exit 2; }
      case $1 in
        --tests) tests=$2 ;; --targets) targets=$2 ;; --img-size) img=$2 ;; --out) out=$2 ;; --require) require=$2 ;;
        --from-console) consoles=$2 ;;
        --minutes) limit=$2 ;;
      esac
      shift 2 ;;
    *) echo "blktests/run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ $tests =~ ^[0-9]{3}(,[0-9]{3})*$ ]] || { echo "blktests/run.sh: --tests $tests: expected NNN,NNN,..." >&2; exit 2; }
[[ $targets =~ ^(nvmet|nvmet-remote|mpnvme-target)(,(nvmet|nvmet-remote|mpnvme-target))*$ ]] ||
  { echo "blktests/run.sh: --targets $targets: expected a list of nvmet, nvmet-remote, mpnvme-target" >&2; exit 2; }
[[ $img =~ ^[0-9]+[kmg]$ ]] || { echo "blktests/run.sh: --img-size $img: expected a size like 350m" >&2; exit 2; }
[[ -z $limit || $limit =~ ^[1-9][0-9]*$ ]] || { echo "blktests/run.sh: --minutes $limit: a whole number of minutes" >&2; exit 2; }
for f in ${consoles//,/ }; do
  [[ -r $f ]] || { echo "blktests/run.sh: --from-console $f: no such readable file" >&2; exit 2; }
done
[[ -z $consoles || -n $out ]] || { echo "blktests/run.sh: --from-console needs --out DIR for the table" >&2; exit 2; }
blktests=${MPNVME_BLKTESTS:-}
if [[ -z $blktests && -z $consoles ]]; then
  echo "blktests/run.sh: not run: set MPNVME_BLKTESTS to a blktests checkout (blktests is not packaged in Debian)"
  exit 77
fi
[[ -n $consoles || -x $blktests/check && -d $blktests/tests/nvme ]] || { echo "blktests/run.sh: MPNVME_BLKTESTS=$blktests: no blktests checkout there" >&2; exit 2; }

# Why a test that passes against nvmet cannot pass against a remote
# target, and what it would take.
passthru="blktests makes the passthru subsystem in the host's own nvmet configfs (_nvmet_passthru_target_setup), which its remote-target mode does not route through NVME_TARGET_CONTROL; a remote target would need a passthru verb and an NVMe controller of its own to pass through, and mpnvme-target serves RAM, null, file and block namespaces, not NVMe passthru"
declare -A cause=(
  [030]="blktests runs it only against the host's own nvmet (_require_kernel_nvme_target): it changes nvmet's configfs and reads the discovery log's generation counter"
  [033]=$passthru [034]=$passthru [035]=$passthru [036]=$passthru [037]=$passthru
  [038]="the test makes and removes a subsystem in the host's own nvmet configfs and connects nowhere: it judges nvmet's configfs alone"
  [048]="blktests changes the subsystem's queue count through attr_qid_max in the host's own nvmet configfs, which its remote-target mode does not route through NVME_TARGET_CONTROL; it would take a control verb for the queue count"
  [051]="blktests enables and disables the namespace by writing the host's own nvmet configfs, which its remote-target mode does not route through NVME_TARGET_CONTROL (nvmet-remote passes only because that target is the host's own kernel); it would take a control verb for namespaces"
  [058]="blktests remaps namespaces by writing the host's own nvmet configfs (_create_nvmet_ns, _enable_nvmet_ns), which its remote-target mode does not route through NVME_TARGET_CONTROL; it would take a control verb for namespaces"
  [065]="the test builds its own nvmet target on a scsi_debug device in the host's kernel, on the remote target's address (setup_test_device), which the host cannot bind; it judges the host's nvmet, never a remote target"
  [054]="blktests runs its reservation commands only where the host's own nvmet configfs has the namespace's resv_enable, which a remote target's namespace never has; mpnvme-target's reservations are checked against nvmet's by kernel_target_reservations instead"
)

# What a result against a remote target does not show by itself.
declare -A note=()

guest_tests=$(echo "$tests" | tr -d ' ')

# follow_results TOTAL TIMEOUT: until the guest's job is done, where the
# run is: each result blktests printed (test N of TOTAL, the target, the
# time gone and an estimate of what is left); redrawn on a terminal, a
# line per result otherwise.
follow_results() {
  local total=$1 limit=$(($2 + SECONDS)) shown=0 start=$SECONDS results line n gone left target
  while ((SECONDS < limit)); do
    results=$(console | grep -aE '^(BLKTESTS-RUN |nvme/[0-9]+ .*\]$)')
    n=$(grep -cE '^nvme/' <<<"$results")
    if ((n > shown)); then
      line=$(grep -E '^nvme/' <<<"$results" | tail -1)
      target=$(grep -E '^BLKTESTS-RUN ' <<<"$results" | tail -1 | cut -d' ' -f2)
      gone=$((SECONDS - start)) left=$(((SECONDS - start) * (total - n) / n))
      printf -v line '%s of %s, %d:%02d gone, about %d:%02d left: %s: %s %s' "$n" "$total" $((gone / 60)) $((gone % 60)) \
        $((left / 60)) $((left % 60)) "$target" "${line%% *}" "${line##* }"
      if [[ -t 1 ]]; then printf '\r\033[Kblktests %s' "$line"; else echo "blktests: $line"; fi
      shown=$n
    fi
    seen 'LAB-JOB-DONE' && { [[ -t 1 ]] && echo; return 0; }
    sleep 2
  done
  [[ -t 1 ]] && echo
  fail "guest did not print /LAB-JOB-DONE/ within $2 s"
}

# run_guest: blktests in the guest against mpnvme-target on this machine;
# the console in `log`.
run_guest() {
  export MPNVME_LAB_KERNEL=${MPNVME_LAB_KERNEL:-latest}
  source "$here/../../../qemu-lab/machine.sh"
  if [[ -n $out ]]; then
    mkdir -p "$out" || exit 2
    export MPNVME_KEEP_CONSOLE=$out/console.log
  fi
  # On failure: each test's result line, the runs' frames, and errors.
  kernel_host_test blktests '^nvme/[0-9]+ .*\]$|BLKTESTS|LAB-|rror|cannot|not found'
  out=${out:-$state}

  mkdir -p "$state/pack"
  cp -a "$blktests" "$state/pack/blktests" && rm -rf "$state/pack/blktests/.git" "$state/pack/blktests/results"
  for patch in "$here"/patches/*.patch; do
    [[ ${patch##*/} == 0000-* ]] && continue # the cover letter
    (cd "$state/pack/blktests" && git apply -p1 "$patch") ||
      fail "blktests patch ${patch##*/} does not apply to $blktests"
  done
  tar -C "$state/pack" -czf "$state/blktests.tar.gz" blktests || fail "cannot pack blktests"
  control="$here/../../../toolkit/blktests/mpnvme-blktests-control"
  [[ -x $build/toolkit/blktests/mpnvme-blktests-control ]] && control=$build/toolkit/blktests/mpnvme-blktests-control
  cp "$control" "$state/mpnvme-blktests-control"

  # Four ports: nvme/057 fails over between four.
  ports=() listen=""
  for _ in 1 2 3 4; do ports+=("$(free_port)"); listen+=${listen:+,}127.0.0.1:${ports[-1]}; done
  port=${ports[0]} ctl_port=7100
  start_machine_target "$state/target.log" --transport tcp --listen "$listen" --control "$state/control" \
    --subnqn nqn.2026-12.io.mpnvme:blktests-idle --ns ram:1m --log-level info
  # nvme/033-037 pass a PCIe NVMe controller through nvmet: blktests runs
  # them on a test device (TEST_DEVS), which qemu's emulated controller is.
  truncate -s 1G "$state/nvme.img" && export MPNVME_LAB_NVME=$state/nvme.img
  # Two vCPUs: nvme/048 asks for more than one. Debian's newest kernel:
  # blktests follows the kernel's newest NVMe features.
  export MPNVME_LAB_SMP=${MPNVME_LAB_SMP:-2}
  minutes=${limit:-$((3 + $(tr ',' '\n' <<<"$guest_tests" | wc -l) * $(tr ',' '\n' <<<"$targets" | wc -l) * 3))}
  # nvme/062 and 063: tlshd and a newer nvme-cli (qemu-lab/tls-tools.sh).
  tls_tarball=$("$here/../../../qemu-lab/tls-tools.sh") || fail "the guest's TLS tools could not be fetched"
  MPNVME_LAB_GUESTFWD="$ctl_port=$build/mpnvme-target/mpnvme-target ctl $state/control -" \
    debian_guest_start "$here/guest.sh" "port=$port ctl=$ctl_port targets=$targets tests=$guest_tests img=$img" \
    "$state/blktests.tar.gz" "$state/mpnvme-blktests-control" "$tls_tarball"
  echo "blktests $(cd "$blktests" && git describe --always 2>/dev/null || echo '(not a git checkout)') in the guest; up to $minutes min"
  follow_results $(($(tr ',' '\n' <<<"$guest_tests" | wc -l) * $(tr ',' '\n' <<<"$targets" | wc -l))) $((minutes * 60))
  log=$(console)
  [[ $out == "$state" ]] || cp "$state/target.log" "$out/target.log" # mpnvme-target's side of the run
}

# result TARGET TEST: "passed", "failed" or "not run" (blktests' words), a
# tab, and the reason lines after it, from the console in `log`.
result() {
  awk -v run="BLKTESTS-RUN $1" -v test="nvme/$2" '
    $0 == run { inside = 1; next }
    /^BLKTESTS-END / { inside = 0 }
    !inside { next }
    index($0, test " ") == 1 { match($0, /\[[a-z ]+\]$/); status = substr($0, RSTART + 1, RLENGTH - 2); why = ""; n = 0; grab = 1; next }
    grab && /^nvme\/[0-9]/ { grab = 0 }
    # A skip reason, or the lines of the diff that differ (+ got, - expected).
    grab && /^    / {
      line = $0; sub(/^    /, "", line)
      if (line ~ /^(runtime|--- |\+\+\+ |@@|\(Run|\.\.\.| )/) next
      if (n++ < 3) why = why (why ? "; " : "") line
    }
    END { print (status ? status : "absent") "\t" why }' <<<"$log"
}
if [[ -n $consoles ]]; then
  fail() { echo "FAIL: $*"; exit 1; }
  mkdir -p "$out" || exit 2
  log=$([[ -z $limit || $limit =~ ^[1-9][0-9]*$ ]] || { echo "blktests/run.sh: --minutes $limit: a whole number of minutes" >&2; exit 2; }
for f in ${consoles//,/ }; do tr -d '\r' <"$f"; done)
else
  run_guest
fi
{
  echo "| test | ${targets//,/ | } | reason |"
  echo "|---|$(sed 's/[^,]*/---/g; s/,/|/g' <<<"$targets")|---|"
} >"$out/blktests.md"
rc=0
for t in ${guest_tests//,/ }; do
  declare -A res=() why=()
  for target in ${targets//,/ }; do
    IFS=$'\t' read -r res[$target] why[$target] <<<"$(result "$target" "$t")"
  done
  # mpnvme-target's reason, else the first other target's, named.
  reason=${why[mpnvme-target]:-}
  for target in nvmet-remote nvmet; do
    [[ -z $reason && -n ${why[$target]:-} ]] && reason="$target: ${why[$target]}"
  done
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
  row="| nvme/$t |"
  for target in ${targets//,/ }; do row+=" ${res[$target]} |"; done
  echo "$row ${reason//|//} |" >>"$out/blktests.md"
done
cat "$out/blktests.md"
if [[ -n $consoles ]]; then
  ((rc == 0)) || fail "a test that passes against nvmet did not pass against mpnvme-target, or a required test did not pass"
  exit 0
fi
grep -qE 'ERROR: (Address|Undefined|Leak)Sanitizer|runtime error:' "$state/target.log" && fail "sanitizer report in the target"
# A pass in remote mode counts only when the target saw what the test
# changes: ANA states for 057, DH-HMAC-CHAP attributes for 042-045.
if [[ ,$targets, == *,mpnvme-target,* ]]; then
  [[ ,$guest_tests, == *,057,* ]] && ! grep -q 'ANA group [0-9]*: inaccessible' "$state/target.log" &&
    fail "nvme/057 changed no ANA state on mpnvme-target"
  for t in 042 043 044 045; do
    [[ ,$guest_tests, == *,$t,* ]] && ! grep -q 'DH-HMAC-CHAP keys set by the control socket' "$state/target.log" &&
      fail "nvme/$t set no DH-HMAC-CHAP attribute on mpnvme-target"
  done
fi
grep -a 'WARNING\|BUG:\|Oops' <<<"$log" | grep -v 'blktests-run' | head -5
((rc == 0)) || fail "a test that passes against nvmet did not pass against mpnvme-target, or a required test did not pass"
echo PASS
