"""`collkit report DIR [DIR...] --html [--out FILE] [--figures DIR]`: one self-contained HTML file.

Nothing is fetched when the file is opened: the images are inline PNGs (data: URLs),
the heatmaps HTML tables, the style sheet and the one small script (sortable tables)
inline. Sections, per campaign: what was measured where and when (metadata), the
heatmaps of the fastest algorithm and of default/best, time and bus bandwidth against
size, the time breakdowns of instrumented campaigns, the simulated machine, traffic
tables kept beside the campaign (DIR/traffic*.csv), Bine against the classic
algorithms (the Bine paper's Table 3), every point, and the points that did not
finish ok. With two or more campaigns: the comparison of the first with the others
(analysis/compare.py), as heatmaps of significant changes and the list of regressions.

`--figures DIR` writes the same figures (and the heatmaps) as PNG and SVG for papers."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from collkit.analysis import breakdown, compare, per_rank
from collkit.campaign.sizes import format_size
from collkit.common.errors import UserError
from collkit.report import bine, figures, grids, model, sections
from collkit.report.model import CampaignData

esc = sections.esc
PER_RANK_FIGURES = 12   # figures of points with late ranks; the table lists them all

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 2em 4em;color:#222;max-width:1500px}
h1{margin:.6em 0 .2em}h2{border-bottom:2px solid #ccc;margin-top:2em}h3{margin:1.4em 0 .4em}
nav{background:#f4f4f4;padding:.5em 1em;position:sticky;top:0;z-index:1;border-bottom:1px solid #ddd}
nav a{margin-right:1em}
table{border-collapse:collapse;margin:.4em 0 1em}
th,td{padding:2px 6px;border:1px solid #ddd;font-size:12px}th{background:#f4f4f4}
table.kv th{text-align:left;vertical-align:top}
figure.heat{display:inline-block;vertical-align:top;margin:0 2em 1em 0;max-width:100%;overflow-x:auto}
figcaption{font-size:12px;color:#444;max-width:46em;margin-bottom:.3em}
table.heat td{text-align:center;min-width:5em}
table.heat td.tied{background-image:repeating-linear-gradient(45deg,rgba(255,255,255,.35) 0 3px,transparent 3px 7px)}
table.heat td.same{background:#eee}table.heat td.none{background:#fafafa}table.heat td.empty{background:#fff}
span.tie{font-size:10px;margin-left:3px}
.legend span{display:inline-block;margin:0 1em .2em 0;font-size:12px}
.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:middle}
img.fig{max-width:100%;display:block;margin:.3em 0 1em;border:1px solid #eee}
table.sortable th{cursor:pointer;user-select:none}table.sortable th.asc:after{content:" ▲"}
table.sortable th.desc:after{content:" ▼"}
p.pager{font-size:12px;margin:-.6em 0 1em}p.pager button{margin-left:.5em}
td.invalid,td.failed,td.late,tr.late td,b.bad{color:#b00}td.skipped{color:#777}
.scroll{max-height:32em;overflow:auto;border:1px solid #eee;display:inline-block;max-width:100%}
pre{background:#f7f7f7;padding:.6em;overflow:auto}.counts{font-size:15px}.note{color:#555}
"""

