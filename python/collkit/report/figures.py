"""The report's figures, drawn with matplotlib: static images, not interactive charts.

Why matplotlib: it is already collkit's plotting library (analysis/breakdown.py), the
same figure becomes the report's inline PNG and a paper's PNG/SVG (`--figures DIR`),
and a static image costs the browser nothing whatever the number of points behind it
(a 10,000-point campaign stays a few dozen images), where a JavaScript chart library
would have to be embedded whole (no CDN: the file must open offline) and would draw
every point in the browser.

* `curves`: per collective, MPI library and rank count, median time and bus bandwidth
  against size, one line per algorithm, the median's 95 % interval as a band, the
  library default drawn thick and black; log axes.
* `per_rank`: a point measured with granularity = "ranks": each rank's median time
  (late ranks in red) and its median arrival and exit after the earliest entry.
* `best_heatmap`, `ratio_heatmap`, `change_heatmap`: the HTML heatmaps (report/sections.py)
  as figures, written with `--figures` only."""

from __future__ import annotations

import io
import math
from pathlib import Path

from collkit.analysis import stats
from collkit.campaign.record import Record
from collkit.campaign.sizes import format_size
from collkit.common.errors import UserError
from collkit.report.grids import BestGrid, ChangeGrid

# 20 distinguishable colours (Tableau 20's hues, darker first), then repeated with another line style.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
           "#dbdb8d", "#9edae5")
DEFAULT_COLOUR = "#000000"
DPI = 80          # inline PNGs: sharp enough on screen, small for a 10,000-point campaign


def pyplot():
    try:
        import matplotlib
    except ImportError:
        raise UserError("collkit's figures need matplotlib, which is not installed: pip install matplotlib") from None
    matplotlib.use("Agg")  # files only, never a display
    matplotlib.rcParams["svg.fonttype"] = "none"   # text stays text: small, searchable SVGs
    import matplotlib.pyplot as plt
    return plt


def colours(labels: list[str]) -> dict[str, str]:
    """One colour per label, in the given order (the same label, the same colour, in a section)."""
    return {lab: PALETTE[i % len(PALETTE)] for i, lab in enumerate(labels)}


