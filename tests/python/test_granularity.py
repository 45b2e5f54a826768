"""[measure] granularity (docs/bench-protocol.md, "Granularity" and "Per-rank records"):
"max" is the default and changes nothing (points files, point ids, records);
"ranks" records every rank's times and skews, and `report`, `report --html` and
`export --format ranks` show which rank is late; "none" keeps only aggregates.

The real runs slow one rank on purpose with the test-only COLLKIT_BENCH_TEST_SLOW_RANK
(20 ms added to rank 2's time of every call, not waited), so that the late rank never
depends on how fast or loaded this machine is."""

import csv
import io
import json

import numpy as np
import pytest

import needs
from cli_runner import collkit, one_line_error
from collkit.analysis import per_rank as analysis
from collkit.analysis import stats
from collkit.campaign import per_rank as side
from collkit.campaign import spec
from collkit.campaign.points import Point
from collkit.campaign.record import Record, current
from collkit.common.errors import UserError


SPEC = """
name = "granularity"
collectives = ["allreduce"]
sizes = ["64B", "4KiB"]
ranks = [4]
mpi = ["openmpi"]
[backends]
collkit = ["recursive_doubling"]
[measure]
warmup = 1
min_iterations = 8
max_iterations = 20
time_budget_s = 0.001
launch_warmup_s = 0.01
settle_s = 0
launches = 1
"""
SLOW_RANK = 2


def run(tmp_path, granularity: str | None, env=None):
    text = SPEC + (f'granularity = "{granularity}"\n' if granularity else "")
    (tmp_path / "spec.toml").write_text(text)
    res = collkit("run", "spec.toml", "--out", "c", env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    # the record that stands for each point (one marked unstable under load is measured again)
    stored = list(current([json.loads(s) for s in (tmp_path / "c" / "records.jsonl").read_text().splitlines()]).values())
    points = "".join(line + "\n" for line in (tmp_path / "c" / "raw" / "launch-0001.points").read_text().splitlines()
                     if not line.startswith("#"))     # the round's comment line
    return res, stored, points


# ------------------------------------------------------------------ validation, ids, lines
BASE = ('name = "g"\ncollectives = ["allreduce"]\nsizes = ["8B"]\nranks = [2]\nmpi = ["openmpi"]\n'
        '[backends]\ncollkit = ["ring"]\n')


def test_unknown_granularity_is_refused_with_the_key_and_the_choices():
    with pytest.raises(UserError) as err:
        spec.parse(BASE + '[measure]\ngranularity = "rank"\n')
    msg = str(err.value)
    assert "measure.granularity" in msg and "max, ranks, none" in msg and "did you mean 'ranks'" in msg
    assert spec.parse(BASE).measure.granularity == "max"


def test_unknown_granularity_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "spec.toml").write_text(BASE + '[measure]\ngranularity = "all"\n')
    one_line_error(collkit("run", "spec.toml", "--dry-run", cwd=tmp_path), "measure.granularity", "max, ranks, none")


def test_default_points_lines_and_ids_do_not_change():
    p = Point(collective="allreduce", backend="collkit", mpi="openmpi", algorithm="ring", ranks=4, count=16,
              bytes=64, dtype="int32", op="sum", root=0, in_place=False)
    default, explicit = spec.parse(BASE).measure, spec.parse(BASE + '[measure]\ngranularity = "max"\n').measure
    assert p.to_line(default) == p.to_line(explicit) and "granularity" not in p.to_line(default)
    for g in ("ranks", "none"):
        m = spec.parse(BASE + f'[measure]\ngranularity = "{g}"\n').measure
        assert p.to_line(m) == p.to_line(default) + f" granularity={g}"
    # the id names the point, not how much of it is kept
    assert "granularity" not in p.id


