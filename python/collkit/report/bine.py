"""Bine against the best non-Bine algorithm, in the form of the Bine paper's Table 3.

The analysis behind `scripts/bine_table.py` (simulated campaigns, with traffic) and the
report's "Bine vs classic" section (`collkit report --html`, any campaign holding Bine and
classic libcollkit algorithms):

* A *cell* is (system, collective, nodes, vector size n). n is the size a record
  reports for bcast, reduce and allreduce, and the p blocks together (bytes x
  ranks) for gather, scatter, allgather, reduce_scatter and alltoall, as in the
  Bine paper and `collkit traffic`. One rank per node: nodes = ranks.
* In a cell, t_bine is the fastest `ok` Bine algorithm (name starting with
  "bine") and t_other the fastest `ok` non-Bine one; Swing (same authors, not a
  classic algorithm) and bine_latency_agreed (collkit's rank-consistent variant,
  not the paper's schedule: docs/algorithms.md) are left out of both. A cell
  missing either side is not counted.
* Bine *wins* a cell when t_bine < t_other, *loses* when t_bine > t_other, and ties
  when the two differ by less than TIE (0.01 %): simulated times are deterministic, but
  the same point simulated in two launches (starting at another simulated clock) was
  seen to differ by up to 0.002 %, and two algorithms that send the same messages can
  differ by that much.
  gain = t_other / t_bine - 1 over the cells Bine wins (geometric mean of the
  ratios, and the largest), drop = t_bine / t_other - 1 over the cells it loses
  (the largest).
* Inter-group traffic: the bytes one Bine algorithm and its binomial/butterfly
  counterpart send across groups (fat-tree pods, dragonfly groups) of the
  simulated machine, from libcollkit's own messages (ck_trace), ranks placed in
  block order on the instance's first nodes as the SimGrid launcher places them.
  Reduction = (counterpart - Bine) / counterpart."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from collkit.analysis.results import read_csv
from collkit.campaign.record import Record
from collkit.campaign.sizes import format_size
from collkit.campaign.store import Campaign
from collkit.library import registry

ORDER = ("bcast", "reduce", "gather", "scatter", "allgather", "reduce_scatter", "allreduce", "alltoall")
EXCLUDED_PREFIXES = ("swing", "bine_latency_agreed")

# Bine algorithm -> its binomial/butterfly counterparts, per collective.
PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    # The same tree or butterfly shape first, so that the difference is the
    # negabinary rank distances alone: the Bine bcast is a distance-halving tree
    # like binomial_halving; the Bine reduce runs that tree backwards, as
    # reduce/binomial_doubling (MPICH's binomial reduce) runs the halving tree
    # backwards. Then the other classic counterparts.
    "bcast": (("bine", "binomial_halving"), ("bine", "binomial_doubling"),
              ("bine_scatter_allgather", "scatter_allgather_rd")),
    "reduce": (("bine", "binomial_doubling"), ("bine", "binomial_halving"), ("bine_rsag", "rabenseifner")),
    # bine_halving runs the binomial gather's structure (biggest subtree farthest) at Bine
    # distances; bine the distance-doubling tree (biggest subtree nearest)
    "gather": (("bine_halving", "binomial"), ("bine", "binomial")),
    "scatter": (("bine_halving", "binomial"), ("bine", "binomial")),
    "allgather": (("bine_permute", "butterfly_halving"), ("bine_permute", "sparbit"),
                  ("bine_permute", "recursive_doubling")),
    # butterfly_halving / butterfly_doubling: the XOR butterflies in Bine's step order
    "reduce_scatter": (("bine_permute", "butterfly_doubling"), ("bine_permute", "recursive_halving"),
                       ("bine_permute", "recursive_doubling")),
    "allreduce": (("bine_latency", "recursive_doubling"), ("bine_bandwidth", "rabenseifner")),
    "alltoall": (("bine_butterfly", "bruck"), ("bine", "bruck")),
}


TIE = 1e-4   # relative difference below which two simulated times count as equal


def is_bine(algorithm: str) -> bool:
    return algorithm.startswith("bine")


def excluded(algorithm: str, prefixes: tuple[str, ...] = EXCLUDED_PREFIXES) -> bool:
    return algorithm.startswith(prefixes)


@dataclass(frozen=True)
class SystemRecords:
    """The records of one campaign (or results.csv), and the system they ran on."""
    system: str
    records: list[Record]


@dataclass(frozen=True)
class Cell:
    system: str
    collective: str
    nodes: int
    n: int
    best: str           # fastest algorithm overall
    bine: str
    t_bine: float
    other: str
    t_other: float

    @property
    def ratio(self) -> float:
        """t_other / t_bine: above 1 Bine wins."""
        return self.t_other / self.t_bine

    @property
    def outcome(self) -> str:
        """'win', 'loss' or 'tie' for Bine."""
        if abs(self.t_other - self.t_bine) < TIE * max(self.t_other, self.t_bine):
            return "tie"
        return "win" if self.t_bine < self.t_other else "loss"


@dataclass(frozen=True)
class Summary:
    system: str
    collective: str
    cells: int
    wins: int
    losses: int
    ties: int
    gain_gmean: float | None   # t_other / t_bine - 1, geometric mean over wins
    gain_max: float | None
    drop_max: float | None     # t_bine / t_other - 1, largest over losses

    @property
    def win_pct(self) -> float:
        return 100.0 * self.wins / self.cells if self.cells else 0.0

    @property
    def loss_pct(self) -> float:
        return 100.0 * self.losses / self.cells if self.cells else 0.0


# ----------------------------------------------------------------------------- input

def read_campaign(d: Path) -> list[Record]:
    """A campaign's records: its results.csv, or while it still runs its records.jsonl."""
    if (d / "results.csv").exists():
        return read_csv(d / "results.csv")
    return Campaign.open(d).records()


