"""The report's sections as HTML fragments: one function per section, plain strings.

Heatmaps are HTML tables (a cell per rank count and size, its colour, its text, and
data-* attributes a test or a script can read), so that they stay sharp, searchable
and checkable in the DOM; curves and breakdowns are inline PNGs (report/figures.py)."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math

from collkit.analysis import per_rank, results, stats
from collkit.analysis.compare import Comparison, regressions
from collkit.campaign.record import Record
from collkit.campaign.sizes import format_size
from collkit.report.bine import Cell, Summary, pct
from collkit.report.grids import BestGrid, ChangeGrid
from collkit.report.model import CampaignData

esc = html.escape


def img(png: bytes, alt: str) -> str:
    return f'<img class="fig" alt="{esc(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _us(v: float | None) -> str:
    if v is None:
        return ""
    return f"{v:.2f}" if v < 100 else f"{v:.1f}" if v < 10000 else f"{v:.0f}"


def _td(text: str, value=None, cls: str = ""):
    """One cell of a sortable table, as the report's script reads it: the text alone, or
    [text, sort value (a number, or "" for none), class]."""
    if value is None and not cls:
        return text
    return [text, "" if value is None or value == "" else float(value), cls]


# ------------------------------------------------------------------ header
def _kv(rows: list[tuple[str, str]]) -> str:
    return '<table class="kv">' + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows if v) \
        + "</table>"


def header(c: CampaignData) -> str:
    m = c.metadata
    mach = m.get("machine", {}) if isinstance(m.get("machine"), dict) else {}
    mem = mach.get("memory_bytes")
    where = ", ".join(x for x in (str(mach.get("hostname", "")), str(mach.get("cpu_model", "")),
                                  f"{mach['cores']} cores" if mach.get("cores") else "",
                                  f"{mem / 2**30:.0f} GiB" if isinstance(mem, (int, float)) else "",
                                  str(mach.get("os", ""))) if x)
    libs = []
    for name, info in (m.get("mpis") or {}).items():
        if isinstance(info, dict):
            ver = info.get("library_version", "")
            ver = "; ".join(ver) if isinstance(ver, list) else str(ver)
            ver = ver or str(info.get("mpirun_version", ""))
            # MPICH's version string runs over many lines of configure flags: its first line is enough
            libs.append(f"{name}: {ver.strip().splitlines()[0][:120] if ver.strip() else '?'}")
    ck = m.get("collkit", {}) if isinstance(m.get("collkit"), dict) else {}
    commit = f"{ck.get('version', '')} commit {ck.get('commit') or '?'}{' (dirty tree)' if ck.get('dirty') else ''}" \
        if ck else ""
    plat = m.get("platform", {}) if isinstance(m.get("platform"), dict) else {}
    n = c.counts
    counts = (f'<p class="counts"><b>{n.ok}</b> ok · <b class="bad">{n.invalid}</b> invalid · '
              f'<b class="bad">{n.failed}</b> failed · <b>{n.skipped}</b> skipped · '
              f'<b>{c.implausible}</b> implausible · <b>{c.unstable}</b> unstable · '
              f'{n.unrecorded} not recorded, of {n.planned} planned</p>')
    rows = [("campaign", f"{c.name} — {c.path}"), ("description", c.description),
            ("state", f"{c.state.get('status', '?')}, created {c.state.get('created', '?')}, "
                      f"updated {c.state.get('updated', '?')}"),
            ("machine", where), ("platform", str(plat.get("name", ""))), ("libraries", "; ".join(libs)),
            ("collkit", commit), ("command", " ".join(map(str, m.get("command") or []))),
            ("instrumented", "yes" if m.get("instrument") else "")]
    if not m:
        rows.append(("metadata", "no metadata.json yet: the campaign has not finished"))
    spec = f"<details><summary>spec.toml</summary><pre>{esc(c.spec_text)}</pre></details>" if c.spec_text else ""
    return _kv(rows) + counts + spec


# ------------------------------------------------------------------ heatmaps
def _grid_table(cls: str, caption: str, ranks: list[int], sizes: list[int], cell) -> str:
    head = "".join(f"<th>{format_size(s)}</th>" for s in sizes)
    body = []
    for p in reversed(ranks):
        body.append(f"<tr><th>{p}</th>" + "".join(cell(p, s) for s in sizes) + "</tr>")
    return (f'<figure class="heat"><figcaption>{caption}</figcaption><table class="heat {cls}"><thead><tr>'
            f'<th>ranks \\ size</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></figure>')


def ink(background: str) -> str:
    """Black or white text, whichever reads better on a #rrggbb background."""
    r, g, b = (int(background[i:i + 2], 16) for i in (1, 3, 5))
    return "#000" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#fff"


