#!/usr/bin/env python3
"""The Bine paper's Tables 3-5 beside the same figures from simulated campaigns
(issue #53; docs/experiments/bine-paper-tables.md).

    .venv/bin/python scripts/bine_paper_tables.py CAMPAIGN_DIR... [--csv OUT]
        [--machine-name NAME=sim:PRESET ...] [--paper data/bine-paper/tables.csv] [--no-traffic]
        [--pair COLLECTIVE=BINE:BASE ...] [--by-nodes]

Every argument is a campaign directory that `collkit run --platform sim:PRESET` wrote
(results.csv or records.jsonl, and metadata.json). The paper's machine of each campaign
comes from its metadata: sim:lumi-like -> lumi, sim:leonardo-like -> leonardo,
sim:marenostrum5-like -> marenostrum5 (a platform file's preset alike); --machine-name
names another simulated machine. The pairs compared and every rule are
collkit.report.bine_paper's (its docstring); the paper's figures are read from --paper.
--by-nodes adds the traffic reduction per node count (the job's allocation decides it).
--pair compares a collective by the pairs given instead (repeatable; the experiments that
swap a baseline, docs/experiments/bine-paper-tables.md). Prints one Markdown table per machine; --csv writes the side-by-side CSV. The traffic
count needs ck_trace (make setup); --no-traffic leaves it out. Bad input: one line on
stderr, exit status 2."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from collkit.common.errors import UserError  # noqa: E402
from collkit.report import bine_paper as bp  # noqa: E402

PAPER = REPO / "data" / "bine-paper" / "tables.csv"


def run(ns: argparse.Namespace) -> int:
    paper = bp.read_paper(ns.paper)
    names = bp.parse_machine_names(ns.machine_name, {m for m, _ in paper})
    comparison = bp.with_pairs(ns.pair)
    campaigns = [bp.open_campaign(d, names) for d in ns.campaigns]
    configs, left = bp.configurations(campaigns, comparison)
    if not configs:
        raise bp.no_pair_error(ns.campaigns, comparison)
    for c in campaigns:
        # a campaign of other algorithms only (e.g. issue #21's added-vector-256) adds nothing alone
        if not bp.configurations([c], comparison)[0]:
            print(f"note: {c.path} holds no whole Bine pair by itself", file=sys.stderr)
    reductions = None if ns.no_traffic else bp.traffic_reductions(campaigns, configs)
    rows = bp.summarise(configs, left, reductions)
    print(bp.markdown(rows, paper, traffic=reductions is not None, comparison=comparison))
    if ns.by_nodes and reductions is not None:
        print()
        print(bp.traffic_by_nodes_markdown(bp.traffic_by_nodes(reductions)))
    if left:
        print()
        print(f"Left out ({len(left)} configurations where no pair ran whole):")
        for x in left:
            print(f"  {x.machine} {x.collective} {x.nodes} nodes, n = {x.n} B: only {', '.join(x.ran)}")
    if ns.csv:
        bp.write_csv(ns.csv, rows, paper)
        print(f"wrote {ns.csv}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaigns", nargs="+", type=Path, help="simulated campaign directories")
    ap.add_argument("--csv", type=Path, help="write the side-by-side CSV here")
    ap.add_argument("--machine-name", action="append", default=[], metavar="NAME=sim:PRESET",
                    help="count campaigns on sim:PRESET as the paper's machine NAME (repeatable)")
    ap.add_argument("--paper", type=Path, default=PAPER, help=f"the paper's figures (default {PAPER.relative_to(REPO)})")
    ap.add_argument("--no-traffic", action="store_true", help="skip the traffic count (needs ck_trace)")
    ap.add_argument("--by-nodes", action="store_true",
                    help="also print the traffic reduction of every node count whose job spans groups")
    ap.add_argument("--pair", action="append", default=[], metavar="COLLECTIVE=BINE:BASE",
                    help="compare COLLECTIVE by this pair instead of collkit.report.bine_paper's (repeatable)")
    ns = ap.parse_args(argv)
    try:
        return run(ns)
    except UserError as exc:
        print(f"bine_paper_tables: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:   # e.g. a results.csv that cannot be read, or --csv in a read-only place
        print(f"bine_paper_tables: cannot read or write {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
