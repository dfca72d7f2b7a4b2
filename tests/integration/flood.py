#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A Connect storm for the ThreadSanitizer stress test: THREADS threads,
each for SECONDS connecting again and again to TARGET: an ICReq, an admin
Connect to one of the SUBNQNs as one of a few hosts (some refused), now and
then CC.EN and an I/O queue, a Disconnect or a drop. Meanwhile a prober
checks every second that a new connection still gets its ICResp: a target
deadlocked on its locks stops answering (4bcf7ad did within 10 s).
Prints the counts; exit status 1 when a probe went unanswered.
Usage: flood.py TARGET SECONDS THREADS SUBNQN..."""
import os
import random
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from nvmehost import Closed, Queue  # noqa: E402

addr, seconds, threads, subnqns = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), [s.encode() for s in sys.argv[4:]]
hosts = [f"nqn.2026-12.io.mpnvme:flood-{i}".encode() for i in range(4)]
end = time.monotonic() + seconds
counts = {"connects": 0, "refused": 0, "io": 0, "errors": 0}
lock = threading.Lock()
stalled = []


def count(k):
    with lock:
        counts[k] += 1


def storm(seed):
    rnd = random.Random(seed)
    while time.monotonic() < end:
        try:
            q = Queue(addr, timeout=5)
            st, cntlid = q.connect(rnd.choice(subnqns), rnd.choice(hosts), bytes([seed]) * 16, kato=5000)
            count("connects" if st == 0 else "refused")
            if st == 0 and rnd.random() < 0.5 and q.enable() == 0:
                io = Queue(addr, timeout=5)
                if io.connect(q.subnqn, q.hostnqn, bytes([seed]) * 16, qid=1, cntlid=cntlid & 0xFFFF)[0] == 0:
                    count("io")
                io.close()
            q.close()
        except (Closed, OSError):
            count("errors")


def probe():
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            Queue(addr, timeout=5).close()
        except (Closed, OSError) as e:
            stalled.append(f"{time.monotonic() - t0:.1f} s: {e}")
        time.sleep(1)


workers = [threading.Thread(target=storm, args=(i,)) for i in range(threads)] + [threading.Thread(target=probe)]
for w in workers:
    w.start()
for w in workers:
    w.join()
print(f"flood: {counts['connects']} controllers, {counts['io']} I/O queues, {counts['refused']} refused Connects, "
      f"{counts['errors']} dropped by the target", flush=True)
if stalled:
    print(f"FAIL: the target did not answer a new connection: {stalled[:3]}")
    sys.exit(1)
print("ok: a new connection was answered every second of the storm")
