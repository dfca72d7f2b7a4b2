#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Secure channel concatenation against mpnvme-target from a host the
engine would never be (tests/pylib/concat_peer.py), the holes a hostile
probe found, each checked:
  - the generated PSK both sides derive (this host's derivation is
    Python's), and a queue on it needs no DH-HMAC-CHAP;
  - REPLACETLSPSK retires the PSK it replaces;
  - a transaction finished with a key rotated out while it ran mints no
    PSK (before: one that outlived the rotation);
  - `host deny` shuts out a host admitted by its key (before: ok, and
    nothing changed);
  - an identity with control characters fails (the log escapes them;
    concat.sh reads it).
  concat_hostile.py ADDR PORT SUBNQN HOSTNQN KEY NEWKEY CTL...
KEY and NEWKEY: files with the host's DH-HMAC-CHAP secret and the one the
control socket rotates to; CTL...: the words that run `mpnvme-target ctl
SOCKET` (in the target's namespace). Prints ok:/FAIL: lines; exit 1 on a
failure."""
import os
import socket
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from concat_peer import Queue, Stream, Transaction  # noqa: E402

addr, port, sub, host, key_file, new_file = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), sys.argv[4].encode(), \
    sys.argv[5], sys.argv[6]
ctl_words = sys.argv[7:]
key, new_key = open(key_file).read().strip(), open(new_file).read().strip()
ATR = 1 << 17
failures = 0


def check(ok, what):
    global failures
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    failures += not ok


def ctl(*words):
    r = subprocess.run(ctl_words + list(words), capture_output=True, text=True)
    return r.returncode == 0


def forgive():
    """A refused handshake counts as a failed authentication: the address
    waits (concat.sh starts the target with a long --auth-backoff). The
    control socket lets it in again."""
    with socket.create_connection((addr, port), timeout=5) as s:
        me = s.getsockname()[0]
    ctl("backoff", "forgive", me)


def plain_admin(kato=0):
    q = Queue(Stream(addr, port), host, sub)
    return q, q.connect(kato=kato)


def tls_admin(identity, psk):
    q = Queue(Stream(addr, port, identity, psk), host, sub)
    return q, q.connect()


def concat(secret, t_id):
    """A plaintext admin queue's NEWTLSPSK transaction: (identity, psk) or None."""
    q, (status, dw0) = plain_admin()
    t = Transaction(q, t_id)
    ok = status == 0 and dw0 & ATR and t.negotiate() and t.reply(secret)
    q.close()
    return t.generated(host, sub) if ok else None


# 1. The PSK both sides derive; its queue needs no further authentication.
gen = concat(key, 1)
check(gen is not None, "NEWTLSPSK transaction with the host's key: Success1")
q, (status, dw0) = tls_admin(*gen)
check(status == 0 and not dw0 & ATR and q.property_get(0)[0] == 0,
      f"TLS admin queue on the PSK this host derived itself ({gen[0][:40]}...): Connect without AUTHREQ, Property Get served")

# 2. REPLACETLSPSK on that queue: the new PSK opens queues, the old no more.
t = Transaction(q, 2, sc_c=3)
replaced = t.negotiate() and t.reply(key)
new = t.generated(host, sub) if replaced else None
q.close()
check(replaced, "REPLACETLSPSK on the TLS admin queue: Success1")
new_q, (new_status, _) = tls_admin(*new) if new else (None, (None, None))
if new_q:
    new_q.close()
old_q, (old_status, _) = tls_admin(*gen)
old_q.close()
forgive()
check(old_status is None and new_status == 0, f"after REPLACETLSPSK the old PSK opens nothing (status {old_status}), "
      f"the new one a controller (status {new_status})")

# 3. The key rotated out while a transaction ran: that transaction mints no PSK.
q, (status, dw0) = plain_admin(kato=60000)
t = Transaction(q, 3)
started = bool(status == 0 and t.negotiate())
rotated = ctl("host", "key", host.decode(), f"dhchap_key=@{new_file}")
# The old key: nvmet and mpnvme-target both let a transaction finish with
# the key it began with.
late = t.generated(host, sub) if started and t.reply(key) else ("NVMe1G01 none", os.urandom(32))
q.close()
lq, (late_status, _) = tls_admin(*late)
lq.close()
forgive()
check(started and rotated and late_status is None,
      f"a transaction finished with the key rotated out while it ran: its PSK opens nothing (status {late_status})")
check(concat(new_key, 4) is not None, "after the rotation the new key generates PSKs")

# 4. `host deny` shuts out a host that its key admits.
denied = ctl("host", "deny", sub.decode(), host.decode())
q, (status, _) = plain_admin()
q.close()
allowed = ctl("host", "allow", sub.decode(), host.decode())
q, (again, _) = plain_admin()
q.close()
check(denied and status not in (None, 0) and allowed and again == 0,
      f"host deny of a keyed host: Connect refused ({status:#x}); host allow lets it in again ({again})"
      if status is not None else "host deny of a keyed host: Connect refused; host allow lets it in again")

# 5. Control characters in a ClientHello's identity: refused.
q, (status, _) = tls_admin(f"NVMe1G01 nqn.x:\x1b[31mRED\x1b[0m {sub.decode()} AAAA", os.urandom(32))
q.close()
check(status is None, "an identity with control characters fails the handshake")
sys.exit(1 if failures else 0)
