#!/usr/bin/env python3
"""The file-level call graph of the client driver (lib/CL/devices/remote, both
layers, and the client's sides of the transports,
protocol/transports/*/client_*.c, which are the channel's), for
remote/layering (test_layering.sh): no file may call into a file that calls
it, directly or around a cycle, and no header may include itself around a
cycle.

A grep-level approximation of C: comments, strings and character literals are
dropped; a file defines the functions whose name starts a line followed by
"(" and, after the parameters, "{"; those named pocl_remote_* or remote_* and
not static are what other files can call.  A file uses another's function
where the name appears as an identifier (called, or taken as a pointer) not
after "." or "->".  A macro, or a static inline function of one of the
directory's headers, counts as what it uses, in each file that uses it.

  call_graph.py [--graph] REMOTE_DRIVER_DIR PROTOCOL_DIR
Prints "cycle: ..." lines and exits 1 on a cycle; --graph prints each file's
includes and the files it calls, with the functions.
"""

import os
import re
import sys

# Calls that close a cycle but stay for now, each with its reason, as
#   ("channel/a.c", "channel/b.c"): "why a.c still calls b.c",
# left out of the graph and printed on every run; the check fails on one that
# no longer exists, so that the list stays true.  None at present.
KNOWN = {}

EXPORTED = re.compile(r"(pocl_remote_|remote_)\w+$")
TOKEN = re.compile(
    r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
IDENT = re.compile(r"(?<![\w.])(?<!->)([A-Za-z_]\w*)")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def strip(text):
    """Comments and literals blanked (newlines kept, so lines stay lines)."""
    def blank(m):
        s = m.group(0)
        if s[0] in "\"'":
            return s[0] + s[0]
        return re.sub(r"[^\n]", " ", s)
    return TOKEN.sub(blank, text)


def matching(text, i, open_c, close_c):
    """Index after the bracket that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_c:
            depth += 1
        elif text[j] == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def parse(text):
    """Functions defined: name -> (static, body); macros: name -> body;
    and the text without the macros."""
    funcs, macros = {}, {}
    code = text
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)((?:[^\n]*\\\n)*[^\n]*)",
                         text, re.M):
        macros[m.group(1)] = m.group(2)
        code = code.replace(m.group(0), " " * len(m.group(0)), 1)
    for m in re.finditer(r"^([A-Za-z_]\w*)[ \t]*\(", code, re.M):
        end = matching(code, m.end() - 1, "(", ")")
        rest = re.match(r"(?:\s|__attribute__\s*\(\(.*?\)\))*", code[end:], re.S)
        brace = end + rest.end()
        if brace >= len(code) or code[brace] != "{":
            continue
        head = code[max(0, code.rfind(";", 0, m.start()),
                        code.rfind("}", 0, m.start())):m.start()]
        body = code[brace:matching(code, brace, "{", "}")]
        funcs[m.group(1)] = (re.search(r"\bstatic\b", head) is not None, body)
    return funcs, macros, code


def main(argv):
    args = [a for a in argv[1:] if a != "--graph"]
    if (len(args) != 2 or not os.path.isdir(os.path.join(args[0], "channel"))
            or not os.path.isdir(os.path.join(args[1], "transports"))):
        sys.stderr.write(
            "usage: call_graph.py [--graph] REMOTE_DRIVER_DIR PROTOCOL_DIR\n")
        return 2
    top, protocol = args
    # Each file's name as printed -> its path.
    where = {}
    for sub in ("", "channel"):
        d = os.path.join(top, sub)
        for f in os.listdir(d):
            if f.endswith((".c", ".h")):
                where[os.path.join(sub, f)] = os.path.join(d, f)
    transports = os.path.join(protocol, "transports")
    for t in os.listdir(transports):
        d = os.path.join(transports, t)
        if os.path.isdir(d):
            for f in os.listdir(d):
                if f.startswith("client_") and f.endswith((".c", ".h")):
                    where["protocol/transports/%s/%s" % (t, f)] = \
                        os.path.join(d, f)
    paths = sorted(where, key=lambda p: (p.startswith("protocol/"),
                                         os.path.dirname(p), p))
    files = {}
    for p in paths:
        with open(where[p], encoding="utf-8") as f:
            raw = f.read()
        files[p] = (INCLUDE.findall(raw),) + parse(strip(raw))

    # A header's macros and inline functions stand for what they use.
    transparent = {}
    for p, (_, funcs, macros, _) in files.items():
        if p.endswith(".h"):
            for name, (_, body) in funcs.items():
                transparent[name] = set(IDENT.findall(body))
            for name, body in macros.items():
                transparent[name] = set(IDENT.findall(body))

    owner = {}
    for p, (_, funcs, _, _) in files.items():
        if p.endswith(".c"):
            for name, (static, _) in funcs.items():
                if not static and EXPORTED.match(name):
                    owner.setdefault(name, set()).add(p)

    calls = {}  # (from, to) -> functions
    for p, (_, funcs, macros, code) in files.items():
        if not p.endswith(".c"):
            continue
        used, todo = set(), set(IDENT.findall(code))
        while todo:
            name = todo.pop()
            if name in used:
                continue
            used.add(name)
            if name in macros:
                todo |= set(IDENT.findall(macros[name])) - used
            elif name in transparent and name not in funcs:
                todo |= transparent[name] - used
        for name in used:
            if name in funcs:
                continue
            for q in owner.get(name, ()):
                calls.setdefault((p, q), set()).add(name)

    headers = {os.path.basename(p): p for p in paths if p.endswith(".h")}
    includes = {}
    for p, (incs, _, _, _) in files.items():
        includes[p] = [i for i in incs if os.path.basename(i) in headers]

    if "--graph" in argv:
        for p in paths:
            if not p.endswith(".c"):
                continue
            print("%s includes %s" % (p, " ".join(includes[p]) or "-"))
            for (a, b), names in sorted(calls.items()):
                if a == p:
                    print("  calls %s: %s" % (b, " ".join(sorted(names))))

    fail = 0
    for (a, b), why in sorted(KNOWN.items()):
        if (a, b) not in calls:
            print("known exception %s -> %s no longer exists: drop it"
                  % (a, b))
            fail = 1
        else:
            print("known exception: %s -> %s (%s): %s"
                  % (a, b, " ".join(sorted(calls[(a, b)])), why))
    graph = {}
    for (a, b) in calls:
        if (a, b) not in KNOWN:
            graph.setdefault(a, set()).add(b)
    for cycle in cycles(graph):
        print("cycle: " + " -> ".join(
            "%s -[%s]" % (a, " ".join(sorted(calls[(a, b)])))
            for a, b in zip(cycle, cycle[1:])) + " -> " + cycle[-1])
        fail = 1

    header_graph = {}
    for p in paths:
        if p.endswith(".h"):
            header_graph[p] = {headers[os.path.basename(i)]
                               for i in includes[p]} - {p}
    for cycle in cycles(header_graph):
        print("include cycle: " + " -> ".join(cycle))
        fail = 1
    return fail


def cycles(graph):
    """Each pair of files that call each other, and the shortest cycle
    through each file that is on one."""
    index, low, stack, on, parts = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = set()
            while True:
                w = stack.pop()
                on.discard(w)
                part.add(w)
                if w == v:
                    break
            if len(part) > 1:
                parts.append(part)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    found, seen = [], set()
    for a in sorted(graph):
        for b in sorted(graph[a]):
            if a < b and a in graph.get(b, ()):
                seen.add(frozenset([(a, b), (b, a)]))
                found.append([a, b, a])
    for part in parts:
        for start in sorted(part):
            path = shortest_back(graph, part, start)
            key = frozenset(zip(path, path[1:]))
            if key not in seen:
                seen.add(key)
                found.append(path)
    return found


def shortest_back(graph, part, start):
    """The shortest path start -> ... -> start within part (breadth first)."""
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ()) & part):
                if w == start:
                    path = [start]
                    while v is not None:
                        path.append(v)
                        v = prev[v]
                    return path[::-1]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start, start]


if __name__ == "__main__":
    sys.exit(main(sys.argv))