# Sortable tables, filled from their JSON rows a page (CK_PAGE rows) at a time: a click on
# a header sorts its column (numbers by value, text otherwise), a second click reverses.
# `#sort=TABLE:COL[:desc]` in the URL sorts on load (how the browser tests click without
# an input device); `#only=SECTION` shows that section alone (one screenshot per section;
# a section to print). Written for this report.
JS = """
var CK_PAGE = 100;
function ckKey(cell) {
  if (typeof cell === 'string') return cell;
  return cell[1] === '' ? -Infinity : cell[1];
}
function ckRender(table) {
  var rows = table.ckRows, page = table.ckPage, body = table.tBodies[0];
  var first = page * CK_PAGE, last = Math.min(rows.length, first + CK_PAGE);
  var frag = document.createDocumentFragment();
  for (var i = first; i < last; i++) {
    var tr = document.createElement('tr');
    rows[i].forEach(function (cell) {
      var td = document.createElement('td');
      if (typeof cell === 'string') { td.textContent = cell; }
      else {
        td.textContent = cell[0];
        if (cell[1] !== '') td.setAttribute('data-v', cell[1]);
        if (cell[2]) td.className = cell[2];
      }
      tr.appendChild(td);
    });
    frag.appendChild(tr);
  }
  body.textContent = '';
  body.appendChild(frag);
  var pager = document.querySelector('p.pager[data-for="' + table.id + '"]');
  if (!pager) return;
  pager.textContent = rows.length ? 'rows ' + (first + 1) + '–' + last + ' of ' + rows.length + ' ' : 'no rows';
  if (rows.length > CK_PAGE) {
    [['« previous', page - 1], ['next »', page + 1]].forEach(function (b) {
      var btn = document.createElement('button');
      btn.textContent = b[0];
      btn.disabled = b[1] < 0 || b[1] * CK_PAGE >= rows.length;
      btn.onclick = function () { table.ckPage = b[1]; ckRender(table); };
      pager.appendChild(btn);
    });
  }
}
function ckSort(table, col, desc) {
  table.ckRows.sort(function (a, b) {
    var x = ckKey(a[col]), y = ckKey(b[col]);
    var d = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
    return desc ? -d : d;
  });
  table.ckPage = 0;
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
    th.className = i === col ? (desc ? 'desc' : 'asc') : '';
  });
  table.setAttribute('data-sorted', col + (desc ? ':desc' : ':asc'));
  ckRender(table);
}
function ckOnly(id) {
  var shown = false;
  Array.prototype.forEach.call(document.body.children, function (el) {
    if (el.tagName === 'H2') shown = el.id === id;
    if (!shown && el.tagName !== 'SCRIPT') el.style.display = 'none';
  });
}
document.addEventListener('click', function (e) {
  var th = e.target.closest('table.sortable th');
  if (!th) return;
  var table = th.closest('table'), col = th.cellIndex;
  ckSort(table, col, table.getAttribute('data-sorted') === col + ':asc');
});
document.addEventListener('DOMContentLoaded', function () {
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    table.ckRows = JSON.parse(document.getElementById(table.id + '-data').textContent);
    table.ckPage = 0;
    ckRender(table);
  });
  var m = /^#sort=([\\w-]+):(\\d+)(:desc)?$/.exec(location.hash);
  if (m && document.getElementById(m[1])) ckSort(document.getElementById(m[1]), +m[2], !!m[3]);
  m = /^#only=([\\w-]+)$/.exec(location.hash);
  if (m) ckOnly(m[1]);
});
window.addEventListener('load', function () {
  var broken = Array.prototype.filter.call(document.images, function (i) { return !i.naturalWidth; });
  document.body.setAttribute('data-broken-images', broken.length);
  document.body.setAttribute('data-ready', '1');
});
"""


class Document:
    """Sections and their table of contents; figures also written to --figures."""

    def __init__(self, figures_dir: Path | None):
        self.parts: list[str] = []
        self.toc: list[tuple[str, str]] = []
        self.figures_dir = figures_dir
        self.written: list[Path] = []

    def section(self, anchor: str, title: str, level: int = 2) -> None:
        if level == 2:
            self.toc.append((anchor, title))
        self.parts.append(f'<h{level} id="{anchor}" class="section">{esc(title)}</h{level}>')

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)

    def figure(self, fig, alt: str, sub: str, stem: str, embed: bool = True) -> None:
        if embed:
            self.parts.append(sections.img(figures.png(fig), alt))
        if self.figures_dir is not None:
            self.written += figures.save(fig, self.figures_dir / sub if sub else self.figures_dir, stem)
        figures.close(fig)

    def html(self, title: str) -> str:
        nav = "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t in self.toc)
        return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
                f'<meta name="viewport" content="width=device-width"><style>{CSS}</style></head>'
                f'<body><h1>{esc(title)}</h1><nav>{nav}</nav>{"".join(self.parts)}<script>{JS}</script>'
                f'</body></html>\n')


