"""`collkit report DIR --breakdown`: where the time of a collective goes.

An instrumented campaign (`instrument = true`, collkit-bench-instr) carries in
each point record an `instrument` object (docs/bench-protocol.md, "Instrumented
records"): the point's time split into the categories of libcollkit's tags,

    comm     point-to-point communication (ck_send, ck_recv, ck_sendrecv, waits)
    reduce   local reductions
    copy     data movement and staging
    other    end-to-end minus the tagged time (loop control, index arithmetic,
             allocation, and everything an untagged algorithm does)

This module reads them, prints one table per (collective, MPI library, backend,
algorithm, ranks) with a row per message size, and draws the same as stacked
bars against message size, absolute and as a share, like Fig. 11 of the PICO
paper. The parts are checked against the point's end-to-end median (the
`stats_us.median` of the record): `sum/e2e` is their ratio.

Points of backend `mpi` run the MPI library's own collective, which carries no
tags: all their time is `other`. They are listed but not drawn."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

from collkit.campaign.points import label
from collkit.campaign.record import Record
from collkit.campaign.sizes import format_size
from collkit.common.errors import UserError
from collkit.common.table import render

CATEGORIES = ("comm", "reduce", "copy", "other")
TAGGED = ("comm", "reduce", "copy")
# How far below zero `other` may fall before it is flagged (docs/bench-protocol.md:
# call time and tags are read from different clocks).
OTHER_SLACK_US = 1.0
OVERVIEW_COLUMNS = 4
# Colour per category, fixed so that every chart reads the same way.
COLOURS = {"comm": "#1f5fa8", "reduce": "#d2691e", "copy": "#3a9a4a", "other": "#9a9a9a"}


@dataclass(frozen=True)
class Group:
    collective: str
    mpi: str
    backend: str
    algorithm: str
    ranks: int

    @property
    def label(self) -> str:
        return label(self.backend, self.mpi, self.algorithm)

    @property
    def title(self) -> str:
        return f"{self.collective} {self.label} — {self.mpi}, {self.ranks} ranks"

    @property
    def stem(self) -> str:
        """File name (no suffix) of this group's chart."""
        return f"{self.collective}-{self.mpi}-{self.backend}-{self.algorithm}-p{self.ranks}"


@dataclass(frozen=True)
class BreakdownPoint:
    group: Group
    bytes: int
    id: str
    parts: dict[str, float]          # category -> µs, CATEGORIES
    median_us: float                 # end-to-end median of the record (max across ranks per iteration)
    end_to_end_us: float | None      # the end-to-end time `other` was derived from, as the bench reports it
    iterations: int
    dropped: int
    unbalanced: int
    basis: str
    tags: tuple[dict, ...] = field(default=(), compare=False)

    @property
    def total_us(self) -> float:
        return sum(self.parts[c] for c in CATEGORIES)

    @property
    def ratio(self) -> float | None:
        """Parts added up over the end-to-end median; 1.0 when they account for it exactly."""
        return self.total_us / self.median_us if self.median_us > 0 else None

    def share(self, category: str) -> float:
        total = self.total_us
        return 100.0 * self.parts[category] / total if total > 0 else 0.0

    @property
    def drawn_total_us(self) -> float:
        return sum(max(0.0, self.parts[c]) for c in CATEGORIES)

    @property
    def untagged(self) -> bool:
        """Nothing was tagged: the MPI library's own collective, or an algorithm without tags."""
        return all(self.parts[c] == 0 for c in TAGGED)

    @property
    def flags(self) -> list[str]:
        out = []
        if self.dropped:
            out.append(f"dropped={self.dropped}")
        if self.unbalanced:
            out.append(f"unbalanced={self.unbalanced}")
        if self.parts["other"] < -OTHER_SLACK_US:
            # Tagged time well above the call's own time. A fraction of a µs
            # below zero is expected (MPI_Wtime vs the tags' CLOCK_MONOTONIC).
            out.append("other<0")
        return out


@dataclass
class Breakdown:
    points: dict[Group, list[BreakdownPoint]]      # sorted by size within a group
    not_ok: list[Record]                           # instrumented records that did not finish ok
    uninstrumented: int                            # ok records without an `instrument` object