def best_heatmap(g: BestGrid, colour: dict[str, str]) -> str:
    def cell(p: int, n: int) -> str:
        c = g.cells.get((p, n))
        if c is None:
            return '<td class="empty"></td>'
        name = c.best.split(":", 1)[1] if c.best.startswith("collkit:") else c.best
        tip = f"{c.best}: {_us(c.best_us)} µs of {c.candidates} measured"
        if c.tied:
            tip += "; not significantly slower: " + ", ".join(c.tied)
        mark = f'<span class="tie">≈{len(c.tied)}</span>' if c.tied else ""
        return (f'<td style="background:{colour[c.best]};color:{ink(colour[c.best])}" data-coll="{esc(g.collective)}" '
                f'data-mpi="{esc(g.mpi)}" data-ranks="{p}" data-bytes="{n}" '
                f'data-best="{esc(c.best)}" data-tied="{len(c.tied)}" title="{esc(tip)}"'
                f'{" class=tied" if c.tied else ""}>{esc(name)}{mark}</td>')
    cap = (f"{esc(g.collective)}, {esc(g.mpi)}: fastest algorithm per rank count and size "
           "(≈k, hatched: k other algorithms not significantly slower at the level they were measured, "
           "inside shared launches or between launches; Holm, p ≥ "
           f"{stats.ALPHA:g}; hover for them)")
    return _grid_table("best", cap, g.ranks, g.sizes, cell)


def _ratio_colour(r: float) -> str:
    # 1x white .. 8x and beyond deep red, on a log scale
    f = min(1.0, math.log2(max(r, 1.0)) / 3.0)
    return f"rgb(255,{int(245 - 175 * f)},{int(235 - 200 * f)})"


def ratio_heatmap(g: BestGrid) -> str:
    def cell(p: int, n: int) -> str:
        c = g.cells.get((p, n))
        if c is None:
            return '<td class="empty"></td>'
        attrs = f'data-coll="{esc(g.collective)}" data-mpi="{esc(g.mpi)}" data-ranks="{p}" data-bytes="{n}"'
        if c.default_us is None:
            return f'<td {attrs} data-ratio="" class="none">–</td>'
        if c.tie:
            return f'<td {attrs} data-ratio="tie" class="same" title="not significantly different">tie</td>'
        if c.ratio is None or c.ratio <= 1.0:
            return f'<td {attrs} data-ratio="1" class="same" title="the default is the fastest">best</td>'
        return (f'<td {attrs} data-ratio="{c.ratio:.4f}" style="background:{_ratio_colour(c.ratio)}" '
                f'title="default {_us(c.default_us)} µs, best {_us(c.best_us)} µs">{c.ratio:.2f}×</td>')
    cap = (f"{esc(g.collective)}, {esc(g.mpi)}: library default / fastest, coloured only where the default is "
           f"significantly slower (Holm-adjusted p &lt; {stats.ALPHA:g}); tie: not significant; –: no default")
    return _grid_table("ratio", cap, g.ranks, g.sizes, cell)


def legend(labels: list[str], colour: dict[str, str]) -> str:
    return '<p class="legend">' + " ".join(
        f'<span><i style="background:{colour[lab]}"></i>{esc(lab)}</span>' for lab in labels) + "</p>"


# ------------------------------------------------------------------ point tables
POINT_COLUMNS = ("mpi", "algorithm", "ranks", "size", "status", "median µs", "95% CI µs", "p5 µs", "p95 µs",
                 "busbw GB/s", "iterations", "flags")


