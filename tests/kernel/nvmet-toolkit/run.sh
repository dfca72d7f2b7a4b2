#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# mpnvme-nvmet and mpnvme-iopolicy on a real kernel (qemu lab): apply a
# two-path job on the guest's nvmet, run the engine from this machine against
# it with the same job file, connect the guest's kernel host, every iopolicy
# with its per-path I/O split, the error paths, save/clear/restore.
#   tests/kernel/nvmet-toolkit/run.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
state=$(mktemp -d /tmp/mpnvme-nvmetlab.XXXXXX)
cd "$state" || exit 1 # what fio writes stays out of the checkout
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
source "$here/../../../qemu-lab/machine.sh"
go=$(free_port)
# The guest waits on this port while the engine runs against its nvmet.
python3 - "$go" "$state/go-release" <<'PY' &
import os, socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); s.settimeout(600)
c, _ = s.accept()
while not os.path.exists(sys.argv[2]): time.sleep(0.2)
c.sendall(open(sys.argv[2]).read().encode()); c.close()
PY
gopid=$!
cleanup() {
  "$qemu_lab/lab.sh" stop "$state"
  kill "$gopid" 2>/dev/null
  [[ -n ${MPNVME_KEEP_CONSOLE:-} ]] && cp "$state/console.log" "$MPNVME_KEEP_CONSOLE"
  rm -rf "$state"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; console | grep -a '^TK' | tail -40; exit 1; }

MPNVME_LAB_BINARIES="$build/toolkit/nvmet/mpnvme-nvmet $build/toolkit/iopolicy/mpnvme-iopolicy $(command -v setpriv)" \
MPNVME_LAB_FILES="$here/../shared/nvmet-two-paths.fio $here/nvmetcli-example.json $here/../shared/auth-keys.sh $here/../shared/tls-keys.sh" \
MPNVME_LAB_TLS=1 MPNVME_LAB_FWD=4421 MPNVME_LAB_APPEND="mp.go=$go" \
  "$qemu_lab/lab.sh" start "$state" "$here/guest.sh" || fail "guest did not boot"

wait_for 'TK (engine-ready|done)' 120
console | grep -a '^TK' | head -8
# The engine on this machine, same job file, against the guest's nvmet.
export MPNVME_ENGINE=$build/engine/fio-mpnvme.so MPNVME_TRADDR1=127.0.0.1 MPNVME_PORT1=$(cat "$state/port")
export MPNVME_TRADDR2=127.0.0.1 MPNVME_PORT2=$(cat "$state/port-4421")
preload=""
[[ $(nm -D "$MPNVME_ENGINE" | grep -c __asan_init) != 0 ]] && preload=$(gcc -print-file-name=libasan.so)
LD_PRELOAD=$preload fio --output-format=json --output="$state/engine.json" "$here/../shared/nvmet-two-paths.fio" 2>"$state/engine.log"
rc=$?
cat "$state/engine.log"
echo "engine rc=$rc" > "$state/go-release"
# fio writes its log lines into --output too: the engine's reason is there.
((rc == 0)) || { grep -a 'mpnvme' "$state/engine.json" | grep -v '^ *"' | head -5; fail "the engine failed against the nvmet configured by mpnvme-nvmet"; }
sed -n '/^{/,$p' "$state/engine.json" | jq -r '.jobs[] | "ok: engine vs nvmet from the same job file: wrote \(.write.io_bytes) B, verified \(.read.io_bytes) B"'

wait_for 'TK done' 300
console | grep -a '^TK' | sed -n '/engine run finished/,$p'
seen '^TK FAIL' && fail "guest checks failed"
split() { # POLICY -> "a b": reads per path during that policy's run
  console | grep -a "^TK split $1 " | awk '{
    for (i = 4; i <= NF; i++) if ($i ~ /=/) { split($i, kv, "="); if (!(kv[1] in b)) b[kv[1]] = kv[2]; else a[kv[1]] = kv[2] - b[kv[1]] }
    for (k in a) printf "%d ", a[k] }'
}
for pol in numa round-robin queue-depth; do echo "iopolicy $pol: reads per path: $(split $pol)"; done
# Both paths must be counted (numbers, not empty output) before a zero
# means anything.
counted() { [[ ${1:-} =~ ^[0-9]+$ && ${2:-} =~ ^[0-9]+$ ]]; }
# queue-depth arrived in Linux 6.11: before, mpnvme-iopolicy must refuse
# it; from then on the reads go through it (dd reads one at a time, so the
# policy may keep them on one path: counted, not spread).
kv=$(console | grep -ao 'MPNVME-LAB-READY kernel [0-9]*\.[0-9]*' | head -1 | awk '{ split($3, v, "."); print v[1] * 100 + v[2] }')
[[ $kv =~ ^[0-9]+$ ]] || fail "the guest's kernel version is not on its console"
if ((kv >= 611)); then
  read -r a b <<<"$(split queue-depth)"
  counted "$a" "$b" && ((a + b > 1000)) && echo "ok: queue-depth carries the reads ($a/$b per path)" ||
    fail "queue-depth: reads not counted (${a:-none}/${b:-none})"
else
  seen 'refused: .*queue-depth policy needs Linux 6.11' && echo "ok: queue-depth refused before Linux 6.11, saying so" ||
    fail "queue-depth was not refused on Linux $kv"
fi
read -r a b <<<"$(split round-robin)"
counted "$a" "$b" && ((a > 1000 && b > 1000)) && echo "ok: round-robin spreads reads over both paths" ||
  fail "round-robin did not spread (${a:-none}/${b:-none})"
read -r a b <<<"$(split numa)"
counted "$a" "$b" && ((a + b > 1000 && (a == 0 || b == 0))) && echo "ok: numa keeps reads on one path" ||
  fail "numa used both paths or was not counted (${a:-none}/${b:-none})"
echo PASS