def _number(value: object, what: str, pid: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UserError(f"point {pid}: instrument {what} is not a number ({value!r})")
    return float(value)


def parse_point(record: Record) -> BreakdownPoint:
    """One instrumented `ok` record -> BreakdownPoint (UserError on a malformed one)."""
    rec = record.fields
    pid = rec.get("id", "?")
    inst = rec["instrument"]
    if not isinstance(inst, dict) or not isinstance(inst.get("breakdown_us"), dict):
        raise UserError(f"point {pid}: instrument has no breakdown_us object")
    bd = inst["breakdown_us"]
    parts = {}
    for c in CATEGORIES:
        if c not in bd:
            raise UserError(f"point {pid}: instrument breakdown_us lacks '{c}'")
        parts[c] = _number(bd[c], f"breakdown_us.{c}", pid)
    e2e = bd.get("end_to_end")
    stats = rec.get("stats_us") or {}
    group = Group(collective=record.collective, mpi=record.mpi, backend=record.backend,
                  algorithm=record.algorithm, ranks=record.ranks)
    tags = inst.get("tags") or ()
    return BreakdownPoint(
        group=group, bytes=record.bytes, id=pid, parts=parts,
        median_us=_number(stats.get("median", 0.0), "stats_us.median", pid),
        end_to_end_us=_number(e2e, "breakdown_us.end_to_end", pid) if e2e is not None else None,
        iterations=int(inst.get("iterations", rec.get("iterations", 0))),
        dropped=int(inst.get("dropped", 0)), unbalanced=int(inst.get("unbalanced", 0)),
        basis=str(inst.get("breakdown_basis", "")),
        tags=tuple(t for t in tags if isinstance(t, dict)),
    )


def collect(records: list[Record] | list[dict]) -> Breakdown:
    """The breakdown of a campaign's records (Records, or records.jsonl objects).
    Only `ok` points are analysed: an invalid point's times are kept for
    diagnosis, never summarised as good."""
    groups: dict[Group, list[BreakdownPoint]] = {}
    not_ok: list[Record] = []
    uninstrumented = 0
    for rec in records:
        rec = rec if isinstance(rec, Record) else Record.from_json(rec)
        has = rec.instrument is not None
        if rec.status != "ok":
            if has or rec.status in ("invalid", "failed"):
                not_ok.append(rec)
            continue
        if not has:
            uninstrumented += 1
            continue
        p = parse_point(rec)
        groups.setdefault(p.group, []).append(p)
    ordered = {g: sorted(groups[g], key=lambda p: p.bytes)
               for g in sorted(groups, key=lambda g: (g.collective, g.mpi, g.ranks, g.backend != "collkit",
                                                      g.algorithm))}
    return Breakdown(points=ordered, not_ok=not_ok, uninstrumented=uninstrumented)


def _us(v: float) -> str:
    return f"{v:.2f}" if v < 100 else f"{v:.1f}" if v < 10000 else f"{v:.0f}"


def table(points: list[BreakdownPoint]) -> str:
    headers = ["size"]
    for c in CATEGORIES:
        headers += [f"{c}_us", f"{c}%"]
    headers += ["e2e_median_us", "sum/e2e", "flags"]
    rows = []
    for p in points:
        row = [format_size(p.bytes)]
        for c in CATEGORIES:
            row += [_us(p.parts[c]), f"{p.share(c):.1f}"]
        row += [_us(p.median_us), f"{p.ratio:.3f}" if p.ratio is not None else "-", " ".join(p.flags)]
        rows.append(row)
    return render(headers, rows, right=set(range(0, len(headers) - 1)))


def text_report(bd: Breakdown) -> str:
    blocks = []
    # How the bench split the time: said once when every point says the same.
    all_bases = {p.basis for pts in bd.points.values() for p in pts if p.basis}
    shared = len(all_bases) == 1
    if shared:
        blocks.append(f"parts: {next(iter(all_bases))}")
    for group, pts in bd.points.items():
        head = group.title
        bases = sorted({p.basis for p in pts if p.basis})
        if bases and not shared:
            head += f"   [parts: {'; '.join(bases)}]"
        if group.backend == "mpi":
            blocks.append(f"{head}\n  the MPI library's own collective carries no tags: all of its time is "
                          f"'other' ({len(pts)} sizes); not drawn")
            continue
        note = ""
        if all(p.untagged for p in pts):
            note = "\n  no tagged time at all: this algorithm has no tags in this build"
        blocks.append(f"{head}\n{table(pts)}{note}")
    ratios = [p.ratio for pts in bd.points.values() for p in pts if p.ratio is not None
              and p.group.backend == "collkit"]
    if ratios:
        worst = max(ratios, key=lambda r: abs(r - 1.0))
        blocks.append(f"sum of parts / end-to-end median over {len(ratios)} collkit points: "
                      f"{min(ratios):.3f} .. {max(ratios):.3f} (furthest from 1: {abs(worst - 1.0) * 100:.1f}%)")
    flagged = [p for pts in bd.points.values() for p in pts if p.flags]
    if flagged:
        blocks.append(f"{len(flagged)} points lost tag records (dropped) or had unmatched tags (unbalanced): "
                      "their parts are incomplete")
    if bd.not_ok:
        blocks.append(f"{len(bd.not_ok)} points did not finish ok and are left out (collkit report DIR)")
    return "\n\n".join(blocks)


CSV_COLUMNS = ("collective", "mpi", "backend", "algorithm", "ranks", "bytes", "comm_us", "reduce_us", "copy_us",
               "other_us", "comm_pct", "reduce_pct", "copy_pct", "other_pct", "e2e_median_us", "sum_over_e2e",
               "dropped", "unbalanced", "id")


def to_csv(bd: Breakdown) -> str:
    """The tables as one CSV, one row per point, for plotting elsewhere."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for g, pts in bd.points.items():
        for p in pts:
            w.writerow([g.collective, g.mpi, g.backend, g.algorithm, g.ranks, p.bytes,
                        *(f"{p.parts[c]:.4f}" for c in CATEGORIES), *(f"{p.share(c):.2f}" for c in CATEGORIES),
                        f"{p.median_us:.4f}", f"{p.ratio:.5f}" if p.ratio is not None else "", p.dropped,
                        p.unbalanced, p.id])
    return buf.getvalue()


# ------------------------------------------------------------------ charts

def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise UserError("--breakdown draws with matplotlib, which is not installed: pip install matplotlib") from None
    matplotlib.use("Agg")  # files only, never a display
    # Keep text as text in SVG: searchable, and labels stay labels.
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt
    return plt


def _stack(ax, pts: list[BreakdownPoint], percent: bool) -> None:
    xs = list(range(len(pts)))
    bottoms = [0.0] * len(pts)
    for c in CATEGORIES:
        # A negative `other` (flagged in the table) cannot be stacked: drawn as 0.
        heights = [max(0.0, p.share(c) if percent else p.parts[c]) for p in pts]
        ax.bar(xs, heights, bottom=bottoms, color=COLOURS[c], label=c, width=0.8, edgecolor="white",
               linewidth=0.4)
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    ax.set_xticks(xs, [format_size(p.bytes) for p in pts], rotation=60, ha="right", fontsize=8)
    ax.set_xlabel("message size")
    if percent:
        ax.set_ylim(0, 100)
        ax.set_ylabel("share of the time (%)")
    else:
        ax.set_yscale("log")
        positive = [p.drawn_total_us for p in pts if p.drawn_total_us > 0]
        if positive:
            # Start the axis below the smallest bar so the first category stays visible.
            ax.set_ylim(min(positive) / 10, max(positive) * 2)
        ax.set_ylabel("time (µs, log scale)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def _save(fig, out_dir: Path, stem: str) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        path = out_dir / f"{stem}.{ext}"
        fig.savefig(path, dpi=120, bbox_inches="tight")
        paths.append(path)
    return paths


def charts(bd: Breakdown, out_dir: Path) -> list[Path]:
    """Per drawn group, absolute and percentage panels; per (collective, MPI, ranks)
    with several algorithms, one overview of the shares with a panel per algorithm."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    drawn = {g: pts for g, pts in bd.points.items() if g.backend != "mpi"}
    for group, pts in drawn.items():
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
        _stack(a, pts, percent=False)
        _stack(b, pts, percent=True)
        a.set_title("absolute")
        b.set_title("share")
        handles, labels = a.get_legend_handles_labels()
        fig.legend(handles[::-1], labels[::-1], loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.suptitle(group.title)
        fig.tight_layout()
        written += _save(fig, out_dir, group.stem)
        plt.close(fig)
    families: dict[tuple, list[Group]] = {}
    for g in drawn:
        families.setdefault((g.collective, g.mpi, g.ranks), []).append(g)
    for (coll, mpi, ranks), members in families.items():
        if len(members) < 2:
            continue
        # At most OVERVIEW_COLUMNS panels a row, so that "all" algorithms stay readable.
        cols = min(len(members), OVERVIEW_COLUMNS)
        rows = -(-len(members) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 4.2 * rows), sharey=True, squeeze=False)
        flat = [ax for row in axes for ax in row]
        for ax, g in zip(flat, members):
            _stack(ax, drawn[g], percent=True)
            ax.set_title(g.label)
        for i, ax in enumerate(flat):
            if i >= len(members):
                ax.set_visible(False)
            elif i % cols:
                ax.set_ylabel("")
        handles, labels = flat[0].get_legend_handles_labels()
        fig.legend(handles[::-1], labels[::-1], loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.suptitle(f"{coll}, {mpi}, {ranks} ranks: share of comm / reduce / copy / other")
        fig.tight_layout()
        written += _save(fig, out_dir, f"overview-{coll}-{mpi}-p{ranks}")
        plt.close(fig)
    return written


def report(path: Path, out_dir: Path | None = None) -> int:
    from collkit.campaign.store import Campaign
    campaign = Campaign.open(path)
    bd = collect(campaign.records())
    if not bd.points:
        raise UserError(f"{path} has no instrumented point records: run the campaign with `instrument = true` "
                        "in its spec (or `collkit run --instrument`)")
    print(text_report(bd))
    out = out_dir if out_dir is not None else path / "breakdown"
    written = charts(bd, out)
    (out / "breakdown.csv").write_text(to_csv(bd))
    if written:
        print(f"\nwrote {len(written)} charts (PNG and SVG) and breakdown.csv to {out}")
    else:
        print(f"\nno chart: only MPI-library points, which carry no tags; wrote {out / 'breakdown.csv'}")
    return 0
