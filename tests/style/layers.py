#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The layers of the tree, checked on its includes. Every project include is
written from the repository root ("lib/wire/pdu.hpp"), and a folder includes
only itself and the folders it stands on:

  lib/base < lib/crypto, lib/wire, lib/net < lib/auth, lib/tls < lib/config
  < the two roles (engine/, mpnvme-target/), toolkit/ and bench/

and inside the target, in layers of its own:

  backend < core < transport, control < the program (mpnvme-target/*.cpp)

so nothing in lib/ reaches up into a role, the roles do not reach into each
other, a layer of lib/ never sideways (wire does not know sockets, auth
does not know TLS), and the target's controller core knows no PDU or
socket. tests/ may include anything. Prints every offender;
exit 1 if any."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
LIB = ("lib/base", "lib/crypto", "lib/wire", "lib/net", "lib/auth", "lib/tls", "lib/config")
ALLOWED = {
    "lib/base": set(),
    "lib/crypto": {"lib/base"},
    "lib/wire": {"lib/base"},
    "lib/net": {"lib/base"},
    "lib/auth": {"lib/base", "lib/crypto"},
    "lib/tls": {"lib/base", "lib/crypto", "lib/net"},
    "lib/config": set(LIB[:-1]),
    "engine": set(LIB),
    "mpnvme-target/backend": set(LIB),
    "mpnvme-target/core": set(LIB) | {"mpnvme-target/backend"},
    "mpnvme-target/transport": set(LIB) | {"mpnvme-target/backend", "mpnvme-target/core"},
    "mpnvme-target/control": set(LIB) | {"mpnvme-target/backend", "mpnvme-target/core"},
    "mpnvme-target": set(LIB) | {f"mpnvme-target/{p}" for p in ("backend", "core", "transport", "control")},
    "toolkit": set(LIB),
    "bench": set(LIB),
}
# Headers of fio's source tree, found through FIO_SRC, not in this repository.
FOREIGN = {"engine/fio_glue.c": {"fio.h", "optgroup.h"}}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder(rel):
    """The layer a repository path belongs to, or None (tests/, ...)."""
    for f in sorted(ALLOWED, key=len, reverse=True):
        if rel == f or rel.startswith(f + "/"):
            return f
    return None


bad = []
SOURCES = ("lib", "engine", "mpnvme-target", "toolkit", "bench", "tests")
for path in sorted(p for d in SOURCES for p in (root / d).rglob("*") if p.suffix in (".c", ".cpp", ".h", ".hpp")):
    rel = path.relative_to(root).as_posix()
    mine = folder(rel)
    for inc in INCLUDE.findall(path.read_text(errors="replace")):
        if inc in FOREIGN.get(rel, ()):
            continue
        if not (root / inc).is_file():
            bad.append(f"{rel}: #include \"{inc}\": not a path from the repository root")
            continue
        theirs = folder(inc)
        if mine is None or theirs is None or theirs == mine:
            continue
        if theirs not in ALLOWED[mine]:
            bad.append(f"{rel}: #include \"{inc}\": {mine} may not depend on {theirs}")
for b in bad:
    print(b)
print(f"{len(bad)} include(s) against the layers")
sys.exit(1 if bad else 0)
