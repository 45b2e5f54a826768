"""Printing traffic results: a table for people, CSV and JSON for programs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from collkit.common.table import render
from collkit.traffic.count import Traffic, Volume, reduction_pct
from collkit.traffic.jobs import JobRow, format_number

CLASSES = ("intra_node", "intra_group", "inter_group", "total")
COLUMNS = ["collective", "algorithm", "ranks", "groups", *(f"{c}_n" for c in CLASSES)]
REDUCTION = "inter_group_reduction_pct"


def _values(v: Volume) -> tuple[int, int, int, int]:
    return v.intra_node, v.intra_group, v.inter_group, v.total


def _reductions(results: list[Traffic]) -> list[float | None]:
    base = results[0].volume.inter_group
    return [None] + [reduction_pct(base, r.volume.inter_group) for r in results[1:]]


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}"


def table(results: list[Traffic], per_step: bool, context: str) -> str:
    many = len(results) > 1
    headers = COLUMNS + ([REDUCTION] if many else [])
    rows = []
    for r, red in zip(results, _reductions(results)):
        row = [r.collective, r.algorithm, str(r.ranks), str(r.groups),
               *(format_number(r.in_n(b), 4) for b in _values(r.volume))]
        if many:
            row.append(_pct(red) if red is not None else "-")
        rows.append(row)
    parts = [context, render(headers, rows, right=set(range(2, len(headers))))]
    if per_step:
        for r in results:
            step_rows = [[str(k), *(format_number(r.in_n(b), 4) for b in _values(v))]
                         for k, v in enumerate(r.steps or ())]
            parts.append(f"\n{r.algorithm}, per step (step k = every rank's k-th send):")
            parts.append(render(["step", *(f"{c}_n" for c in CLASSES)], step_rows, right=set(range(5))))
    return "\n".join(parts)


def _record(r: Traffic, red: float | None, step: str | None, v: Volume) -> dict:
    out: dict = {"collective": r.collective, "algorithm": r.algorithm, "ranks": r.ranks,
                 "nodes": r.nodes, "groups": r.groups}
    if step is not None:
        out["step"] = step
    out["n_bytes"] = r.n
    vals = _values(v)
    for c, b in zip(CLASSES, vals):
        out[f"{c}_n"] = r.in_n(b)
    for c, b in zip(CLASSES, vals):
        out[f"{c}_bytes"] = b
    if step in (None, "all"):
        out["messages"] = r.messages
        out[REDUCTION] = red
    return out


def csv_text(results: list[Traffic], per_step: bool) -> str:
    buf = io.StringIO()
    rows = []
    for r, red in zip(results, _reductions(results)):
        rows.append(_record(r, red, "all" if per_step else None, r.volume))
        if per_step:
            rows.extend(_record(r, None, str(k), v) for k, v in enumerate(r.steps or ()))
    fields = list(rows[0].keys())
    for row in rows:
        fields.extend(k for k in row if k not in fields)
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: ("" if v is None else format_number(v) if isinstance(v, float) else v)
                    for k, v in row.items()})
    return buf.getvalue().rstrip("\n")


def json_text(results: list[Traffic], per_step: bool) -> str:
    out = []
    for r, red in zip(results, _reductions(results)):
        rec = _record(r, red, None, r.volume)
        if per_step:
            rec["steps"] = [{"step": k, **{f"{c}_n": r.in_n(b) for c, b in zip(CLASSES, _values(v))},
                             **{f"{c}_bytes": b for c, b in zip(CLASSES, _values(v))}}
                            for k, v in enumerate(r.steps or ())]
        out.append(rec)
    return json.dumps(out, indent=2)


def jobs_header(algorithms: list[str]) -> list[str]:
    return ["job", "ranks", "groups", *(f"{a}_inter_group_n" for a in algorithms), "reduction_pct"]


def write_jobs(rows: list[JobRow], algorithms: list[str], out: Path | None) -> str | None:
    """CSV of the batch, to ``out`` or returned as text for stdout."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(jobs_header(algorithms))
    for r in rows:
        w.writerow([r.job, r.ranks, r.groups, *(format_number(v) for v in r.inter_group_n),
                    _pct(r.reduction_pct)])
    if out is None:
        return buf.getvalue().rstrip("\n")
    out.write_text(buf.getvalue())
    return None