# ------------------------------------------------------------------ side file
def test_the_matrix_moves_to_a_compressed_side_file_and_reads_back(tmp_path):
    import base64
    rng = np.random.default_rng(7)
    arrival = rng.uniform(0, 5, (4, 50)).astype("<f4")
    time = rng.uniform(10, 30, (4, 50)).astype("<f4")
    m = np.stack([time, arrival, (arrival + time).astype("<f4")])
    rec = {"id": "allreduce/collkit/openmpi/ring/p4/64B/int32/sum/r0/outofplace", "ranks": 4,
           "sync": "dissemination",
           "per_rank": {"iterations": 50, "matrix": {"shape": [3, 4, 50], "dtype": "float32le",
                                                     "base64": base64.b64encode(m.tobytes()).decode()}}}
    assert np.array_equal(side.matrix(rec, None), m)
    moved = side.externalise(rec, tmp_path)
    info = moved["per_rank"]["matrix"]
    assert "base64" not in info and info["file"].startswith("ranks/") and "/" not in info["file"][6:]
    assert (tmp_path / info["file"]).stat().st_size == info["bytes"] < m.nbytes / 2
    # time is exit - arrival here: not stored, computed back; values keep 16 mantissa bits
    assert info["stored"] == ["arrival_us", "exit_us"]
    back = side.matrix(moved, tmp_path)
    assert back.shape == m.shape
    assert np.allclose(back[1:], m[1:], rtol=2.0**-16, atol=0) and not np.array_equal(back[1:], m[1:])
    assert np.allclose(back[0], m[0], rtol=0, atol=2.0**-15 * m[2].max())
    # under window sync the time runs from the window start: kept as measured
    window = side.externalise(rec | {"sync": "window", "id": "w"}, tmp_path)
    assert window["per_rank"]["matrix"]["stored"] == list(side.PLANES)
    assert np.allclose(side.matrix(window, tmp_path), m, rtol=2.0**-16, atol=0)
    assert side.externalise({"id": "x"}, tmp_path) == {"id": "x"}     # nothing to move


