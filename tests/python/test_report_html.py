"""`collkit report --html`: the file's sections, heatmap cells, comparison, figures and bad input,
on a real small campaign run with the stand-in bench (the browser checks: test_report_browser.py)."""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import sys
from html.parser import HTMLParser

import pytest

import report_fixture as rf
from cli_runner import collkit, one_line_error

from collkit.campaign.store import Campaign


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    base = rf.make_campaign(root)
    a = rf.retimed(base, root / "run-a", "ring", 1.0, 1)
    b = rf.retimed(base, root / "run-b", "ring", 1.5, 2)
    return root, base, a, b


class Cells(HTMLParser):
    """The <td> of the heatmaps, with their attributes, and every src/href."""

    def __init__(self):
        super().__init__()
        self.cells: list[dict] = []
        self.refs: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td" and "data-ranks" in a:
            self.cells.append(a)
        if tag == "td" and "data-verdict" in a:
            self.cells.append(a)
        for k in ("src", "href"):
            if k in a:
                self.refs.append(a[k])
        if "id" in a:
            self.ids.append(a["id"])


def parse(text: str) -> Cells:
    p = Cells()
    p.feed(text)
    return p


def test_report_of_one_campaign(campaigns):
    root, base, _, _ = campaigns
    res = collkit("report", "base", "--html", cwd=root)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("wrote base/report.html")
    text = (base / "report.html").read_text()
    doc = parse(text)
    # self-contained: nothing is fetched, every image is inline
    assert all(r.startswith(("#", "data:image/png;base64,")) for r in doc.refs), \
        [r[:40] for r in doc.refs if not r.startswith(("#", "data:"))]
    for section in ("c0-header", "c0-heatmaps", "c0-curves", "c0-bine", "c0-points", "c0-problems"):
        assert section in doc.ids
    assert "c0-breakdown" not in doc.ids and "compare" not in doc.ids
    # header counts from the campaign
    counts = Campaign.open(base).counts()
    assert f"<b>{counts.ok}</b> ok" in text and f'<b class="bad">{counts.invalid}</b> invalid' in text
    assert counts.invalid == 1 and counts.failed == 1
    # best heatmap: one cell per (collective, rank count, size), naming the fastest ok algorithm
    records = [r for r in Campaign.open(base).records() if r.status == "ok"]
    best = [c for c in doc.cells if "data-best" in c]
    assert len(best) == 2 * len(rf.RANKS) * len(rf.SIZES)
    for coll in ("allreduce", "bcast"):
        for p in rf.RANKS:
            for n in rf.SIZES:
                here = [r for r in records if (r.collective, r.ranks, r.bytes) == (coll, p, n)]
                fastest = min(r.time_median_us for r in here)
                winners = {r.label for r in here if r.time_median_us == fastest}
                cell = [c for c in best if (c["data-coll"], c["data-ranks"], c["data-bytes"]) == (coll, str(p), str(n))]
                assert len(cell) == 1 and cell[0]["data-best"] in winners
    # the crash and the wrong result are listed with their reasons
    problems = json.loads(re.search(r'id="c0-problems-table-data">(.*?)</script>', text).group(1))
    assert sorted(row[0][0] for row in problems) == ["failed", "invalid"]
    assert "rank 1 element 0: expected 3 got 4" in [row[5] for row in problems]
    # every recorded point is in its collective's table
    for coll in ("allreduce", "bcast"):
        rows = json.loads(re.search(rf'id="c0-points-{coll}-data">(.*?)</script>', text).group(1))
        assert len(rows) == sum(r.collective == coll for r in Campaign.open(base).records())
    assert "the Bine paper" in text
    # every inline image decodes and is not blank
    pngs = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert len(pngs) == 2 * len(rf.RANKS)            # curves per collective and rank count
    assert all(rf.colours(base64.b64decode(p)) > 10 for p in pngs)


