"""Plain-text tables for the terminal."""

from __future__ import annotations

import shutil
import textwrap

MIN_WRAP = 24   # a column is never wrapped narrower than this


def _fit(widths: list[int], keep: set[int], width: int) -> list[int]:
    """Narrow the widest text columns (never those in `keep`: the right-aligned
    numbers, names meant to be copied) until the table fits `width`, each to at
    least MIN_WRAP."""
    widths = list(widths)
    while sum(widths) + 2 * (len(widths) - 1) > width:
        text = [i for i in range(len(widths)) if i not in keep and widths[i] > MIN_WRAP]
        if not text:
            break
        widths[max(text, key=lambda k: widths[k])] -= 1   # one at a time: the text columns end up alike
    return widths


# The width a table is laid out for when the output is not a terminal (a file,
# a pipe, CI's log): a terminal's usual 100 columns.
DEFAULT_WIDTH = 100


def terminal_width() -> int:
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def render(headers: list[str], rows: list[list[str]], right: set[int] | None = None,
           width: int | None = None, min_widths: list[int] | None = None, nowrap: set[int] | None = None) -> str:
    """Columns padded to their widest cell (at least `min_widths`: tables printed
    one under the other line up). A table wider than the terminal (or `width`)
    wraps its widest text columns (descriptions, origins, reasons; never those
    in `nowrap`) onto continuation lines instead of running off the screen."""
    right = right or set()
    nowrap = nowrap or set()
    width = width or terminal_width()
    natural = list(min_widths) if min_widths else [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            natural[i] = max(natural[i], len(cell))
    widths = _fit(natural, right | nowrap, width)

    def lines(cells: list[str]) -> list[str]:
        wrapped = [[c] if len(c) <= widths[i] or i in right else textwrap.wrap(c, widths[i]) or [""]
                   for i, c in enumerate(cells)]
        out = []
        for k in range(max(len(w) for w in wrapped)):
            parts = []
            for i, w in enumerate(wrapped):
                cell = w[k] if k < len(w) else ""
                parts.append(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]))
            out.append("  ".join(parts).rstrip())
        return out

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([*lines(headers), sep, *(line for row in rows for line in lines(row))])


def render_sections(headers: list[str], sections: dict[str, list[list[str]]], right: set[int] | None = None,
                    width: int | None = None) -> str:
    """Tables one under the other, each under its title (a collective and library,
    a point), with one set of column widths: what a title says leaves its columns,
    so the rows fit 100 columns where one wide table would not."""
    every = [row for rows in sections.values() for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in every]) for i, h in enumerate(headers)]
    out = []
    for title, rows in sections.items():
        if out:
            out.append("")
        out += [title, render(headers, rows, right=right, width=width, min_widths=widths)]
    return "\n".join(out)