def campaign_system(d: Path) -> str:
    """The simulated machine a campaign ran on (metadata.json), else the parent directory's name."""
    try:
        meta = json.loads((d / "metadata.json").read_text())
        return meta["simgrid"]["settings"]["machine"]["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return d.resolve().parent.name


def timed_collkit(runs: list[SystemRecords]):
    """(system, record, n) of every `ok` libcollkit record with a time; n is the
    vector size: the p blocks together where the collective counts per block."""
    vector: dict[str, registry.Collective] = {}
    for run in runs:
        for r in run.records:
            if r.status != "ok" or r.backend != "collkit" or r.time_median_us is None:
                continue
            desc = vector.get(r.collective) or vector.setdefault(r.collective, registry.collective(r.collective))
            yield run.system, r, desc.vector_bytes(r.bytes, r.ranks)


# ----------------------------------------------------------------------------- analysis

def cells(runs: list[SystemRecords], exclude: tuple[str, ...] = EXCLUDED_PREFIXES) -> list[Cell]:
    """The cells of these campaigns' records; algorithms whose names start with one of
    ``exclude`` take part on neither side."""
    groups: dict[tuple, list[Record]] = {}
    for system, r, n in timed_collkit(runs):
        if not excluded(r.algorithm, exclude):
            groups.setdefault((system, r.collective, r.ranks, n), []).append(r)
    out = []

    def fastest(rs: list[Record]) -> Record:
        return min(rs, key=lambda r: (r.time_median_us, r.algorithm))

    for key, members in sorted(groups.items()):
        bine = [r for r in members if is_bine(r.algorithm)]
        other = [r for r in members if not is_bine(r.algorithm)]
        if not bine or not other:
            continue
        b, o, best = fastest(bine), fastest(other), fastest(members)
        out.append(Cell(*key, best.algorithm, b.algorithm, b.time_median_us, o.algorithm, o.time_median_us))
    return out


def summarise(all_cells: list[Cell]) -> list[Summary]:
    groups: dict[tuple[str, str], list[Cell]] = {}
    for c in all_cells:
        groups.setdefault((c.system, c.collective), []).append(c)
    out = []
    for (system, coll), cs in groups.items():
        wins = [c.ratio for c in cs if c.outcome == "win"]
        losses = [1.0 / c.ratio for c in cs if c.outcome == "loss"]
        gmean = math.exp(sum(math.log(r) for r in wins) / len(wins)) - 1 if wins else None
        out.append(Summary(system, coll, len(cs), len(wins), len(losses), len(cs) - len(wins) - len(losses),
                           gmean, max(wins) - 1 if wins else None, max(losses) - 1 if losses else None))
    order = {c: i for i, c in enumerate(ORDER)}
    return sorted(out, key=lambda s: (s.system, order.get(s.collective, 99)))


# ----------------------------------------------------------------------------- traffic

@dataclass(frozen=True)
class TrafficRow:
    system: str
    collective: str
    bine: str
    counterpart: str
    nodes: int
    groups: int
    counterpart_inter: float   # inter-group bytes in multiples of n
    bine_inter: float

    @property
    def reduction_pct(self) -> float | None:
        if self.counterpart_inter <= 0:
            return None
        return 100.0 * (self.counterpart_inter - self.bine_inter) / self.counterpart_inter


def traffic(systems: list[str], node_counts: dict[str, list[int]], collectives: list[str]) -> list[TrafficRow]:
    """Inter-group bytes of every PAIRS pair on each system's instances (needs ck_trace)."""
    from collkit.topology.synthetic import preset
    from collkit.traffic.analysis import analyse, ranks_only
    from collkit.traffic.tracer import Tracer

    tracer = Tracer()
    out = []
    for system in systems:
        machine = preset(system)
        for nodes in node_counts[system]:
            topo = machine.instance(nodes).topology()
            topo, placement = ranks_only(nodes, topo, "block", 1)
            for coll in collectives:
                for bine, base in PAIRS.get(coll, ()):
                    t_base, t_bine = analyse(tracer, coll, [base, bine], placement, topo)
                    out.append(TrafficRow(system, coll, bine, base, nodes, t_bine.groups,
                                          t_base.in_n(t_base.volume.inter_group),
                                          t_bine.in_n(t_bine.volume.inter_group)))
    return out


# ----------------------------------------------------------------------------- output

def pct(x: float | None) -> str:
    return "–" if x is None else f"{100.0 * x:.1f} %"


def reduction_cell(rows: list[TrafficRow]) -> str:
    """One pair's reductions at the node counts whose jobs cross groups,
    'v1 / v2 %' in node order ('–' where the job stays in one group)."""
    vals = [f"{r.reduction_pct:.0f}" for r in sorted(rows, key=lambda r: r.nodes) if r.reduction_pct is not None]
    return " / ".join(vals) + " %" if vals else "– (one group)"


def table3(summaries: list[Summary], trows: list[TrafficRow] | None) -> str:
    nodes = sorted({r.nodes for r in trows or [] if r.reduction_pct is not None})
    where = " / ".join(str(n) for n in nodes) + " nodes" if nodes else "nodes"
    head = ("| system | collective | cells | Bine wins | gain gmean | gain max | Bine loses | drop max | ties "
            f"| inter-group traffic reduction, Bine vs counterpart ({where}) |")
    lines = [head, "|" + " --- |" * 10]
    for s in summaries:
        red = "not computed"
        if trows is not None:
            parts = []
            for bine, base in PAIRS.get(s.collective, ()):
                rows = [r for r in trows if (r.system, r.collective, r.bine, r.counterpart) == (s.system, s.collective, bine, base)]
                parts.append(f"{bine} vs {base}: {reduction_cell(rows)}")
            red = "<br>".join(parts)
        lines.append(f"| {s.system} | {s.collective} | {s.cells} | {s.win_pct:.0f} % | {pct(s.gain_gmean)} | "
                     f"{pct(s.gain_max)} | {s.loss_pct:.0f} % | {pct(s.drop_max)} | {s.ties} | {red} |")
    return "\n".join(lines)


def traffic_table(trows: list[TrafficRow]) -> str:
    lines = ["| system | collective | Bine | counterpart | nodes | groups | counterpart inter-group (× n) "
             "| Bine inter-group (× n) | reduction |", "|" + " --- |" * 9]
    order = {c: i for i, c in enumerate(ORDER)}
    for r in sorted(trows, key=lambda r: (r.system, order.get(r.collective, 99), r.bine, r.counterpart, r.nodes)):
        red = "–" if r.reduction_pct is None else f"{r.reduction_pct:.1f} %"
        lines.append(f"| {r.system} | {r.collective} | {r.bine} | {r.counterpart} | {r.nodes} | {r.groups} | "
                     f"{r.counterpart_inter:g} | {r.bine_inter:g} | {red} |")
    return "\n".join(lines)


def by_size_table(all_cells: list[Cell]) -> str:
    """Bine wins / cells per system and vector size, all collectives and node counts together."""
    systems = sorted({c.system for c in all_cells})
    sizes = sorted({c.n for c in all_cells})
    lines = ["| system | " + " | ".join(format_size(n) for n in sizes) + " |", "|" + " --- |" * (len(sizes) + 1)]
    for system in systems:
        row = []
        for n in sizes:
            cs = [c for c in all_cells if c.system == system and c.n == n]
            wins = sum(c.outcome == "win" for c in cs)
            row.append(f"{wins}/{len(cs)}" if cs else "–")
        lines.append(f"| {system} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def cells_table(all_cells: list[Cell]) -> str:
    lines = ["| system | collective | nodes | n | fastest | fastest Bine | µs | fastest other | µs | other / Bine |",
             "|" + " --- |" * 10]
    order = {c: i for i, c in enumerate(ORDER)}
    for c in sorted(all_cells, key=lambda c: (c.system, order.get(c.collective, 99), c.nodes, c.n)):
        lines.append(f"| {c.system} | {c.collective} | {c.nodes} | {format_size(c.n)} | {c.best} | {c.bine} | "
                     f"{c.t_bine:.1f} | {c.other} | {c.t_other:.1f} | {c.ratio:.3f} |")
    return "\n".join(lines)


def heatmaps(all_cells: list[Cell], outdir: Path) -> list[Path]:
    """One figure per (system, collective): rows = nodes, columns = n, colour =
    fastest algorithm (Bine ones in blues, the others in warm colours), text =
    its name and other/Bine. Cells not simulated stay blank."""
    from matplotlib.colors import ListedColormap

    from collkit.report.figures import pyplot
    plt = pyplot()

    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    groups: dict[tuple[str, str], list[Cell]] = {}
    for c in all_cells:
        groups.setdefault((c.system, c.collective), []).append(c)
    blues = ["#1f4e99", "#3a75c4", "#6fa0dc", "#a9c8ee"]
    warm = ["#c0392b", "#e67e22", "#f1c40f", "#8e6c3a", "#d35400", "#a04000", "#7f8c8d", "#c39bd3"]
    for (system, coll), cs in sorted(groups.items()):
        nodes = sorted({c.nodes for c in cs})
        sizes = sorted({c.n for c in cs})
        algs = sorted({c.best for c in cs}, key=lambda a: (not is_bine(a), a))
        colours = []
        nb = nw = 0
        for a in algs:
            if is_bine(a):
                colours.append(blues[nb % len(blues)])
                nb += 1
            else:
                colours.append(warm[nw % len(warm)])
                nw += 1
        grid = [[math.nan] * len(sizes) for _ in nodes]
        fig, ax = plt.subplots(figsize=(max(7.0, 1.25 * len(sizes) + 2.0), 0.9 * len(nodes) + 1.6))
        for c in cs:
            i, j = nodes.index(c.nodes), sizes.index(c.n)
            grid[i][j] = algs.index(c.best)
            light = colours[algs.index(c.best)] in (blues[2], blues[3], warm[2], warm[7])
            ax.text(j, i, f"{c.best}\n×{c.ratio:.2f}", ha="center", va="center", fontsize=7,
                    color="black" if light else "white")
        ax.imshow(grid, cmap=ListedColormap(colours), vmin=-0.5, vmax=len(algs) - 0.5, aspect="auto")
        ax.set_xticks(range(len(sizes)), [format_size(s) for s in sizes], fontsize=8)
        ax.set_yticks(range(len(nodes)), [str(n) for n in nodes], fontsize=8)
        ax.set_xlabel("vector size n")
        ax.set_ylabel("nodes (1 rank each)")
        ax.set_title(f"{coll} on {system} (simulated): fastest algorithm,\n"
                     "×r = fastest non-Bine time / fastest Bine time (r > 1: Bine wins); blank: not simulated",
                     fontsize=9)
        fig.tight_layout()
        for ext in ("png", "svg"):
            path = outdir / f"best-{system}-{coll}.{ext}"
            # a fixed date keeps the SVG the same on every rerun of the same data
            fig.savefig(path, dpi=100, metadata={"Date": None} if ext == "svg" else None)
            written.append(path)
        plt.close(fig)
    return written
