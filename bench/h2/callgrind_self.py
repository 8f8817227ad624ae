#!/usr/bin/env python3
"""Self cost (Ir) per function of a callgrind output file, divided by a
request count: callgrind_annotate's inclusive figures are meaningless
for OCaml 5 fibers (stacks switch under it), self costs are not.

    callgrind_self.py FILE REQUESTS [TOP]
"""
import re
import sys

path, n = sys.argv[1], int(sys.argv[2])
top = int(sys.argv[3]) if len(sys.argv) > 3 else 15
names = {}
self_cost = {}
fn = None
skip_next = False
ref = re.compile(r"^(c?fn)=\((\d+)\)(?: (.*))?$")
for line in open(path, errors="replace"):
    m = ref.match(line)
    if m:
        kind, ident, name = m.groups()
        if name:
            names[ident] = name.strip()
        if kind == "fn":
            fn = ident
        continue
    if line.startswith("calls="):
        skip_next = True  # the next cost line is the call's inclusive cost
        continue
    if line and (line[0].isdigit() or line[0] in "+-*"):
        if skip_next:
            skip_next = False
            continue
        parts = line.split()
        if len(parts) >= 2 and fn is not None:
            self_cost[fn] = self_cost.get(fn, 0) + int(parts[1])
total = sum(self_cost.values())
print(f"{total // n} instructions per request")
for ident, c in sorted(self_cost.items(), key=lambda kv: -kv[1])[:top]:
    print(f"{c // n:9d}  {names.get(ident, ident)}")
