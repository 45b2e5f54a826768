#!/usr/bin/env python3
"""Bine against the best non-Bine algorithm, in the form of the Bine paper's Table 3,
from simulated campaigns (docs/experiments/bine-vs-binomial-sim.md).

    .venv/bin/python scripts/bine_table.py results/bine-sim/*/* --img docs/experiments/img

Every argument is a campaign directory (its results.csv and metadata.json; the
system is the simulated machine the metadata names, or the directory's parent
name when the campaign was not simulated). The analysis and the heatmaps are
collkit's (python/collkit/report/bine.py, also the Table 3 section of `collkit report
--html`); this script adds the inter-group traffic of each pair (needs ck_trace).

Prints the tables as Markdown; with --img, writes one heatmap per (system,
collective) of the fastest algorithm per (nodes, n), as PNG and SVG."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from collkit.analysis.results import read_csv  # noqa: E402
from collkit.common.errors import UserError  # noqa: E402
from collkit.report.bine import (  # noqa: E402,F401  (the names the tests and older callers use)
    EXCLUDED_PREFIXES, ORDER, PAIRS, TIE, Cell, Summary, SystemRecords, TrafficRow, by_size_table,
    campaign_system, cells, cells_table, excluded, heatmaps, is_bine, pct, read_campaign, reduction_cell,
    summarise, table3, timed_collkit, traffic, traffic_table)


def load(paths: list[Path]) -> list[SystemRecords]:
    out = []
    for p in paths:
        if p.is_file() and p.suffix != ".csv":
            continue   # e.g. a results root's index.json caught by a glob
        try:
            if p.is_dir():
                out.append(SystemRecords(campaign_system(p), read_campaign(p)))
            else:
                out.append(SystemRecords(campaign_system(p.parent), read_csv(p)))
        except OSError as exc:
            print(f"bine_table: cannot read {p}: {exc.strerror or exc}", file=sys.stderr)
            raise SystemExit(2) from None
        except UserError as exc:
            print(f"bine_table: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaigns", nargs="+", type=Path, help="campaign directories (or results.csv files)")
    ap.add_argument("--img", type=Path, help="write the heatmaps here (PNG and SVG)")
    ap.add_argument("--no-traffic", action="store_true", help="skip the traffic analysis (needs ck_trace)")
    ap.add_argument("--cells", action="store_true", help="also print every cell")
    ap.add_argument("--exclude", action="append", default=[], metavar="PREFIX",
                    help="also leave out algorithms whose names start with PREFIX (repeatable; swing and bine_latency_agreed always)")
    ns = ap.parse_args(argv)
    runs = load(ns.campaigns)
    if not any(True for _ in timed_collkit(runs)):
        print("bine_table: no ok collkit points in those campaigns", file=sys.stderr)
        return 2
    all_cells = cells(runs, EXCLUDED_PREFIXES + tuple(ns.exclude))
    summaries = summarise(all_cells)
    trows = None
    if not ns.no_traffic:
        systems = sorted({c.system for c in all_cells})
        node_counts = {s: sorted({c.nodes for c in all_cells if c.system == s}) for s in systems}
        colls = [c for c in ORDER if any(x.collective == c for x in all_cells)]
        trows = traffic(systems, node_counts, colls)
    print(table3(summaries, trows))
    if trows is not None:
        print()
        print(traffic_table(trows))
    print()
    print(by_size_table(all_cells))
    if ns.cells:
        print()
        print(cells_table(all_cells))
    if ns.img:
        for path in heatmaps(all_cells, ns.img):
            print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