# ------------------------------------------------------------------ real campaigns
@needs.openmpi
def test_ranks_name_the_slowed_rank_in_report_html_and_export(tmp_path):
    res, stored, points = run(tmp_path, "ranks", {"COLLKIT_BENCH_TEST_SLOW_RANK": f"{SLOW_RANK}=20000"})
    assert all(line.endswith("granularity=ranks") for line in points.strip().splitlines())
    camp = tmp_path / "c"
    assert len(stored) == 2
    for rec in stored:
        assert rec["status"] == "ok" and rec["granularity"] == "ranks" and rec["times_us"]
        pr = rec["per_rank"]
        assert len(pr["median_us"]) == 4 and pr["clock"] in ("global", "offset")
        # the slowed rank's own time carries the 20 ms; the others' do not
        assert pr["median_us"][SLOW_RANK] >= 20000 > max(pr["median_us"][r] for r in (0, 1, 3))
        # the iteration's time is the slowest rank's: the slowed one
        assert rec["stats_us"]["min"] >= 20000
        m = side.matrix(rec, camp)
        assert m.shape == (3, 4, pr["iterations"]) and pr["iterations"] == rec["iterations"]
        assert "base64" not in pr["matrix"] and (camp / pr["matrix"]["file"]).is_file()
        assert (m[1] >= 0).all() and np.allclose(m[1].min(axis=0), 0)      # arrival after the earliest entry
        assert (m[0][SLOW_RANK] >= 20000).all()

    # collkit report: the per-rank table names rank 2 as the late one, for both points
    assert "Per-rank results" in res.stdout
    rep = collkit("report", "c", cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr
    table = rep.stdout.split("Per-rank results", 1)[1]
    lines = table.splitlines()
    # each point's row, and under it the line naming its late ranks
    late_cells = [lines[i + 1] for i, ln in enumerate(lines) if ln.lstrip().startswith("p=4 ")]
    assert len(late_cells) == 2 and all(f"late ranks (median): {SLOW_RANK} (" in ln for ln in late_cells)
    for other in (0, 1, 3):
        assert all(f" {other} (" not in ln for ln in late_cells)

    # the HTML report: the section, the late rank in the table's rows and a figure per point
    html = collkit("report", "c", "--html", "--out", "r.html", cwd=tmp_path)
    assert html.returncode == 0, html.stderr
    page = (tmp_path / "r.html").read_text()
    assert "per-rank picture (granularity = ranks)" in page
    data = page.split('id="c0-ranks-table-data">', 1)[1].split("</script>", 1)[0]
    rows = json.loads(data)
    assert len(rows) == 2 and all(row[5][0].startswith(f"{SLOW_RANK} (") and row[5][2] == "late" for row in rows)
    assert page.count(f"late {SLOW_RANK} (") == 2 and page.count('alt="per-rank medians of ') == 2

    # export: one row per rank and point, rank 2 alone late
    exp = collkit("export", "c", "--format", "ranks", cwd=tmp_path)
    assert exp.returncode == 0, exp.stderr
    got = list(csv.DictReader(io.StringIO(exp.stdout)))
    assert len(got) == 8
    assert {(r["rank"], r["late"]) for r in got} == {("0", "0"), ("1", "0"), (str(SLOW_RANK), "1"), ("3", "0")}
    assert all(r["host"] for r in got)     # the launch record's host of each rank


@needs.openmpi
def test_none_keeps_aggregates_only_and_max_is_unchanged(tmp_path):
    (tmp_path / "none").mkdir()
    (tmp_path / "max").mkdir()
    _, none, none_points = run(tmp_path / "none", "none")
    _, plain, plain_points = run(tmp_path / "max", None)
    # max: the points file and the records of before (no new key), same ids as none's
    assert "granularity" not in plain_points
    assert {r["id"] for r in plain} == {r["id"] for r in none}
    for rec in plain:
        assert rec["times_us"] and "granularity" not in rec and "per_rank" not in rec
        assert "median_ci" not in rec["stats_us"]
    # none: no per-iteration times, the median's interval instead, readers fall back to it
    for rec in none:
        assert rec["status"] == "ok" and rec["granularity"] == "none" and "times_us" not in rec
        assert rec["iterations"] >= 8 and "per_rank" not in rec
        lo, hi = rec["stats_us"]["median_ci"]
        assert lo <= rec["stats_us"]["median"] <= hi
        assert stats.record_median_ci(Record.from_json(rec)) == (lo, hi)
    assert not (tmp_path / "none" / "c" / "ranks").exists()
    rep = collkit("report", "c", cwd=tmp_path / "none")
    assert rep.returncode == 0 and "Per-rank results" not in rep.stdout and "Traceback" not in rep.stderr
    html = collkit("report", "c", "--html", "--out", "r.html", cwd=tmp_path / "none")
    assert html.returncode == 0 and "per-rank picture" not in (tmp_path / "none" / "r.html").read_text()


def test_per_rank_view_from_summaries_only():
    rec = Record.from_json({"id": "a", "collective": "bcast", "backend": "collkit", "mpi": "openmpi",
                            "algorithm": "binomial", "ranks": 4, "bytes": 8, "status": "ok", "iterations": 3,
                            "stats_us": {"median": 10.0},
                            "per_rank": {"iterations": 3, "of_iterations": 3, "clock": "offset",
                                         "median_us": [10, 11, 40, 10], "arrival_median_us": [0, 1, 2, 3],
                                         "exit_median_us": [10, 12, 42, 13], "clock_error_us": [0, 1, 1, 1]}})
    pr = analysis.of_record(rec, None, ["n0", "n0", "n1", "n1"])
    assert [r.rank for r in pr.late] == [2] and pr.skew_basis == "rank medians"
    assert pr.arrival_skew_us == 3 and pr.exit_skew_us == 32
    assert {n.host: n.ranks for n in pr.nodes} == {"n0": 2, "n1": 2}
    assert [n.host for n in pr.late_nodes] == ["n1"]
    assert analysis.late_text(pr) == "2 (40.00 us)"