def sortable(table_id: str, headers: tuple[str, ...] | list[str], rows: list[list]) -> str:
    """A table the script fills a page at a time from its rows as JSON: 10,000 rows as
    table elements took Chromium tens of seconds to lay out; one page of them, none."""
    head = "".join(f'<th data-col="{i}">{esc(h)}</th>' for i, h in enumerate(headers))
    # "</" cannot end the script element early once escaped; JSON reads "<\/" as "</"
    data = json.dumps(rows, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    return (f'<table class="sortable points" id="{table_id}" data-rows="{len(rows)}"><thead><tr>{head}</tr>'
            f'</thead><tbody></tbody></table><p class="pager" data-for="{table_id}"></p>'
            f'<script type="application/json" id="{table_id}-data">{data}</script>')


def point_rows(records: list[Record]) -> list[str]:
    rows = []
    for r in results.sort_rows(records):
        ci = stats.record_median_ci(r)
        flags = [c.kind for c in results.point_checks(r)] if r.status == "ok" else []
        rows.append([
            _td(r.mpi), _td(r.label), _td(str(r.ranks), r.ranks), _td(format_size(r.bytes), r.bytes),
            _td(r.status, cls=r.status), _td(_us(r.time_median_us), r.time_median_us if r.timed else ""),
            _td(f"{_us(ci[0])}–{_us(ci[1])}" if ci else "", ci[0] if ci else ""),
            _td(_us(r.time_p5_us), r.time_p5_us if r.time_p5_us is not None else ""),
            _td(_us(r.time_p95_us), r.time_p95_us if r.time_p95_us is not None else ""),
            _td(f"{r.busbw_GBps:.3g}" if r.timed else "", r.busbw_GBps if r.timed else ""),
            _td(str(r.iterations), r.iterations), _td(" ".join(flags))])
    return rows


def problems(records: list[Record], table_id: str) -> str:
    bad = [r for r in results.sort_rows(records) if r.status in ("invalid", "failed", "skipped")]
    if not bad:
        return "<p>Every recorded point finished ok.</p>"
    rows = [[_td(r.status, cls=r.status), _td(r.collective), _td(r.label), _td(str(r.ranks), r.ranks),
             _td(format_size(r.bytes), r.bytes), _td(r.reason or "(no reason recorded)")] for r in bad]
    return sortable(table_id, ("status", "collective", "algorithm", "ranks", "size", "reason"), rows)


# ------------------------------------------------------------------ per rank
def per_rank_rows(points: list["per_rank.PointRanks"]) -> list[list]:
    """The per-rank table's rows (granularity = "ranks"); late ranks in the "late" class."""
    rows = []
    for pr in points:
        r, text = pr.record, per_rank.cells(pr)
        rows.append([_td(text[0]), _td(text[1]), _td(str(r.ranks), r.ranks), _td(text[3], r.bytes),
                     _td(text[4], pr.typical_us), _td(text[5], len(pr.late), "late" if pr.late else ""),
                     _td(text[6], len(pr.late_nodes), "late" if pr.late_nodes else ""),
                     _td(text[7], pr.arrival_skew_us), _td(text[8], pr.exit_skew_us), _td(text[9], pr.iterations)])
    return rows


def per_rank_nodes(pr: "per_rank.PointRanks") -> str:
    """Per node: ranks and their median (only when the point ran on more than one node)."""
    if len(pr.nodes) < 2:
        return ""
    body = "".join(f'<tr{" class=late" if n.late else ""}><td>{esc(n.host)}</td><td>{n.ranks}</td>'
                   f"<td>{_us(n.median_us)}</td></tr>" for n in sorted(pr.nodes, key=lambda n: -n.median_us))
    return f'<table class="kv"><tr><th>node</th><th>ranks</th><th>median of its ranks (us)</th></tr>{body}</table>'


# ------------------------------------------------------------------ comparison
def change_heatmap(g: ChangeGrid) -> str:
    head = "".join(f"<th>{format_size(s)}</th>" for s in g.sizes)
    body = []
    for lab in g.labels:
        cells = []
        for n in g.sizes:
            c = g.cells.get((lab, n))
            if c is None:
                cells.append('<td class="empty"></td>')
                continue
            tip = f"new/base {c.ratio:.3f}, 95% CI [{c.low:.3f}, {c.high:.3f}]"
            attrs = f'data-label="{esc(lab)}" data-bytes="{n}" data-verdict="{c.verdict}" title="{tip}"'
            if c.verdict == "same":
                cells.append(f'<td {attrs} class="same">=</td>')
            elif c.verdict == "unknown":   # too few launches for the test (analysis/compare.py)
                cells.append(f'<td {attrs} class="same">?</td>')
            else:
                f = min(1.0, abs(math.log2(c.ratio)))
                col = (f"rgb(255,{int(235 - 170 * f)},{int(225 - 190 * f)})" if c.verdict == "slower"
                       else f"rgb({int(225 - 190 * f)},{int(235 - 120 * f)},255)")
                cells.append(f'<td {attrs} style="background:{col}">{c.ratio:.2f}</td>')
        body.append(f"<tr><th>{esc(lab)}</th>{''.join(cells)}</tr>")
    cap = (f"{esc(g.collective)}, {esc(g.mpi)}, {g.ranks} ranks: new / base, coloured where significant "
           f"(red slower, blue faster; =: no significant change; ?: too few launches to tell)")
    return (f'<figure class="heat"><figcaption>{cap}</figcaption><table class="heat change"><thead><tr>'
            f'<th>algorithm \\ size</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></figure>')


def regression_list(c: Comparison, names: dict[str, str]) -> str:
    bad = sorted(regressions(c, 0.0), key=lambda r: -(r.ratio or 0))
    if not bad:
        return "<p>No point is significantly slower.</p>"
    rows = [[_td(names.get(r.new, r.new)), _td(r.collective), _td(r.label), _td(str(r.ranks), r.ranks),
             _td(format_size(r.bytes), r.bytes), _td(_us(r.base_median_us), r.base_median_us),
             _td(_us(r.new_median_us), r.new_median_us), _td(f"{r.ratio:.3f}", r.ratio),
             _td(f"[{r.ratio_ci_low:.3f}, {r.ratio_ci_high:.3f}]", r.ratio_ci_low),
             _td(f"{r.p_holm:.2g}", r.p_holm)] for r in bad]
    return sortable("regressions", ("new", "collective", "algorithm", "ranks", "size", "base µs", "new µs",
                                    "new/base", "95% CI", "p (Holm)"), rows)


# ------------------------------------------------------------------ Bine, simulation, traffic
def bine_table(summaries: list[Summary], all_cells: list[Cell]) -> str:
    rows = "".join(f"<tr><td>{esc(s.system)}</td><td>{esc(s.collective)}</td><td>{s.cells}</td>"
                   f"<td>{s.win_pct:.0f} %</td><td>{pct(s.gain_gmean)}</td><td>{pct(s.gain_max)}</td>"
                   f"<td>{s.loss_pct:.0f} %</td><td>{pct(s.drop_max)}</td><td>{s.ties}</td></tr>" for s in summaries)
    return ('<table class="plain bine"><thead><tr><th>system</th><th>collective</th><th>cells</th><th>Bine wins</th>'
            '<th>gain gmean</th><th>gain max</th><th>Bine loses</th><th>drop max</th><th>ties</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _flatten(prefix: str, obj, out: list[tuple[str, str]], depth: int = 0) -> None:
    if isinstance(obj, dict) and depth < 3:
        for k, v in obj.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out, depth + 1)
    else:
        out.append((prefix, obj if isinstance(obj, str) else json.dumps(obj)))


def machine_model(sim: dict) -> str:
    rows: list[tuple[str, str]] = []
    _flatten("", {k: v for k, v in sim.items() if k != "launches"}, rows)
    return _kv(rows)


def csv_table(text: str) -> str:
    data = list(csv.reader(io.StringIO(text)))
    if not data:
        return "<p>(empty)</p>"
    head = "".join(f"<th>{esc(h)}</th>" for h in data[0])
    body = "".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>" for row in data[1:])
    return f'<table class="plain"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
