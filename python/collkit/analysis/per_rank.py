"""The per-rank picture of points measured with [measure] granularity = "ranks".

From a record's `per_rank` object (docs/bench-protocol.md, "Per-rank records"), its
matrix (campaign/per_rank.py) and the hosts of the launch that ran it:

* which ranks are late: a rank whose median time exceeds LATE_FACTOR x the point's
  median rank (the median of the ranks' medians);
* per node (the launch record's host of each rank): its ranks' median, and which
  nodes are late (that median above LATE_FACTOR x the point's median rank);
* the skew: per iteration, the latest entry minus the earliest one (arrival skew)
  and the latest exit minus the earliest one (exit skew), their medians over the
  iterations; from the ranks' medians when the matrix cannot be read.

`report` (text), `report --html` and `export --format ranks` all read it here."""

from __future__ import annotations

import csv
import io
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from collkit.campaign import per_rank as store
from collkit.campaign.record import Record
from collkit.campaign.sizes import format_size
from collkit.common import atomic
from collkit.common.table import render, terminal_width

# Late: more than half again as slow as the point's median rank. Per-rank medians of
# a steady point lie within a few % of each other on a quiet machine; a rank held up
# by its node (another job, a slow NIC, a throttled core) shows as a factor.
LATE_FACTOR = 1.5


@dataclass(frozen=True)
class RankRow:
    rank: int
    host: str
    median_us: float
    arrival_median_us: float
    exit_median_us: float
    clock_error_us: float
    late: bool


@dataclass(frozen=True)
class NodeRow:
    host: str
    ranks: int
    median_us: float      # median of its ranks' medians
    late: bool


@dataclass(frozen=True)
class PointRanks:
    record: Record
    iterations: int       # in the matrix (the first kept ones)
    of_iterations: int    # kept in the point
    clock: str            # "global" or "offset"
    rows: list[RankRow]
    typical_us: float     # the point's median rank
    nodes: list[NodeRow]
    arrival_skew_us: float
    exit_skew_us: float
    skew_basis: str       # "iterations" (the matrix) or "rank medians"

    @property
    def late(self) -> list[RankRow]:
        return [r for r in self.rows if r.late]

    @property
    def late_nodes(self) -> list[NodeRow]:
        return [n for n in self.nodes if n.late]


def _floats(v, n: int) -> list[float] | None:
    if not isinstance(v, list) or len(v) != n:
        return None
    try:
        return [float(x) for x in v]
    except (TypeError, ValueError):
        return None


def hosts_by_launch(campaign_dir: Path) -> dict[int, list[str]]:
    """launches.jsonl: each launch's host per rank (collkit-bench's launch record)."""
    out = {}
    for rec in atomic.read_jsonl(campaign_dir / "launches.jsonl"):
        hosts = rec.get("hosts")
        if isinstance(rec.get("launch"), int) and isinstance(hosts, list):
            out[rec["launch"]] = [str(h) for h in hosts]
    return out


def of_record(r: Record, campaign_dir: Path | None, hosts: list[str] | None = None) -> PointRanks | None:
    """The per-rank picture of one record, None when it has none (or it is unreadable)."""
    pr = r.fields.get("per_rank")
    if not isinstance(pr, dict) or r.status not in ("ok", "invalid"):
        return None
    p = r.ranks
    # clock_error_us is left out on a global clock (no offsets: no error)
    cols = [_floats(pr.get(k, [0.0] * p if k == "clock_error_us" else None), p)
            for k in ("median_us", "arrival_median_us", "exit_median_us", "clock_error_us")]
    if any(c is None for c in cols) or p < 1:
        return None
    med, arr, ext, err = cols
    typical = float(np.median(med))
    hosts = hosts if hosts is not None and len(hosts) == p else [""] * p
    rows = [RankRow(k, hosts[k], med[k], arr[k], ext[k], err[k], typical > 0 and med[k] > LATE_FACTOR * typical)
            for k in range(p)]
    by_host: dict[str, list[float]] = {}
    for row in rows:
        if row.host:
            by_host.setdefault(row.host, []).append(row.median_us)
    node_med = {h: float(np.median(v)) for h, v in by_host.items()}
    # A node is late when its ranks' median is: against the point's median rank, not
    # the nodes' median, which two nodes, one of them slow, would put half way.
    nodes = [NodeRow(h, len(by_host[h]), m, len(node_med) > 1 and typical > 0 and m > LATE_FACTOR * typical)
             for h, m in node_med.items()]
    m = store.matrix(r.fields, campaign_dir)
    if m is not None and m.ndim == 3 and m.shape[0] == 3 and m.shape[1] == p and m.shape[2] > 0:
        arrival = float(np.median(m[1].max(axis=0) - m[1].min(axis=0)))
        exits = float(np.median(m[2].max(axis=0) - m[2].min(axis=0)))
        basis = "iterations"
    else:
        arrival, exits, basis = max(arr) - min(arr), max(ext) - min(ext), "rank medians"
    return PointRanks(record=r, iterations=int(pr.get("iterations", 0) or 0),
                      of_iterations=int(pr.get("of_iterations", 0) or 0), clock=str(pr.get("clock", "")),
                      rows=rows, typical_us=typical, nodes=nodes, arrival_skew_us=arrival, exit_skew_us=exits,
                      skew_basis=basis)


