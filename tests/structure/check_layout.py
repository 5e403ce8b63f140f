#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The tree's shape, checked (docs/design.md, Layout): check_layout.py SOURCE_DIR BUILD_DIR.

  - no source file (.c, .cu, .h) outside tests/ and bench/ is over 800 lines;
  - no two headers share a file name;
  - no import circles: between the modules (a .c and its .h are one module) of each component
    (common/, tuner-plugin/, profiler-plugin/, tools/<tool>/ and, inside tools/report/, between
    its folders and between the modules of each folder);
  - every tool parses its command line through common/cli (cli.h) and none reads argv by hand
    beyond handing it to getopt_long;
  - no shipped target (a library or program defined outside tests/ and bench/) builds from tests/.
An X_internal.h belongs to module X. A module imports another when one of its files #includes the other's header, or calls (uses) a
name that only the other defines (read from the build's object files with nm). Prints every
violation and exits 1 if there is any."""
import os
import re
import subprocess
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.getcwd())
build = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
problems = []
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SKIP = ("tests/", "bench/", "build", ".git/", ".dev/", "shared/")


def rel(p):
    return os.path.relpath(p, root)


files = []
for d, dirs, names in os.walk(root):
    r = rel(d)
    if r != "." and (r + "/").startswith(SKIP):
        dirs[:] = []
        continue
    dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
    for n in names:
        if n.endswith((".c", ".h", ".cu")):
            files.append(os.path.join(d, n))

# 1. sizes
for f in files:
    n = sum(1 for _ in open(f, errors="replace"))
    if n > 800:
        problems.append(f"{rel(f)}: {n} lines (over 800)")

# 2. header names (every header of the tree, tests and bench included: they include ours)
headers = {}
for d, dirs, names in os.walk(root):
    r = rel(d)
    if r != "." and (r.startswith((".git", "build", ".dev", "shared")) or "/build" in r):
        dirs[:] = []
        continue
    for n in names:
        if n.endswith(".h"):
            headers.setdefault(n, []).append(rel(os.path.join(d, n)))
for n, where in sorted(headers.items()):
    if len(where) > 1:
        problems.append(f"header name {n} used {len(where)} times: {', '.join(sorted(where))}")


# 3. import circles
def component(path):
    p = rel(path).split("/")
    if p[0] == "tools":
        return "/".join(p[:2])
    return p[0]


def module(path):
    m = os.path.splitext(rel(path))[0]
    # X_internal.h is X's own: what X's files share and nobody else includes
    return m[: -len("_internal")] if path.endswith("_internal.h") else m


by_header = {}
for f in files:
    if f.endswith(".h"):
        by_header.setdefault(os.path.basename(f), []).append(f)
        by_header.setdefault(rel(f), []).append(f)


def resolve(inc, src):
    cand = os.path.normpath(os.path.join(os.path.dirname(src), inc))
    if os.path.exists(cand):
        return cand
    hits = by_header.get(inc) or by_header.get(os.path.basename(inc)) or []
    same = [h for h in hits if component(h) == component(src)]
    return (same or hits or [None])[0]


edges = {}
for f in files:
    src_mod = module(f)
    for inc in INCLUDE.findall(open(f, errors="replace").read()):
        h = resolve(inc, f)
        if not h or component(h) != component(f):
            continue
        dst = module(h)
        if dst != src_mod:
            edges.setdefault(src_mod, set()).add(dst)


def sccs(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    nodes = set(graph) | {v for vs in graph.values() for v in vs}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


# names one module uses that another alone defines (the build's objects)
if build:
    objs = {}
    for d, dirs, names in os.walk(build):
        for n in names:
            if not n.endswith((".c.o", ".cu.o")) or "CMakeFiles" not in d:
                continue
            o = os.path.join(d, n)
            sub = o.split(".dir/", 1)[1][: -len(".o")] if ".dir/" in o else None
            if not sub:
                continue
            # CMake keeps the source's path below the target's folder, itself below the folder
            # of the CMakeLists.txt that made the target
            home = os.path.relpath(o.split("/CMakeFiles/", 1)[0], build)
            c = os.path.normpath(os.path.join(root, home, sub))
            if os.path.exists(c) and not (rel(c) + "/").startswith(SKIP):
                objs.setdefault(c, o)
    defined, used = {}, {}
    for src, o in objs.items():
        out = subprocess.run(["nm", o], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                used.setdefault(src, set()).add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBRC":
                defined.setdefault(parts[2], set()).add(module(src))
    for src, names in used.items():
        for name in names:
            owners = defined.get(name, ())
            if len(owners) == 1:
                dst = next(iter(owners))
                if dst != module(src) and component(dst + ".c") == component(src):
                    edges.setdefault(module(src), set()).add(dst)

# modules of one folder
by_folder = {}
for a, bs in edges.items():
    for b in bs:
        if os.path.dirname(a) == os.path.dirname(b):
            by_folder.setdefault(os.path.dirname(a), {}).setdefault(a, set()).add(b)
for folder, g in sorted(by_folder.items()):
    for c in sccs(g):
        problems.append(f"import circle in {folder}/: {' -> '.join(os.path.basename(x) for x in c)}")
# folders of one component
folders = {}
for a, bs in edges.items():
    for b in bs:
        fa, fb = os.path.dirname(a), os.path.dirname(b)
        if fa != fb and component(a + ".c") == component(b + ".c"):
            folders.setdefault(fa, set()).add(fb)
for c in sccs(folders):
    problems.append(f"import circle between folders: {' -> '.join(c)}")

# 4. command lines through common/cli
for f in files:
    if not f.endswith(".c") or not rel(f).startswith("tools/"):
        continue
    text = open(f, errors="replace").read()
    if re.search(r"\bint\s+main\s*\(\s*int\s+\w+\s*,\s*char\s*\*", text):
        if "cli.h" not in text:
            problems.append(f"{rel(f)}: main() without common/cli (cli.h)")
        if "getopt_long" not in text and "topo_cli_" not in text:
            problems.append(f"{rel(f)}: main() reads its command line without getopt_long")

# 5. no shipped target builds from tests/: a library or program defined outside tests/ and bench/
#    lists no source under tests/
for d, dirs, names in os.walk(root):
    r = rel(d)
    if r != "." and (r + "/").startswith(SKIP):
        dirs[:] = []
        continue
    dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
    for n in names:
        if n != "CMakeLists.txt" and not n.endswith(".cmake"):
            continue
        text = re.sub(r"#[^\n]*", "", open(os.path.join(d, n), errors="replace").read())
        for m in re.finditer(r"\badd_(library|executable)\s*\(([^)]*)\)", text):
            if re.search(r"(^|[/\s}])tests/", m.group(2)):
                problems.append(f"{rel(os.path.join(d, n))}: {m.group(2).split()[0]} builds from tests/")

for p in problems:
    print(p)
print(f"check_layout: {len(files)} files, {len(problems)} problems")
sys.exit(1 if problems else 0)
