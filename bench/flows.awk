# SPDX-License-Identifier: GPL-2.0-only
# The TCP flows of a lab, from `ss -tinH state established '( dport = :PORT )'`
# in its host namespace (MPTCP subflows are TCP sockets and count one by
# one): per path (the peer 10.1.i.1), how many flows have carried data (256
# KiB or more either way: an admin queue's keep-alives do not make a flow
# that shares out a path) and their median smoothed round trip in ms.
# Shared by bench/guest-bench.sh (inside the guest) and bench/samplers.py.
# One output line: "F1 ... FN R1 ... RN" for paths=N.
#   awk -v paths=N -f flows.awk
function flush() {
  if (path && bytes >= 262144) { n[path]++; rtts[path, n[path]] = rtt }
  path = 0; bytes = 0; rtt = 0
}
/^[0-9]/ { # a socket: Recv-Q Send-Q local peer
  flush()
  split($4, a, ":"); split(a[1], o, ".")
  path = o[3] + 0
  next
}
{ # its information line
  for (i = 1; i <= NF; i++) {
    if ($i ~ /^bytes_(acked|received):/) { split($i, kv, ":"); bytes += kv[2] }
    if ($i ~ /^rtt:/) { split(substr($i, 5), r, "/"); rtt = r[1] + 0 }
  }
}
END {
  flush()
  line = ""
  for (p = 1; p <= paths; p++) line = line (p > 1 ? " " : "") (n[p] + 0)
  for (p = 1; p <= paths; p++) {
    m = n[p] + 0
    for (i = 1; i <= m; i++) v[i] = rtts[p, i]
    for (i = 2; i <= m; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    line = line " " (m ? v[int((m + 1) / 2)] : 0)
  }
  print line
}