def test_default_over_best_only_colours_significant_cells(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_report", rf.REPO / "scripts" / "bench_report.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_report"] = mod
    spec.loader.exec_module(mod)
    d = tmp_path / "syn"
    n = mod.write_campaign(d, 800, iterations=20)      # 2 algorithms per cell: the default and one other
    assert n == 800
    res = collkit("report", "syn", "--html", "--out", "r.html", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    cells = [c for c in parse((tmp_path / "r.html").read_text()).cells if "data-ratio" in c]
    assert len(cells) == 2 * 2 * 4 * 25
    coloured = [c for c in cells if "style" in c]
    assert coloured and all(float(c["data-ratio"]) > 1 for c in coloured)
    assert all("style" not in c for c in cells if c["data-ratio"] in ("tie", "1", ""))


def test_two_campaigns_show_their_comparison(campaigns):
    root, _, a, b = campaigns
    res = collkit("report", "run-a", "run-b", "--html", "--out", "both.html", "--figures", "figs", cwd=root)
    assert res.returncode == 0, res.stderr
    text = (root / "both.html").read_text()
    doc = parse(text)
    assert {"compare", "regressions", "c0-header", "c1-header"} <= set(doc.ids)
    verdicts = [c for c in doc.cells if "data-verdict" in c]
    slower = {c["data-label"] for c in verdicts if c["data-verdict"] == "slower"}
    assert slower == {"collkit:ring"}
    assert all(c["data-verdict"] == "same" for c in verdicts if c["data-label"] != "collkit:ring")
    regs = re.search(r'<script type="application/json" id="regressions-data">(.*?)</script>', text).group(1)
    regs = json.loads(regs)
    assert len(regs) == len([c for c in verdicts if c["data-verdict"] == "slower"])
    assert {row[2] for row in regs} == {"collkit:ring"}
    assert [row[7][1] for row in regs] == sorted((row[7][1] for row in regs), reverse=True)   # worst first
    figs = sorted(p.relative_to(root / "figs").as_posix() for p in (root / "figs").rglob("*.png"))
    assert "run-a/best-allreduce-openmpi.png" in figs and "run-b/curves-bcast-openmpi-p6.png" in figs
    assert any(f.startswith("compare/change-run-b-allreduce-openmpi-p4") for f in figs)
    assert all((root / "figs" / f).with_suffix(".svg").is_file() for f in figs)


@pytest.mark.parametrize("args, message", [
    (["report", "nowhere", "--html"], "nowhere is not a directory"),
    (["report", "plain", "--html"], "is not a collkit campaign"),
    (["report", "empty", "--html"], "is an empty campaign"),
    (["report", "base", "--html", "--out", "missing/dir/r.html"], "does not exist"),
    (["report", "base", "--html", "--out", "plain"], "is a directory"),
    (["report", "base", "--html", "--out", "/proc/r.html"], "not writable"),
    (["report", "base", "base", "--html"], "given twice"),
    (["report", "base", "run-a"], "give --html"),
    (["report", "base", "--html", "--breakdown"], "one or the other"),
    (["report", "base", "--html", "--figures", "base/records.jsonl"], "is a file"),
])
def test_bad_input_is_one_line_and_exit_2(campaigns, args, message):
    root = campaigns[0]
    (root / "plain").mkdir(exist_ok=True)
    empty = root / "empty"
    if not empty.exists():
        empty.mkdir()
        for f in ("spec.toml", "resolved.json", "state.json"):
            (empty / f).write_text((root / "base" / f).read_text())
    assert one_line_error(collkit(*args, cwd=root), message).startswith("collkit: error:")


def test_an_existing_report_is_replaced(campaigns):
    root = campaigns[0]
    (root / "old.html").write_text("old")
    res = collkit("report", "base", "--html", "--out", "old.html", cwd=root)
    assert res.returncode == 0, res.stderr
    assert (root / "old.html").read_text().startswith("<!DOCTYPE html>")
    assert not list(root.glob(".old.html.*.tmp"))
