#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""secret_scan.py PID KEY: whether a process keeps KEY (in NVMe's text form,
PREFIX:NN:BASE64:, a DH-HMAC-CHAP secret or a TLS PSK) only where a core
dump leaves it out. Reads every readable mapping of PID (root) for the
key's base64 text and for its bytes. Exit 0 when the bytes are held in a
mapping marked dd (MADV_DONTDUMP) and neither form is in any other; else
1, printing where each was found."""
import base64
import re
import sys

DD_SCAN_MAX = 64 << 20  # key pages are small; ASan's shadow (dd, terabytes) is not read


def mappings(pid):
    maps, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)", line)
            if m:
                cur = {"lo": int(m[1], 16), "hi": int(m[2], 16), "perm": m[3], "name": m[4], "dd": False}
                maps.append(cur)
            elif line.startswith("VmFlags:") and cur:
                cur["dd"] = " dd" in line
    return maps


def main():
    pid, key = sys.argv[1], sys.argv[2].strip()
    text = key.split(":")[2]
    needles = {"bytes": base64.b64decode(text)[:-4], "text": text.encode()}  # the key without its CRC-32
    held, exposed = [], []
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for mp in mappings(pid):
            size = mp["hi"] - mp["lo"]
            if "r" not in mp["perm"] or size > (DD_SCAN_MAX if mp["dd"] else 1 << 32):
                continue
            try:
                mem.seek(mp["lo"])
                data = mem.read(size)
            except OSError:
                continue  # e.g. [vvar]
            for what, needle in needles.items():
                if needle in data:
                    (held if mp["dd"] else exposed).append(f"{what} at {mp['lo']:x}-{mp['hi']:x} {mp['perm']} {mp['name']}")
    for where in exposed:
        print(f"dumpable: {where}")
    if not any(h.startswith("bytes") for h in held):
        print("the key's bytes are on no page marked dd")
    return 0 if not exposed and any(h.startswith("bytes") for h in held) else 1


if __name__ == "__main__":
    sys.exit(main())