def _campaign(doc: Document, c: CampaignData, k: int, sub: str) -> None:
    a = f"c{k}"
    pre = f"{c.title}: " if sub else ""     # several campaigns: say whose section it is
    doc.section(f"{a}-header", f"{c.title}: what was measured")
    doc.add(sections.header(c))

    gs = grids.best_grids(c.records)
    labels = sorted({cell.best for g in gs for cell in g.cells.values()})
    colour = figures.colours(labels)
    doc.section(f"{a}-heatmaps", f"{pre}fastest algorithm and default/best")
    if not gs:
        doc.add('<p class="note">No point finished ok: nothing to compare.</p>')
    else:
        doc.add(sections.legend(labels, colour))
    for g in gs:
        doc.add(sections.best_heatmap(g, colour) + sections.ratio_heatmap(g))
        if doc.figures_dir is not None:
            doc.figure(figures.best_heatmap(g, colour), "", sub, f"best-{g.collective}-{g.mpi}", embed=False)
            doc.figure(figures.ratio_heatmap(g), "", sub, f"default-over-best-{g.collective}-{g.mpi}", embed=False)

    doc.section(f"{a}-curves", f"{pre}time and bus bandwidth against size")
    groups: dict[tuple, list] = {}
    for r in c.records:
        if r.status == "ok" and r.timed:
            groups.setdefault((r.collective, r.mpi, r.ranks), []).append(r)
    all_labels = sorted({r.label for rs in groups.values() for r in rs})
    line_colour = figures.colours(all_labels)
    if not groups:
        doc.add('<p class="note">No timed point.</p>')
    for (coll, mpi, ranks), rs in sorted(groups.items()):
        doc.add(f"<h3>{esc(coll)}, {esc(mpi)}, {ranks} ranks</h3>")
        doc.figure(figures.curves(coll, mpi, ranks, rs, line_colour), f"{coll} {mpi} p={ranks} time and busbw",
                   sub, f"curves-{coll}-{mpi}-p{ranks}")

    bd = breakdown.collect(c.records)
    if bd.points:
        doc.section(f"{a}-breakdown", f"{pre}where the time goes (instrumented)")
        with tempfile.TemporaryDirectory(prefix="collkit-breakdown-") as tmp:
            out = doc.figures_dir / sub / "breakdown" if doc.figures_dir is not None else Path(tmp)
            written = breakdown.charts(bd, out)
            for path in (p for p in written if p.suffix == ".png"):
                doc.add(f"<h3>{esc(path.stem)}</h3>" + sections.img(path.read_bytes(), path.stem))
            if doc.figures_dir is not None:
                doc.written += written
            if not written:
                doc.add("<p>Only MPI-library points, which carry no tags.</p>")

    ranked = per_rank.collect(c.records, c.path)
    if ranked:
        doc.section(f"{a}-ranks", f"{pre}per-rank picture (granularity = ranks)")
        doc.add(f'<p class="note">Late: a rank whose median time exceeds {per_rank.LATE_FACTOR:g} x the '
                "point's median rank (nodes likewise among nodes). Arrival and exit skew: per iteration, the "
                "latest entry (exit) minus the earliest, median over the iterations; clocks aligned by "
                "MPI_WTIME_IS_GLOBAL or a ping-pong offset estimate (docs/bench-protocol.md).</p>")
        doc.add('<div class="scroll">' + sections.sortable(f"{a}-ranks-table", per_rank.HEADERS,
                                                           sections.per_rank_rows(ranked)) + "</div>")
        # A figure for each point with a late rank: the picture a reader needs first.
        for pr in [pr for pr in ranked if pr.late][:PER_RANK_FIGURES]:
            r = pr.record
            doc.add(f"<h3>{esc(r.collective)} {esc(r.label)} p={r.ranks} {esc(format_size(r.bytes))}: "
                    f"late {esc(per_rank.late_text(pr))}</h3>" + sections.per_rank_nodes(pr))
            doc.figure(figures.per_rank(pr), f"per-rank medians of {r.id}", sub,
                       f"ranks-{r.collective}-{r.label}-p{r.ranks}-{r.bytes}B".replace(":", "_"))

    sim = c.metadata.get("simgrid")
    if isinstance(sim, dict):
        doc.section(f"{a}-machine", f"{pre}simulated machine")
        doc.add(sections.machine_model(sim))
    if c.traffic:
        doc.section(f"{a}-traffic", f"{pre}traffic")
        for name, text in c.traffic.items():
            doc.add(f"<h3>{esc(name)}</h3>" + sections.csv_table(text))

    collkit_algs = {r.algorithm for r in c.records if r.backend == "collkit" and r.status == "ok"}
    if any(bine.is_bine(x) for x in collkit_algs) and any(not bine.is_bine(x) for x in collkit_algs):
        system = str(((sim or {}).get("settings") or {}).get("machine", {}).get("name", "")) if sim else ""
        system = system or str((c.metadata.get("machine") or {}).get("hostname", "")) or c.title
        cells = bine.cells([bine.SystemRecords(system, c.records)])
        if cells:
            doc.section(f"{a}-bine", f"{pre}Bine against the best classic algorithm")
            doc.add('<p class="note">In the form of the Bine paper\'s Table 3: a cell is (collective, ranks, '
                    'vector size); Bine wins when its fastest algorithm beats the fastest non-Bine libcollkit '
                    'algorithm (Swing left out), ties within 0.01 %.</p>')
            doc.add(sections.bine_table(bine.summarise(cells), cells))
            if doc.figures_dir is not None:
                doc.written += bine.heatmaps(cells, doc.figures_dir / sub / "bine" if sub else
                                             doc.figures_dir / "bine")

    doc.section(f"{a}-points", f"{pre}every point")
    for coll in sorted({r.collective for r in c.records}):
        rs = [r for r in c.records if r.collective == coll]
        doc.add(f"<h3>{esc(coll)} ({len(rs)} points)</h3>")
        doc.add('<div class="scroll">' + sections.sortable(f"{a}-points-{coll}", sections.POINT_COLUMNS,
                                                           sections.point_rows(rs)) + "</div>")
    doc.section(f"{a}-problems", f"{pre}failed, invalid and skipped points")
    doc.add('<div class="scroll">' + sections.problems(c.records, f"{a}-problems-table") + "</div>")


