#!/usr/bin/env python3
"""Files that call each other in a loop, in the C folders of collkit.

A file uses another when it calls a function the other defines (a function with
external linkage: not `static`, and not shadowed by a static one of the caller).
Layers are one-way (in preload/: the entry points, the dispatcher, the
policies, their writers, the names and rules everything reads): a circle of
files means some file calls back up, and a reader can no longer take one layer
at a time. This lists every strongly connected group of two or more files, with
the calls that make each of its edges, and exits 1 when there is one (`make
test` runs it over preload/, bench/ and lib/: tests/python/test_c_layers.py).

    python3 scripts/call_cycles.py DIR [DIR ...]

The reading is textual, which is enough for this code base's C: comments and
strings are removed, a definition is a name followed by a parameter list and a
`{` at the start of a line's statement, a call is a name followed by `(`. Macros
that call functions count where they are used only if they are spelled in the
file. Exit status 2 with one line for a folder that does not exist."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TypeVar

N = TypeVar("N")

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])\'')
# a function definition: type and name at the start of a line, parameters, then '{'
DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{", re.M)
# any function definition, static or not: a file's own static function of
# the same name as another file's shadows it there
ANY_DEFINITION = re.compile(r"^[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "do", "else", "case"}


def clean(text: str) -> str:
    return STRING.sub('""', COMMENT.sub(" ", text))


def graph(files: list[Path]) -> tuple[dict[Path, set[Path]], dict[tuple[Path, Path], set[str]]]:
    texts = {f: clean(f.read_text(errors="replace")) for f in files}
    owner: dict[str, Path] = {}
    for f, text in texts.items():
        for name in DEFINITION.findall(text):
            if name not in KEYWORDS:
                owner.setdefault(name, f)
    edges: dict[Path, set[Path]] = {f: set() for f in files}
    why: dict[tuple[Path, Path], set[str]] = {}
    for f, text in texts.items():
        own = set(ANY_DEFINITION.findall(text))
        for name in CALL.findall(text):
            g = None if name in own else owner.get(name)
            if g is not None and g != f:
                edges[f].add(g)
                why.setdefault((f, g), set()).add(name)
    return edges, why


def circles(graph: Mapping[N, Iterable[N]]) -> list[list[N]]:
    """Strongly connected groups of two or more nodes (Tarjan, iterative), each
    sorted; `graph` maps a node to the nodes it uses. Also what
    tests/python/test_import_cycles.py checks the Python package's imports with."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    found: list[list[N]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    group.append(top)
                    if top == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: call_cycles.py DIR [DIR ...]", file=sys.stderr)
        return 2
    found = 0
    for d in map(Path, argv):
        if not d.is_dir():
            print(f"call_cycles: {d} is not a folder", file=sys.stderr)
            return 2
        files = sorted(p for p in d.rglob("*.c"))
        edges, why = graph(files)
        for group in circles(edges):
            found += 1
            members = set(group)
            print(f"{d}: {len(group)} files call each other in a loop: {', '.join(p.name for p in group)}")
            for f in group:
                for g in sorted(edges[f] & members):
                    print(f"  {f.name} -> {g.name} ({', '.join(sorted(why[(f, g)]))})")
    if found:
        return 1
    print(f"no circle of files in {', '.join(argv)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