def collect(records: list[Record], campaign_dir: Path) -> list[PointRanks]:
    hosts = hosts_by_launch(campaign_dir)
    out = []
    for r in sorted(records, key=lambda r: (r.collective, r.label, r.ranks, r.bytes, r.id)):
        launch = r.fields.get("launch")
        pr = of_record(r, campaign_dir, hosts.get(launch) if isinstance(launch, int) else None)
        if pr is not None:
            out.append(pr)
    return out


def _us(v: float) -> str:
    return f"{v:.2f}" if abs(v) < 100 else f"{v:.1f}" if abs(v) < 10000 else f"{v:.0f}"


def late_text(pr: PointRanks, limit: int = 6) -> str:
    """'2 (20050 us)' or 'none'; ranks past `limit` counted."""
    late = sorted(pr.late, key=lambda row: -row.median_us)
    if not late:
        return "none"
    shown = ", ".join(f"{row.rank} ({_us(row.median_us)} us)" for row in late[:limit])
    return shown + (f" and {len(late) - limit} more" if len(late) > limit else "")


def nodes_text(pr: PointRanks) -> str:
    if len(pr.nodes) < 2:
        return "-" if not pr.nodes else "one node"
    late = sorted(pr.late_nodes, key=lambda n: -n.median_us)
    return ", ".join(f"{n.host} ({_us(n.median_us)} us)" for n in late) if late else "none"


HEADERS = ["collective", "algorithm", "ranks", "size", "median rank us", "late ranks (median)", "late nodes",
           "arrival skew us", "exit skew us", "iterations"]


def cells(pr: PointRanks) -> list[str]:
    r = pr.record
    its = f"{pr.iterations}" + (f" of {pr.of_iterations}" if pr.of_iterations > pr.iterations else "")
    return [r.collective, r.label, f"p={r.ranks}", format_size(r.bytes), _us(pr.typical_us), late_text(pr),
            nodes_text(pr), _us(pr.arrival_skew_us), _us(pr.exit_skew_us), its]


# The text report's columns: HEADERS less collective and algorithm, which title each
# section, and the late ranks and nodes, which go on lines of their own under the row.
TEXT_HEADERS = ["ranks", "size", "median rank us", "arrival skew us", "exit skew us", "iterations"]


def table(points: list[PointRanks], limit: int | None = 40, width: int | None = None) -> str:
    """The text report's per-rank tables, one per collective and algorithm ("" when no
    point has per-rank data; the first `limit` points, None: all)."""
    if not points:
        return ""
    width = width or terminal_width()
    limit = len(points) if limit is None else limit
    sections: dict[str, list[PointRanks]] = {}
    for pr in points[:limit]:
        sections.setdefault(f"{pr.record.collective} {pr.record.label}", []).append(pr)
    rows = {id(pr): [cells(pr)[k] for k in (2, 3, 4, 7, 8, 9)] for pr in points[:limit]}
    widths = [max([len(h)] + [len(r[i]) for r in rows.values()]) for i, h in enumerate(TEXT_HEADERS)]
    out = []
    for title, members in sections.items():
        out += ([""] if out else []) + [title]
        for k, pr in enumerate(members):
            lines = render(TEXT_HEADERS, [rows[id(pr)]], right={0, 1, 2, 3, 4}, width=width,
                           min_widths=widths).splitlines()
            out += lines if k == 0 else lines[2:]
            if pr.late or pr.late_nodes:
                late = f"late ranks (median): {late_text(pr)}" + (f"; late nodes: {nodes_text(pr)}"
                                                                 if pr.late_nodes else "")
                out += textwrap.wrap(late, width, initial_indent="    ", subsequent_indent="      ")
    more = f"\n... and {len(points) - limit} more (collkit export DIR --format ranks)" if len(points) > limit else ""
    return "\n".join(out) + more


EXPORT_COLUMNS = ["id", "label", "collective", "ranks", "bytes", "rank", "host", "median_us", "arrival_median_us",
                  "exit_median_us", "clock_error_us", "late", "iterations", "clock"]


def to_csv(points: list[PointRanks]) -> str:
    """`collkit export DIR --format ranks`: one row per rank of every point that has them."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(EXPORT_COLUMNS)
    for pr in points:
        r = pr.record
        for row in pr.rows:
            w.writerow([r.id, r.label, r.collective, r.ranks, r.bytes, row.rank, row.host, f"{row.median_us:.3f}",
                        f"{row.arrival_median_us:.3f}", f"{row.exit_median_us:.3f}", f"{row.clock_error_us:.3f}",
                        int(row.late), pr.iterations, pr.clock])
    return buf.getvalue()
