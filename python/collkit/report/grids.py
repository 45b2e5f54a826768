"""The numbers behind the report's heatmaps, drawn twice (HTML cells and matplotlib figures).

* `best_grids`: per collective and MPI library, per (rank count, size): the fastest `ok`
  algorithm (analysis/results.py's summary: implausible points never win), the
  algorithms *tied* with it (not significantly slower at alpha = 0.01 after Holm's
  correction over every comparison of the campaign, each tested at the level the two
  were measured: analysis/launches.py), and
  default/best with its significance from the same summary.
* `compare_grids`: per NEW campaign, collective, MPI library and rank count, per
  (algorithm, size): the ratio NEW/BASE and its verdict from analysis/compare.py."""

from __future__ import annotations

from dataclasses import dataclass

from collkit.analysis import launches, results, stats
from collkit.analysis.compare import Comparison
from collkit.campaign.record import Record


@dataclass(frozen=True)
class BestCell:
    ranks: int
    bytes: int
    best: str                      # label, e.g. collkit:ring
    best_us: float
    tied: tuple[str, ...]          # other labels not significantly slower than the best
    default_us: float | None
    ratio: float | None            # default/best, None for a tie or no default (results.SummaryLine.ratio)
    tie: bool                      # default not significantly slower than the best
    candidates: int


@dataclass(frozen=True)
class BestGrid:
    collective: str
    mpi: str
    ranks: list[int]
    sizes: list[int]
    cells: dict[tuple[int, int], BestCell]

    @property
    def labels(self) -> list[str]:
        """The algorithms that win somewhere, in order of first appearance."""
        return list(dict.fromkeys(self.cells[k].best for k in sorted(self.cells)))


def best_grids(records: list[Record]) -> list[BestGrid]:
    summary = results.summarise(records)
    members: dict[tuple, list[Record]] = {}
    for r in records:
        if r.status == "ok" and r.time_median_us is not None:
            members.setdefault((r.collective, r.mpi, r.ranks, r.bytes), []).append(r)
    # every algorithm of a cell against the cell's best, one Holm family for the campaign
    pairs: list[tuple[int, Record, Record]] = []
    for i, s in enumerate(summary):
        group = members[(s.collective, s.mpi, s.ranks, s.bytes)]
        best = next(r for r in group if r.label == s.best)
        pairs += [(i, best, r) for r in group if r is not best and r.timed and best.timed]
    tied: dict[int, list[str]] = {}
    if pairs:
        tests = launches.compare_points([(launches.Timing.of(b), launches.Timing.of(r)) for _, b, r in pairs],
                                        groups=[i for i, _, _ in pairs])
        for (i, _, r), q in zip(pairs, launches.holm(tests)):
            if q >= stats.ALPHA:
                tied.setdefault(i, []).append(r.label)
    grids: dict[tuple[str, str], dict[tuple[int, int], BestCell]] = {}
    for i, s in enumerate(summary):
        grids.setdefault((s.collective, s.mpi), {})[(s.ranks, s.bytes)] = BestCell(
            s.ranks, s.bytes, s.best, s.best_us, tuple(sorted(tied.get(i, ()))), s.default_us, s.ratio, s.tie,
            s.candidates)
    return [BestGrid(coll, mpi, sorted({k[0] for k in cells}), sorted({k[1] for k in cells}), cells)
            for (coll, mpi), cells in sorted(grids.items())]


@dataclass(frozen=True)
class ChangeCell:
    label: str
    bytes: int
    ratio: float
    low: float
    high: float
    verdict: str          # faster | slower | same


@dataclass(frozen=True)
class ChangeGrid:
    new: str
    collective: str
    mpi: str
    ranks: int
    labels: list[str]
    sizes: list[int]
    cells: dict[tuple[str, int], ChangeCell]


def compare_grids(c: Comparison) -> list[ChangeGrid]:
    groups: dict[tuple, dict[tuple[str, int], ChangeCell]] = {}
    for r in c.rows:
        if r.status != "compared" or r.ratio is None:
            continue
        groups.setdefault((r.new, r.collective, r.mpi, r.ranks), {})[(r.label, r.bytes)] = ChangeCell(
            r.label, r.bytes, r.ratio, r.ratio_ci_low or r.ratio, r.ratio_ci_high or r.ratio, r.verdict)
    return [ChangeGrid(new, coll, mpi, ranks, sorted({k[0] for k in cells}), sorted({k[1] for k in cells}), cells)
            for (new, coll, mpi, ranks), cells in sorted(groups.items())]
