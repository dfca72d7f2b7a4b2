#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Seed corpus for fuzz_control: each command of the control socket's
table, well formed and with the mistakes a client makes (a key where its
attribute's name belongs, a missing argument, an unknown verb).
Usage: seeds_control.py OUTDIR"""
import os
import sys

sys.dont_write_bytecode = True  # tests/pylib is the checkout's: no .pyc beside it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from nvmetcp import write_seeds  # noqa: E402

KEY = "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:"
SUB, HOST = "nqn.2026-12.io.mpnvme:fuzz", "nqn.2026-12.io.mpnvme:h"
lines = {
    "help": "help",
    "stats": "stats",
    "ana": "ana 1 1 inaccessible\nana 1 1 optimized",
    "port": "port 1 down\nport 1 up",
    "backoff": "backoff\nbackoff forgive 10.0.0.1",
    "add": f"subsystem add nqn.2026-12.io.mpnvme:x host={HOST} serial=S model=M ram:1m null:2m,lba=4096,nsid=7",
    "add-any": "subsystem add nqn.2026-12.io.mpnvme:y any-host ram:1m,uuid=91fdba0d-f87b-4c25-b80f-db7be1418b9e",
    "add-file": "subsystem add nqn.2026-12.io.mpnvme:z file:/etc/shadow",
    "remove": "subsystem add nqn.2026-12.io.mpnvme:r ram:1m\nsubsystem remove nqn.2026-12.io.mpnvme:r",
    "list": "subsystems",
    "allow-deny": f"host allow {SUB} {HOST}\nhost deny {SUB} {HOST}\nhost deny {SUB} {HOST}",
    "key": f"host key {HOST} dhchap_key={KEY} dhchap_ctrl_key={KEY} dhchap_hash=sha256 dhchap_dhgroup=null\nhost forget {HOST}",
    "key-bare": f"host key {HOST} {KEY}",
    "key-bad": f"host key {HOST} dhchap_key=DHHC-1:00:not*base64:",
    "port-tls": "port tls 1 required\nport tls 1 optional\nport tls 1 none\nport tls 1 maybe",
    "tls-key": f"host tls-key {HOST} NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:\nhost tls-key {HOST} -\n"
               f"host tls-key {HOST} -\nhost tls-key {HOST} NVMeTLSkey-1:01:not*base64:",
    "deny-keyed": f"host key {HOST} dhchap_key={KEY}\nhost deny {SUB} {HOST}\nhost allow {SUB} {HOST}",
    "unknown": "subsystem frobnicate\nfrobnicate\nhost",
    # fuzz_control's finding: the given word "or:" redacted inside "error:"
    "status-word": "port or: port: argument 2 is not a port of this target",
    # fuzz_control's finding: a size's text (the part after "null:") quoted
    # with a key inside it
    "size-part": f"subsystem add nqn.2026-12.io.mpnvme:r null:1zm.{KEY}",
}
write_seeds(sys.argv[1], {k: v.encode() for k, v in lines.items()})
