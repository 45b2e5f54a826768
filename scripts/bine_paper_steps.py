#!/usr/bin/env python3
"""The paper's figures beside collkit's, one platform setting added at a time (issue #53;
docs/experiments/bine-paper-tables.md): every argument is LABEL=CSV, a side-by-side table
that scripts/bine_paper_tables.py --csv wrote for one platform variant, in the order the
settings were added.

    .venv/bin/python scripts/bine_paper_steps.py [--median] block=OUT/table-block.csv drawn=OUT/table-drawn.csv ...

scripts/bine_paper_run.sh writes OUT/steps.md with it. --median adds a column with each
figure's median over the arguments (for the same setting drawn with several seeds:
scripts/bine_paper_seeds.sh). Bad input: one line on stderr, exit status 2."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from collkit.common.errors import UserError  # noqa: E402
from collkit.report import bine_paper as bp  # noqa: E402


def main(argv: list[str]) -> int:
    try:
        median = bool(argv) and argv[0] == "--median"
        argv = argv[1:] if median else argv
        if not argv:
            raise UserError("give LABEL=CSV ..., e.g. block=OUT/table-block.csv drawn=OUT/table-drawn.csv")
        steps = []
        for arg in argv:
            if arg.startswith("-"):
                raise UserError(f"unknown option '{arg}': the only option is --median, first")
            label, sep, path = arg.partition("=")
            if not sep or not label or not path:
                raise UserError(f"'{arg}': write LABEL=CSV, e.g. drawn=OUT/table-drawn.csv")
            steps.append((label, bp.read_side_by_side(Path(path))))
        if median:
            steps.append(("median", bp.median_rows(steps)))
        print(bp.steps_markdown(steps))
        return 0
    except UserError as exc:
        print(f"bine_paper_steps: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
