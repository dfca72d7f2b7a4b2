# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the kernel-lab scripts: free ports and the guest's console.
# `state` is the lab's state directory; `fail` is the sourcing script's.

# A loopback TCP port nobody listens on right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The guest's serial console, without the \r of its line ends.
console() { tr -d '\r' <"$state/console.log"; }

# Whether a console line matches REGEX. No pipe into grep -q: under
# pipefail its early exit would kill the writer and turn a match into a miss.
seen() { grep -aqE -- "$1" <<<"$(console)"; }

# Wait up to TIMEOUT seconds for a console line matching REGEX.
wait_for() { # REGEX TIMEOUT
  local t=$((SECONDS + $2))
  while ((SECONDS < t)); do
    seen "$1" && return 0
    sleep 0.5
  done
  fail "guest did not print /$1/ within $2 s"
}
