"""The HTML report in a real browser: Debian's Chromium, headless, driven from its command
line (--dump-dom for the DOM after the page's script ran, --screenshot for pixels,
--enable-logging=stderr --v=0 for the console). On a real small campaign (the stand-in
bench, report_fixture.py): no console message, every image loaded and not blank, the
heatmap cells in the DOM, sorting by a scripted click (the report's `#sort=` hook), and
one screenshot per section kept for a person to look at (SHOTS, printed by the test)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import needs
import report_fixture as rf
from cli_runner import collkit

pytestmark = needs.chromium
SHOTS = rf.REPO / "build" / "report-screenshots"


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("browser")
    base = rf.make_campaign(root)
    a = rf.retimed(base, root / "run-a", "ring", 1.0, 1)
    rf.retimed(base, root / "run-b", "ring", 1.5, 2)
    one = collkit("report", "run-a", "--html", "--out", "one.html", cwd=root)
    two = collkit("report", "run-a", "run-b", "--html", "--out", "two.html", cwd=root)
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert a.is_dir()
    return root / "one.html", root / "two.html"


def test_console_errors_are_seen(tmp_path):
    """The console check itself: a page with a deliberate error must be caught."""
    page = tmp_path / "err.html"
    page.write_text('<!DOCTYPE html><html><body><script>console.error("deliberate-error");'
                    'missingFunction();</script></body></html>')
    _, console = rf.dump_dom(page.as_uri())
    assert any("deliberate-error" in line for line in console), console
    assert any("missingFunction" in line for line in console), console


@pytest.mark.parametrize("which", [0, 1])
def test_loads_without_console_messages_and_images_render(report, which):
    page = report[which]
    dom, console = rf.dump_dom(page.as_uri())
    assert console == [], console
    assert 'data-ready="1"' in dom, "the report's script did not finish"
    assert 'data-broken-images="0"' in dom
    # the heatmaps are in the DOM, a cell per (collective, rank count, size)
    best = re.findall(r'<td [^>]*data-best="([^"]+)"', dom)
    assert len(best) == (which + 1) * 2 * len(rf.RANKS) * len(rf.SIZES)
    ratio = re.findall(r'<td [^>]*data-ratio="', dom)
    assert len(ratio) == len(best)
    if which == 1:
        slower = set(re.findall(r'data-label="([^"]+)"[^>]*data-verdict="slower"', dom))
        assert slower == {"collkit:ring"}


def test_sorting_by_a_scripted_click(report):
    page = report[0]
    table = "c0-points-allreduce"
    for order in ("", ":desc"):
        dom, console = rf.dump_dom(f"{page.as_uri()}#sort={table}:5{order}")
        assert console == [], console
        body = dom[dom.index(f'id="{table}"'):]
        body = body[:body.index("</table>")]
        assert f'data-sorted="5{order or ":asc"}"' in body
        medians = []
        for row in re.findall(r"<tr>(.*?)</tr>", body)[1:]:
            cells = re.findall(r'<td(?: data-v="([^"]*)")?', row)
            if len(cells) > 5 and cells[5] != "":
                medians.append(float(cells[5]))
        assert len(medians) > 10
        assert medians == sorted(medians, reverse=bool(order))


def test_one_screenshot_per_section(report, capsys):
    page = report[1]
    text = page.read_text()
    sections = re.findall(r'<h2 id="([\w-]+)" class="section">', text)
    assert {"compare", "c0-heatmaps", "c0-curves", "c1-points"} <= set(sections)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in SHOTS.glob("*.png"):
        old.unlink()
    for sid in sections:
        shot = SHOTS / f"{sid}.png"
        console = rf.screenshot(f"{page.as_uri()}#only={sid}", shot)
        assert console == [], console
        assert rf.colours(shot) > 8, f"{shot} is blank"
    with capsys.disabled():     # in the test output even when pytest captures it: CI's artifact path
        print(f"\nreport screenshots, one per section ({len(sections)}): {SHOTS}")