def png(fig, dpi: int = DPI) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def save(fig, out_dir: Path, stem: str) -> list[Path]:
    """PNG and SVG for papers; no date in the SVG, so the same data gives the same file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "svg"):
        path = out_dir / f"{stem}.{ext}"
        fig.savefig(path, dpi=150 if ext == "png" else 72, metadata={"Date": None} if ext == "svg" else None)
        paths.append(path)
    return paths


def close(fig) -> None:
    pyplot().close(fig)


# ------------------------------------------------------------------ curves
def is_default(r: Record) -> bool:
    return r.library_default


def curves(collective: str, mpi: str, ranks: int, records: list[Record], colour: dict[str, str]):
    """Median time and bus bandwidth against size for the `ok` records of one
    (collective, MPI library, rank count)."""
    plt = pyplot()
    series: dict[str, list[Record]] = {}
    for r in records:
        if r.status == "ok" and r.time_median_us is not None and r.bytes > 0:
            series.setdefault(r.label, []).append(r)
    fig, (t_ax, bw_ax) = plt.subplots(1, 2, figsize=(14, 4.4))
    for i, (lab, rs) in enumerate(sorted(series.items(), key=lambda kv: (is_default(kv[1][0]), kv[0]))):
        rs.sort(key=lambda r: r.bytes)
        xs = [r.bytes for r in rs]
        default = is_default(rs[0])
        style = dict(color=DEFAULT_COLOUR if default else colour.get(lab, PALETTE[i % len(PALETTE)]),
                     linewidth=2.6 if default else 1.1, zorder=10 if default else 2,
                     linestyle="-" if default or (i // len(PALETTE)) % 2 == 0 else "--",
                     marker="o", markersize=3 if default else 2,
                     label=f"{lab} (default)" if default else lab)
        t_ax.plot(xs, [r.time_median_us for r in rs], **style)
        cis = [stats.record_median_ci(r) for r in rs]
        band = [(x, ci) for x, ci in zip(xs, cis) if ci is not None]
        if band:
            t_ax.fill_between([x for x, _ in band], [ci[0] for _, ci in band], [ci[1] for _, ci in band],
                              color=style["color"], alpha=0.18, linewidth=0, zorder=1)
        bw = [(r.bytes, r.busbw_GBps) for r in rs if r.busbw_GBps > 0]
        if bw:
            bw_ax.plot([x for x, _ in bw], [v for _, v in bw], **style)
    from matplotlib.ticker import FuncFormatter, NullFormatter
    for ax, what in ((t_ax, "median time (µs), band: 95 % CI"), (bw_ax, "bus bandwidth (GB/s)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        # plain numbers, not mathtext powers of ten: parsing those was a third of the drawing time
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(what)
        ax.grid(alpha=0.3, which="both")
        ax.set_axisbelow(True)
    sizes = sorted({r.bytes for rs in series.values() for r in rs})
    if sizes:
        step = max(1, math.ceil(len(sizes) / 10))
        for ax in (t_ax, bw_ax):
            ax.set_xticks(sizes[::step], [format_size(s) for s in sizes[::step]], fontsize=7, rotation=45)
            ax.minorticks_off()
    handles, labels = t_ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(0.80, 0.5), fontsize=7,
               ncol=1 if len(labels) <= 24 else 2, frameon=False)
    fig.suptitle(f"{collective}, {mpi}, {ranks} ranks")
    # fixed margins, not tight_layout: laying out every tick label twice was most of the
    # time of a 10,000-point report
    fig.subplots_adjust(left=0.06, right=0.78, bottom=0.2, top=0.9, wspace=0.28)
    return fig


# ------------------------------------------------------------------ heatmaps (--figures)
def _grid_axes(plt, rows: int, cols: int):
    return plt.subplots(figsize=(max(6.0, 1.1 * cols + 2.5), 0.7 * rows + 1.8))


def best_heatmap(g: BestGrid, colour: dict[str, str]):
    plt = pyplot()
    from matplotlib.colors import to_rgb
    fig, ax = _grid_axes(plt, len(g.ranks), len(g.sizes))
    img = [[(1.0, 1.0, 1.0)] * len(g.sizes) for _ in g.ranks]
    for (p, n), c in g.cells.items():
        i, j = g.ranks.index(p), g.sizes.index(n)
        img[i][j] = to_rgb(colour[c.best])
        text = c.best.split(":", 1)[1] + (f"\n≈{len(c.tied)}" if c.tied else "")
        ax.text(j, i, text, ha="center", va="center", fontsize=6, color="white")
    ax.imshow(img, aspect="auto", origin="lower")
    _ticks(ax, g.ranks, g.sizes)
    ax.set_title(f"{g.collective}, {g.mpi}: fastest algorithm (≈k: k others not significantly slower)", fontsize=9)
    fig.tight_layout()
    return fig


def ratio_heatmap(g: BestGrid):
    plt = pyplot()
    fig, ax = _grid_axes(plt, len(g.ranks), len(g.sizes))
    grid = [[math.nan] * len(g.sizes) for _ in g.ranks]
    for (p, n), c in g.cells.items():
        i, j = g.ranks.index(p), g.sizes.index(n)
        if c.ratio is not None and not c.tie and c.ratio > 1:
            grid[i][j] = math.log2(c.ratio)
        text = "–" if c.default_us is None else "tie" if c.tie else f"{c.ratio:.2f}×" if c.ratio else "–"
        ax.text(j, i, text, ha="center", va="center", fontsize=7)
    im = ax.imshow(grid, aspect="auto", origin="lower", cmap="OrRd", vmin=0, vmax=3)
    fig.colorbar(im, ax=ax, label="log2(default / best)")
    _ticks(ax, g.ranks, g.sizes)
    ax.set_title(f"{g.collective}, {g.mpi}: default / best, significant cells only", fontsize=9)
    fig.tight_layout()
    return fig


def change_heatmap(g: ChangeGrid, new_name: str):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(g.sizes) + 3.0), 0.35 * len(g.labels) + 1.8))
    grid = [[math.nan] * len(g.sizes) for _ in g.labels]
    for (lab, n), c in g.cells.items():
        i, j = g.labels.index(lab), g.sizes.index(n)
        if c.verdict != "same":
            grid[i][j] = math.log2(c.ratio)
        ax.text(j, i, f"{c.ratio:.2f}" if c.verdict != "same" else "=", ha="center", va="center", fontsize=6)
    im = ax.imshow(grid, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1)
    fig.colorbar(im, ax=ax, label="log2(new / base), significant only")
    ax.set_xticks(range(len(g.sizes)), [format_size(s) for s in g.sizes], fontsize=7, rotation=45)
    ax.set_yticks(range(len(g.labels)), g.labels, fontsize=7)
    ax.set_title(f"{new_name}: {g.collective}, {g.mpi}, {g.ranks} ranks", fontsize=9)
    fig.tight_layout()
    return fig


def _ticks(ax, ranks: list[int], sizes: list[int]) -> None:
    ax.set_xticks(range(len(sizes)), [format_size(s) for s in sizes], fontsize=7, rotation=45)
    ax.set_yticks(range(len(ranks)), [str(p) for p in ranks], fontsize=7)
    ax.set_xlabel("message size")
    ax.set_ylabel("ranks")


def per_rank(pr) -> object:
    """Bars of each rank's median time, late ones red; arrival and exit medians as lines."""
    plt = pyplot()
    r = pr.record
    fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
    ranks = [row.rank for row in pr.rows]
    ax.bar(ranks, [row.median_us for row in pr.rows], width=1.0 if len(ranks) > 64 else 0.8,
           color=["#d62728" if row.late else "#1f77b4" for row in pr.rows], label="median time")
    ax.plot(ranks, [row.arrival_median_us for row in pr.rows], color="#2ca02c", lw=1, label="arrival (median)")
    ax.plot(ranks, [row.exit_median_us for row in pr.rows], color="#7f7f7f", lw=1, label="exit (median)")
    ax.axhline(pr.typical_us, color="#000000", lw=0.8, ls="--", label="median rank")
    ax.set_xlabel("rank")
    ax.set_ylabel("us")
    ax.set_title(f"{r.collective} {r.label} p={r.ranks} {format_size(r.bytes)}", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    return fig
