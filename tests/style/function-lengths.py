#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""No function in lib/, the roles, toolkit/ or bench/ longer than 80 lines (
split by what the code is about). Functions are found as clang-format lays
them out: a definition's header ends with '{' at column 0 nesting (namespace
scope), its body ends with the matching '}' at column 0. Lines are counted
from the header to the closing brace. Prints every offender; exit 1 if any."""
import pathlib
import re
import sys

LIMIT = 80
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
# A definition header: starts at column 0 with a type or name and a
# parameter list, and opens its body on its last line (clang-format may wrap
# the parameters onto indented lines).
START = re.compile(r"^(?!namespace|extern|struct|class|enum|union|static_assert|template|using|#)[A-Za-z_][^;]*\(")
bad = []
for path in sorted(p for d in ("lib", "engine", "mpnvme-target", "toolkit", "bench") for p in (root / d).rglob("*") if p.suffix in (".c", ".cpp", ".hpp", ".h")):
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        end = i
        while START.match(lines[i]) and end < min(i + 6, len(lines) - 1) and not lines[end].rstrip().endswith(("{", ";")):
            end += 1
        if START.match(lines[i]) and lines[end].rstrip().endswith("{") and not lines[end].rstrip().endswith("= {"):
            start = i
            j = end + 1
            while j < len(lines) and not lines[j].startswith("}"):
                j += 1
            n = j - start + 1
            if n > LIMIT:
                bad.append(f"{path.relative_to(root)}:{start + 1}: {n} lines: {lines[start].strip()[:90]}")
            i = j
        i += 1
for b in bad:
    print(b)
print(f"{len(bad)} function(s) over {LIMIT} lines")
sys.exit(1 if bad else 0)
