#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# A packet capture without tcpdump: every frame of every interface of the
# network namespace this runs in (AF_PACKET), until OUT.stop exists, then
# one JSON line: frames, TCP payload bytes, and how often PATTERN (hex)
# appears in the frames. What a secure channel must hide, a plaintext run
# shows: the test runs both.
import json
import os
import socket
import sys

pattern = bytes.fromhex(sys.argv[1])
out = sys.argv[2]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
s.settimeout(0.2)
frames = nbytes = hits = 0
with open(out + ".ready", "w"):
    pass
while not os.path.exists(out + ".stop"):
    try:
        frame = s.recv(262144)
    except socket.timeout:
        continue
    except InterruptedError:
        continue
    frames += 1
    nbytes += len(frame)
    hits += frame.count(pattern)
with open(out, "w") as f:
    json.dump({"frames": frames, "bytes": nbytes, "hits": hits}, f)
    f.write("\n")
