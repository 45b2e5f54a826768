#!/usr/bin/env python3
"""Ratios libcollkit / MPI library for algorithms of the same name, from one or
more campaigns of examples/compare_libraries.toml: the table in docs/benchmarks.md.

    .venv/bin/python scripts/benchmark_ratios.py results/compare-libraries-*

For every (library, collective, algorithm, ranks, size) present in both backends,
each campaign gives one ratio of medians (ours / theirs, measured in the same
campaign); the table shows the median of those ratios across campaigns, and
marks with * every ratio above 1.05 (ours more than 5% slower)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from collkit.campaign.sizes import format_size  # noqa: E402
from collkit.campaign.store import Campaign  # noqa: E402


def ratios(dirs: list[Path]) -> dict[tuple, list[float]]:
    out: dict[tuple, list[float]] = {}
    for d in dirs:
        ok = {(r.mpi, r.backend, r.collective, r.algorithm, r.ranks, r.bytes): r.time_median_us
              for r in Campaign.open(d).records() if r.status == "ok" and r.time_median_us}
        for (mpi, backend, coll, alg, ranks, size), theirs in ok.items():
            if backend != "mpi" or alg == "default":
                continue
            ours = ok.get((mpi, "collkit", coll, alg, ranks, size))
            if ours:
                out.setdefault((mpi, coll, alg, ranks, size), []).append(ours / theirs)
    return out


def spread(dirs: list[Path]) -> list[float]:
    """For every point measured ok in every campaign: max/min of its medians.
    This is the noise floor a ratio has to beat to mean anything."""
    per_point: dict[str, list[float]] = {}
    for d in dirs:
        for r in Campaign.open(d).records():
            if r.status == "ok" and r.time_median_us:
                per_point.setdefault(r.id, []).append(r.time_median_us)
    return sorted(max(v) / min(v) for v in per_point.values() if len(v) == len(dirs))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    table = ratios([Path(a) for a in argv])
    series = sorted({k[:4] for k in table})
    sizes = sorted({k[4] for k in table})
    print("| library | collective | algorithm | ranks | " + " | ".join(format_size(s) for s in sizes) + " |")
    print("| --- | --- | --- | --- | " + " | ".join("---" for _ in sizes) + " |")
    for mpi, coll, alg, ranks in series:
        cells = []
        for s in sizes:
            vals = table.get((mpi, coll, alg, ranks, s))
            if not vals:
                cells.append("-")
                continue
            med = statistics.median(vals)
            cells.append(f"{med:.2f}{'*' if med > 1.05 else ''}")
        print(f"| {mpi} | {coll} | {alg} | {ranks} | " + " | ".join(cells) + " |")
    sp = spread([Path(a) for a in argv])
    if len(argv) > 1 and sp:
        q = lambda f: sp[min(len(sp) - 1, int(f * len(sp)))]  # noqa: E731
        print(f"\nRun-to-run spread of one point's median over {len(argv)} campaigns (max/min, "
              f"{len(sp)} points): median {q(0.5):.2f}, p75 {q(0.75):.2f}, p90 {q(0.9):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
