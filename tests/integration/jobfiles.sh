#!/bin/bash
# Every job file in jobs/ drives both sides unchanged: mpnvme-target --job
# serves what the file expects (no size= needed), and fio runs the file
# through the engine against it, with the environment its header lists.
source "$(dirname "$0")/lib.sh"
lab_up --paths 2
export MPNVME_ENGINE=$ENGINE MPNVME_TRADDR=10.1.1.1,10.1.2.1 MPNVME_PORT=4420 MPNVME_SUBNQN=$NQN
export MPNVME_TRANSPORT=mptcp MPNVME_IOPOLICY=round-robin MPNVME_PRIO=3
for file in "$root"/jobs/*.fio; do
  name=$(basename "$file" .fio)
  # every variable the file reads is listed in its header
  for var in $(grep -o '\${MPNVME_[A-Z0-9_]*}' "$file" | sort -u | tr -d '${}'); do
    grep -q "^;.*$var" "$file" || fail "$name: \${$var} is read but not listed in the header"
  done
  start_target --job "$file" --log-level warn
  in_host env LD_PRELOAD="${MPNVME_PRELOAD:-}" ASAN_OPTIONS="$ASAN_OPTIONS" timeout -s INT 180 \
    fio --output-format=json --output="$work/$name.json" "$file" 2>"$work/$name.log"
  rc=$?
  bytes=$(json "$name" | jq '[.jobs[] | .read.io_bytes + .write.io_bytes] | add')
  if ((rc == 0)) && [[ $bytes -gt 0 ]]; then
    pass "$name: served by --job and run by fio unchanged ($((bytes >> 20)) MiB)"
  else
    cat "$work/$name.log"; fail "$name: fio exited $rc, $bytes bytes"
  fi
  stop_target || fail "$name: target exit status"
done
finish