def _comparison(doc: Document, cs: list[CampaignData]) -> None:
    doc.section("compare", f"What changed: {', '.join(c.title for c in cs[1:])} against {cs[0].title}")
    try:
        comp = compare.compare(cs[0].path, [c.path for c in cs[1:]])
    except UserError as exc:
        doc.add(f'<p class="note">No comparison: {esc(str(exc))}</p>')
        return
    names = {str(c.path): c.title for c in cs[1:]}
    n = {v: sum(r.verdict == v for r in comp.rows) for v in ("faster", "slower", "same", "unknown")}
    unknown = f", {n['unknown']} unknown (too few launches for the test)" if n["unknown"] else ""
    doc.add(f"<p>{sum(n.values())} points compared: {n['faster']} faster, {n['slower']} slower, {n['same']} "
            f"not significantly different{unknown} (Mann-Whitney U on launch medians, Holm-adjusted p &lt; 0.01; "
            f"ratio of the estimates with a 95 % bootstrap interval over launches; as <code>collkit compare</code>)."
            "</p>")
    doc.add("<h3>Regressions</h3>" + '<div class="scroll">' + sections.regression_list(comp, names) + "</div>")
    for g in grids.compare_grids(comp):
        doc.add(f"<h3>{esc(names.get(g.new, g.new))}</h3>" + sections.change_heatmap(g))
        if doc.figures_dir is not None:
            doc.figure(figures.change_heatmap(g, names.get(g.new, g.new)), "", "compare",
                       f"change-{Path(g.new).name}-{g.collective}-{g.mpi}-p{g.ranks}", embed=False)


def build(cs: list[CampaignData], figures_dir: Path | None = None) -> tuple[str, list[Path]]:
    doc = Document(figures_dir)
    if len(cs) > 1:
        _comparison(doc, cs)
    for k, c in enumerate(cs):
        _campaign(doc, c, k, c.title if len(cs) > 1 else "")
    title = f"collkit report: {', '.join(c.title for c in cs)}"
    return doc.html(title), doc.written


def _open_output(out: Path) -> Path:
    """The temporary file the report is written to before it replaces `out`, created now
    so that an unwritable --out stops the command before anything is drawn. As root,
    os.access says yes to everything: only trying to write tells."""
    if out.is_dir():
        raise UserError(f"--out {out} is a directory; give a file name such as {out / 'report.html'}")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"--out {out}: the directory {parent} does not exist; create it or choose another --out")
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        tmp.open("w").close()
        if out.exists() and not os.access(out, os.W_OK):
            raise PermissionError(13, "permission denied")
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"--out {out} is not writable ({exc.strerror}); choose another --out") from None
    return tmp


def _check_figures(d: Path) -> None:
    if d.exists() and not d.is_dir():
        raise UserError(f"--figures {d} is a file; give a directory")
    probe = d if d.exists() else d.parent if str(d.parent) else Path(".")
    if not probe.is_dir() or not os.access(probe, os.W_OK):
        raise UserError(f"--figures {d} cannot be created or written; choose another directory")


def run(paths: list[Path], html: bool, out: Path | None, figures_dir: Path | None) -> int:
    """The command. An existing --out is replaced (a report is regenerated as a campaign grows);
    the file is written to a temporary name first, so a failure leaves the old one whole."""
    if out is not None and not html:
        raise UserError("--out is where --html writes the report; give --html too")
    cs = model.load_all(paths)
    target = out if out is not None else paths[0] / "report.html"
    if figures_dir is not None:
        _check_figures(figures_dir)
    tmp = _open_output(target) if html else None
    start = time.monotonic()
    try:
        text, written = build(cs, figures_dir)
        if tmp is not None:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, target)
    except OSError as exc:
        where = exc.filename or target
        raise UserError(f"{where}: cannot be written ({exc.strerror}); choose another --out or --figures") from None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    if tmp is not None:
        print(f"wrote {target} ({len(text.encode()) / 1e6:.1f} MB, {time.monotonic() - start:.1f} s)")
    if figures_dir is not None:
        print(f"wrote {len(written)} figures (PNG and SVG) to {figures_dir}")
    sys.stdout.flush()
    return 0
