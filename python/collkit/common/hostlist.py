"""Slurm hostlist expressions: ``lrdn[0063,0110-0112]`` -> lrdn0063, lrdn0110, ...

The grammar, as Slurm writes node lists (``SLURM_JOB_NODELIST``, ``scontrol show
hostnames``):

* a list is host expressions separated by commas outside brackets:
  ``a1,b[1-2],c``;
* a host expression is text with any number of bracket groups; each group is a
  comma-separated list of numbers ``7`` and ranges ``lo-hi`` (lo <= hi); several
  groups expand as a product, leftmost slowest: ``r[1-2]n[1-2]`` -> r1n1, r1n2,
  r2n1, r2n2;
* a number keeps the width of its lower bound as written, zero-padded:
  ``[0063-0065]`` -> 0063, 0064, 0065; ``[8-10]`` -> 8, 9, 10; ``[08-10]`` -> 08, 09, 10.

Order is kept as written and repeated names are kept (a repeated host means
several ranks on that node). Malformed input is a UserError naming the problem.
"""

from __future__ import annotations

import re

from collkit.common.errors import UserError

# Expansions larger than this are refused rather than exhausting memory.
MAX_HOSTS = 1_000_000

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_NAME_CHARS = re.compile(r"^[A-Za-z0-9._\-]*$")


def _split_top(expr: str) -> list[str]:
    """Split at commas that are not inside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(expr):
        if ch == "[":
            if depth:
                raise UserError(f"hostlist '{expr}': nested '[' at position {i + 1}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise UserError(f"hostlist '{expr}': ']' without '[' at position {i + 1}")
            depth = 0
        elif ch == "," and not depth:
            parts.append(expr[start:i])
            start = i + 1
    if depth:
        raise UserError(f"hostlist '{expr}': '[' is never closed")
    parts.append(expr[start:])
    return parts


def _numbers(group: str, expr: str) -> list[str]:
    out: list[str] = []
    for item in group.split(","):
        item = item.strip()
        m = _RANGE.match(item)
        if not m:
            raise UserError(f"hostlist '{expr}': '{item}' in [{group}] is not a number or a range lo-hi")
        lo_text, hi_text = m.group(1), m.group(2)
        lo = int(lo_text)
        hi = int(hi_text) if hi_text is not None else lo
        if hi < lo:
            raise UserError(f"hostlist '{expr}': range {item} runs backwards")
        if len(out) + hi - lo + 1 > MAX_HOSTS:
            raise UserError(f"hostlist '{expr}' expands to more than {MAX_HOSTS} hosts")
        width = len(lo_text)
        out.extend(str(v).zfill(width) for v in range(lo, hi + 1))
    return out


def _expand_one(host: str, expr: str) -> list[str]:
    # Alternate literal text and bracket groups: text [g] text [g] text.
    pieces = re.split(r"\[([^\]]*)\]", host)
    names = [""]
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            if not _NAME_CHARS.match(piece):
                raise UserError(f"hostlist '{expr}': unexpected character in '{piece}'")
            names = [n + piece for n in names]
        else:
            if not piece.strip():
                raise UserError(f"hostlist '{expr}': empty brackets []")
            nums = _numbers(piece, expr)
            if len(names) * len(nums) > MAX_HOSTS:
                raise UserError(f"hostlist '{expr}' expands to more than {MAX_HOSTS} hosts")
            names = [n + v for n in names for v in nums]
    return names


def expand(expr: str) -> list[str]:
    """Every host name of a Slurm hostlist expression, in order."""
    text = expr.strip()
    if not text:
        raise UserError("hostlist is empty")
    hosts: list[str] = []
    for part in _split_top(text):
        part = part.strip()
        if not part:
            raise UserError(f"hostlist '{expr}': empty name between commas")
        hosts.extend(_expand_one(part, expr))
        if len(hosts) > MAX_HOSTS:
            raise UserError(f"hostlist '{expr}' expands to more than {MAX_HOSTS} hosts")
    return hosts
