"""Campaign records as rows: `collkit export`, results.csv, and the summary table."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass

from collkit.campaign.sizes import format_size
from collkit.common.table import render

COLUMNS = ("collective", "backend", "mpi", "algorithm", "ranks", "count", "bytes", "dtype", "op", "root",
           "in_place", "status", "reason", "iterations", "time_min_us", "time_median_us", "time_max_us",
           "time_p5_us", "time_p95_us", "algbw_GBps", "busbw_GBps", "sync", "native", "id")
# Instrumented campaigns (collkit-bench-instr) add the time breakdown of each point.
BREAKDOWN_COLUMNS = ("comm_us", "reduce_us", "copy_us", "other_us")


@dataclass(frozen=True)
class Row:
    collective: str
    backend: str
    mpi: str
    algorithm: str
    ranks: int
    count: int
    bytes: int
    dtype: str
    op: str
    root: int
    in_place: bool
    status: str
    reason: str
    iterations: int
    time_min_us: float | None
    time_median_us: float | None
    time_max_us: float | None
    time_p5_us: float | None
    time_p95_us: float | None
    algbw_GBps: float
    busbw_GBps: float
    sync: str
    native: str
    id: str
    comm_us: float | None = None
    reduce_us: float | None = None
    copy_us: float | None = None
    other_us: float | None = None

    @property
    def label(self) -> str:
        return f"{'collkit' if self.backend == 'collkit' else self.mpi}:{self.algorithm}"


def row(rec: dict) -> Row:
    stats = rec.get("stats_us") or {}
    timed = rec.get("status") in ("ok", "invalid") and rec.get("iterations", 0) > 0

    def stat(key: str) -> float | None:
        return stats.get(key) if timed else None

    inst = rec.get("instrument")
    parts = inst.get("breakdown_us") if timed and isinstance(inst, dict) else None
    parts = parts if isinstance(parts, dict) else {}

    return Row(
        collective=rec.get("collective", ""), backend=rec.get("backend", ""), mpi=rec.get("mpi", ""),
        algorithm=rec.get("algorithm", ""), ranks=int(rec.get("ranks", 0)), count=int(rec.get("count", 0)),
        bytes=int(rec.get("bytes", 0)), dtype=rec.get("dtype", ""), op=rec.get("op", ""),
        root=int(rec.get("root", 0)), in_place=bool(rec.get("in_place", False)), status=rec.get("status", ""),
        reason=rec.get("reason", ""), iterations=int(rec.get("iterations", 0)),
        time_min_us=stat("min"), time_median_us=stat("median"), time_max_us=stat("max"),
        time_p5_us=stat("p5"), time_p95_us=stat("p95"),
        algbw_GBps=float(rec.get("algbw_GBps", 0.0)) if timed else 0.0,
        busbw_GBps=float(rec.get("busbw_GBps", 0.0)) if timed else 0.0,
        sync=rec.get("sync", ""), native=str(rec.get("native", "")), id=rec.get("id", ""),
        **{c: parts.get(c[:-3]) for c in BREAKDOWN_COLUMNS},
    )


def sort_rows(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (r.collective, r.mpi, r.ranks, r.bytes, r.backend, r.algorithm))


def columns(rows: list[Row]) -> tuple[str, ...]:
    """COLUMNS, plus the breakdown columns when some point carries a breakdown."""
    return COLUMNS + BREAKDOWN_COLUMNS if any(r.comm_us is not None for r in rows) else COLUMNS


def to_csv(rows: list[Row]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = columns(rows)
    w.writerow(cols)
    for r in sort_rows(rows):
        d = asdict(r)
        w.writerow(["" if d[c] is None else int(d[c]) if isinstance(d[c], bool) else d[c] for c in cols])
    return buf.getvalue()


def to_json(rows: list[Row]) -> str:
    cols = columns(rows)
    return json.dumps([{c: asdict(r)[c] for c in cols} for r in sort_rows(rows)], indent=2) + "\n"


@dataclass(frozen=True)
class SummaryLine:
    collective: str
    mpi: str
    ranks: int
    bytes: int
    best: str
    best_us: float
    default: str | None
    default_us: float | None
    candidates: int

    @property
    def ratio(self) -> float | None:
        return self.default_us / self.best_us if self.default_us and self.best_us else None


def summarise(rows: list[Row]) -> list[SummaryLine]:
    """Per collective, MPI library, rank count and size: the fastest `ok` point and
    the library default's time. Invalid or failed points never win."""
    groups: dict[tuple, list[Row]] = {}
    for r in rows:
        if r.status == "ok" and r.time_median_us is not None:
            groups.setdefault((r.collective, r.mpi, r.ranks, r.bytes), []).append(r)
    out = []
    for (coll, mpi, ranks, size), members in sorted(groups.items()):
        best = min(members, key=lambda r: r.time_median_us)
        default = next((r for r in members if r.backend == "mpi" and r.algorithm == "default"), None)
        out.append(SummaryLine(coll, mpi, ranks, size, best.label, best.time_median_us,
                               default.label if default else None,
                               default.time_median_us if default else None, len(members)))
    return out


def _us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def summary_table(lines: list[SummaryLine]) -> str:
    header = ["collective", "mpi", "ranks", "size", "best", "best_us", "default_us", "default/best", "n"]
    rows = [[s.collective, s.mpi, str(s.ranks), format_size(s.bytes), s.best, _us(s.best_us),
             _us(s.default_us), f"{s.ratio:.2f}x" if s.ratio else "-", str(s.candidates)] for s in lines]
    return render(header, rows, right={2, 3, 5, 6, 7, 8})


def status_counts(rows: list[Row]) -> dict[str, int]:
    counts = {"ok": 0, "invalid": 0, "failed": 0, "skipped": 0}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


def problems_table(rows: list[Row], limit: int = 20) -> str:
    bad = [r for r in sort_rows(rows) if r.status in ("invalid", "failed")]
    if not bad:
        return ""
    body = [[r.status, r.collective, r.label, f"p={r.ranks}", format_size(r.bytes), r.reason[:90]] for r in bad[:limit]]
    more = f"\n... and {len(bad) - limit} more (collkit export DIR)" if len(bad) > limit else ""
    return render(["status", "collective", "algorithm", "ranks", "size", "reason"], body) + more
