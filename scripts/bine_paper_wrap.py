#!/usr/bin/env python3
"""Does the job's wrap (rank p-1 next to rank 0) cross groups? Bine against its
baseline, cross-group bytes of contiguous jobs, with and without it.

    .venv/bin/python scripts/bine_paper_wrap.py [--group G] [--ranks P ...] [--step S]

A job on consecutive nodes, block placement, cut into groups of G nodes (a
dragonfly group, a fat-tree pod) at every offset 0, S, 2S, ... < G of its first
node: the "line" layout. Bine's algorithms pair ranks by their distance on a ring
of ranks, so rank p-1 is a neighbour of rank 0, while the binomial trees and XOR
butterflies never pair across that wrap; on the line the job's first and last
nodes are in different groups whenever it spans two or more. The "ring" layout is
the same job with its last group counted as its first's (the same cuts between
ranks, the wrap inside a group), as if the job's ends met; a job in two groups has
no ring layout (folding leaves one group) and is shown apart. The figure is the
traffic reduction (one minus the ratio of the bytes across groups, each summed
over the offsets) per layout, for each pair that
docs/experiments/bine-paper-tables.md compares (collkit.report.bine_paper.COMPARISON).
Messages come from the algorithms' own C code (ck_trace, make setup). Docs:
docs/experiments/bine-paper-tables.md, item 9.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from collkit.common.errors import UserError  # noqa: E402
from collkit.report.bine_paper import COMPARISON  # noqa: E402
from collkit.traffic.analysis import message_traces  # noqa: E402
from collkit.traffic.count import inter_group_bytes  # noqa: E402
from collkit.traffic.tracer import Tracer  # noqa: E402

MAX_RANKS = 4096


def layouts(p: int, group: int, offset: int) -> dict[str, np.ndarray]:
    """Each rank's group: "two" when the job sits in two groups (the line; folding
    would leave one), else "line" and "ring" (the last group folded into the first);
    nothing when it sits in one."""
    line = (np.arange(p) + offset) // group
    spans = int(line[-1] - line[0]) + 1
    if spans == 1:
        return {}
    if spans == 2:
        return {"two": line}
    return {"line": line, "ring": np.where(line == line[-1], line[0], line)}


COLUMNS = ("two", "line", "ring")


def reductions(tracer: Tracer, collective: str, bine: str, base: str, p: int, group: int,
               step: int) -> dict[str, float | None]:
    """Per layout, the reduction over the offsets that have it (None: no offset does)."""
    t_base, t_bine = message_traces(tracer, collective, [base, bine], p)
    sums = {name: [0, 0] for name in COLUMNS}
    for offset in range(0, group, step):
        for name, rank_group in layouts(p, group, offset).items():
            sums[name][0] += inter_group_bytes(t_base, rank_group)
            sums[name][1] += inter_group_bytes(t_bine, rank_group)
    return {name: 100.0 * (1.0 - b / a) if a else None for name, (a, b) in sums.items()}


def cell(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f}"


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if not 1 <= v <= MAX_RANKS:
        raise argparse.ArgumentTypeError(f"{v} is not between 1 and {MAX_RANKS}")
    return v


class Parser(argparse.ArgumentParser):
    """Usage errors on one line, exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"bine_paper_wrap.py: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--group", type=positive_int, default=160, help="nodes per group (default 160)")
    ap.add_argument("--ranks", type=positive_int, nargs="+", default=[128, 256, 512],
                    help="job sizes, one rank per node (default 128 256 512)")
    ap.add_argument("--step", type=positive_int, default=4, help="offsets 0, S, 2S, ... below the group size")
    ns = ap.parse_args(argv)
    tracer = Tracer()
    print(f"traffic reduction, percent (groups of {ns.group} nodes, the job's first node at offsets "
          f"0, {ns.step}, ... below {ns.group}; two: jobs in two groups; line: in three or more; "
          "ring: those with the last group counted as the first)")
    print()
    print("| collective | pair | ranks | two | line | ring |")
    print("| --- | --- | --- | --- | --- | --- |")
    try:
        for collective, pairs in COMPARISON.items():
            for bine, base in pairs:
                for p in ns.ranks:
                    red = reductions(tracer, collective, bine, base, p, ns.group, ns.step)
                    print(f"| {collective} | {bine} vs {base} | {p} | " + " | ".join(cell(red[c]) for c in COLUMNS) + " |")
    except UserError as exc:
        print(f"bine_paper_wrap.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
