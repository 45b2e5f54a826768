"""Instrumented campaigns and `collkit report --breakdown` (issue #7, Python side).

The analysis layer is tested on records written here; the launch path with a
stand-in collkit-bench-instr (a wrapper around tests/python/fakes/fake_bench that
adds an `instrument` object); and, when `make setup` built it, one real
instrumented campaign under Open MPI."""

import csv
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import needs
from cli_runner import collkit, failed_tails, one_line_error
from collkit.analysis import breakdown
from collkit.campaign import platform as platforms
from collkit.campaign import spec as specs
from collkit.common.errors import UserError

FAKES = Path(__file__).parent / "fakes"


def point(alg, nbytes, parts, median, backend="collkit", dropped=0, unbalanced=0, status="ok", ranks=8,
          e2e=None):
    comm, reduce, copy, other = parts
    return {"id": f"allreduce/{backend}/openmpi/{alg}/p{ranks}/{nbytes}B", "collective": "allreduce",
            "backend": backend, "mpi": "openmpi", "algorithm": alg, "ranks": ranks, "bytes": nbytes,
            "status": status, "iterations": 10, "stats_us": {"median": median},
            "instrument": {"iterations": 10, "dropped": dropped, "unbalanced": unbalanced,
                           "breakdown_us": {"comm": comm, "reduce": reduce, "copy": copy, "other": other,
                                            "end_to_end": e2e if e2e is not None else comm + reduce + copy + other},
                           "breakdown_basis": "per-rank medians, slowest rank",
                           "tags": [{"name": "step", "category": "phase", "step": 0, "count": 10,
                                     "total_us": 5.0, "median_us": 0.5, "max_us": 0.7}]}}


RECORDS = [
    point("ring", 1024, (30.0, 5.0, 5.0, 10.0), 50.0),
    point("ring", 32, (9.0, 0.5, 0.5, 10.0), 20.0, dropped=3),
    point("rabenseifner", 32, (8.0, 1.0, 1.0, 10.0), 19.0, unbalanced=1),
    point("rabenseifner", 1024, (20.0, 10.0, 10.0, 0.0), 40.0),
    point("default", 32, (0.0, 0.0, 0.0, 12.0), 12.0, backend="mpi"),
    point("ring", 4096, (1.0, 1.0, 1.0, 1.0), 4.0, status="invalid"),
    {"id": "x", "status": "ok", "collective": "allreduce", "backend": "collkit", "algorithm": "ring",
     "stats_us": {"median": 1.0}},
]


def test_records_become_the_table_per_algorithm_and_size():
    bd = breakdown.collect(RECORDS)
    groups = {g.label: pts for g, pts in bd.points.items()}
    assert set(groups) == {"collkit:ring", "collkit:rabenseifner", "openmpi:default"}
    ring = groups["collkit:ring"]
    assert [p.bytes for p in ring] == [32, 1024]          # sorted by size
    big = ring[1]
    assert big.parts == {"comm": 30.0, "reduce": 5.0, "copy": 5.0, "other": 10.0}
    assert big.share("comm") == pytest.approx(60.0) and big.share("other") == pytest.approx(20.0)
    assert big.ratio == pytest.approx(1.0)
    assert ring[0].ratio == pytest.approx(1.0) and ring[0].flags == ["dropped=3"]
    raben = groups["collkit:rabenseifner"]
    assert raben[0].ratio == pytest.approx(20.0 / 19.0) and raben[0].flags == ["unbalanced=1"]
    assert len(bd.not_ok) == 1 and bd.uninstrumented == 1

    text = breakdown.text_report(bd)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("size"))
    for col in ("comm_us", "comm%", "reduce_us", "copy%", "other_us", "e2e_median_us", "sum/e2e", "flags"):
        assert col in header.split()
    row = next(line for line in lines if line.split()[:3] == ["1KiB", "30.00", "60.0"])
    assert row.split()[-2:] == ["50.00", "1.000"]
    assert any("dropped=3" in line and line.split()[0] == "32B" for line in lines)
    assert any("unbalanced=1" in line for line in lines)
    assert "carries no tags" in text and "1 points did not finish ok" in text
    assert "1.000 .. 1.053" in text  # 40/40 ... 20/19: the ratio range over the collkit points


def test_tagged_time_above_the_call_time_is_flagged():
    bd = breakdown.collect([point("ring", 8, (4.0, 1.0, 1.0, -2.0), 4.0), point("ring", 16, (3.0, 0.5, 0.5, -0.2), 3.8)])
    (pts,) = bd.points.values()
    assert pts[0].flags == ["other<0"] and "other<0" in breakdown.text_report(bd)
    assert pts[1].flags == []   # a fraction of a µs: the two clocks, not a fault


def test_a_malformed_instrument_object_is_a_one_line_error():
    rec = point("ring", 8, (1.0, 1.0, 1.0, 1.0), 4.0)
    del rec["instrument"]["breakdown_us"]["copy"]
    with pytest.raises(UserError, match="lacks 'copy'"):
        breakdown.collect([rec])
    rec = point("ring", 8, (1.0, 1.0, 1.0, 1.0), 4.0)
    rec["instrument"]["breakdown_us"]["comm"] = "fast"
    with pytest.raises(UserError, match="not a number"):
        breakdown.collect([rec])


def test_charts_are_png_and_svg_with_the_four_categories(tmp_path):
    written = breakdown.charts(breakdown.collect(RECORDS), tmp_path / "img")
    names = sorted(p.name for p in written)
    # two collkit algorithms, each alone and together in the overview; never the MPI library's
    assert names == sorted(f"{stem}.{ext}" for ext in ("png", "svg") for stem in (
        "allreduce-openmpi-collkit-ring-p8", "allreduce-openmpi-collkit-rabenseifner-p8",
        "overview-allreduce-openmpi-p8"))
    for p in written:
        assert p.stat().st_size > 1000
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        else:
            root = ET.parse(p).getroot()
            assert root.tag.endswith("svg")
            texts = {"".join(t.itertext()).strip() for t in root.iter() if t.tag.endswith("text")}
            assert {"comm", "reduce", "copy", "other"} <= texts


def test_spec_instrument_key():
    base = 'collectives = ["allreduce"]\nsizes = "8B"\nranks = 2\n[backends]\ncollkit = "ring"\n'
    assert specs.parse(base).instrument is False
    assert specs.parse("instrument = true\n" + base).instrument is True
    with pytest.raises(UserError, match="instrument must be true or false, not 'yes'"):
        specs.parse('instrument = "yes"\n' + base)
    with pytest.raises(UserError, match="did you mean 'instrument'"):
        specs.parse("instrumented = true\n" + base)


# ---------------------------------------------------------------- campaigns with a stand-in bench

SPEC = """
name = "instr"
collectives = ["allreduce"]
sizes = ["32B", "1KiB"]
ranks = [4]
[backends]
collkit = ["ring", "rabenseifner"]
[measure]
timeout_s = 5
launches = 1
"""

# collkit-bench-instr stand-in: fake_bench's records plus an instrument object
# whose parts add up to the median; it marks each point so the test sees which binary ran.
WRAPPER = """#!{python}
import json, subprocess, sys
argv = sys.argv[1:]
out = argv[argv.index("--out") + 1]
argv[argv.index("--out") + 1] = out + ".plain"
rc = subprocess.run([{bench!r}, *argv]).returncode
with open(out + ".plain") as f, open(out, "a") as o:
    for line in f:
        rec = json.loads(line)
        if rec["type"] == "point":
            t = rec["stats_us"]["median"]
            parts = dict(comm=0.5 * t, reduce=0.2 * t, copy=0.1 * t, other=0.2 * t)
            rec["instrument"] = {{"iterations": rec["iterations"], "dropped": 0, "unbalanced": 0,
                                 "breakdown_us": dict(parts, end_to_end=t), "breakdown_basis": "stand-in",
                                 "tags": []}}
        o.write(json.dumps(rec) + "\\n")
open(out + ".plain", "w").close()
sys.exit(rc)
"""


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "spec.toml").write_text(SPEC)
    bench = tmp_path / "bin" / "collkit-bench"
    bench.parent.mkdir()
    bench.symlink_to(FAKES / "fake_bench")
    (tmp_path / "platform.toml").write_text(
        f'name = "fake"\n[mpi.openmpi]\nmpirun = "{FAKES / "fake_mpirun"}"\nargs = []\nenv = {{}}\n'
        f'bench = "{bench}"\n')
    return tmp_path


def with_instr(workdir):
    instr = workdir / "bin" / "collkit-bench-instr"
    instr.write_text(WRAPPER.format(python=sys.executable, bench=str(FAKES / "fake_bench")))
    instr.chmod(0o755)
    return instr


def records(campaign: Path) -> list[dict]:
    return [json.loads(line) for line in (campaign / "records.jsonl").read_text().splitlines()]


def test_instr_bench_is_named_beside_the_plain_one():
    assert platforms.instr_bench(Path("/x/build/openmpi/bench/collkit-bench")) == \
        Path("/x/build/openmpi/bench/collkit-bench-instr")


def test_missing_instr_bench_is_a_one_line_error(workdir):
    one_line_error(collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c", "--instrument",
                           cwd=workdir), "collkit-bench-instr", "collkit build")
    assert not (workdir / "c").exists()


def test_uninstrumented_campaign_runs_the_plain_bench_and_breakdown_says_how(workdir):
    with_instr(workdir)
    assert collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir).returncode == 0
    assert all("instrument" not in r for r in records(workdir / "c"))
    resolved = json.loads((workdir / "c" / "resolved.json").read_text())
    assert resolved["requested"]["instrument"] is False
    assert resolved["platform"]["mpis"]["openmpi"]["bench"].endswith("/collkit-bench")
    assert "comm_us" not in collkit("export", "c", cwd=workdir).stdout   # no breakdown, no columns
    one_line_error(collkit("report", "c", "--breakdown", cwd=workdir), "instrument = true")
    # and such a campaign cannot become instrumented half-way
    one_line_error(collkit("run", "--resume", "c", "--platform", "platform.toml", "--instrument", cwd=workdir),
                   "was not instrumented")


def test_instrument_flag_selects_the_instr_bench_and_report_draws(workdir):
    with_instr(workdir)
    out = collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c", "--instrument", cwd=workdir)
    assert out.returncode == 0, out.stderr
    c = workdir / "c"
    recs = records(c)
    assert len(recs) == 4 and all("instrument" in r for r in recs)
    resolved = json.loads((c / "resolved.json").read_text())
    assert resolved["requested"]["instrument"] is True
    assert resolved["platform"]["mpis"]["openmpi"]["bench"].endswith("/collkit-bench-instr")
    meta = json.loads((c / "metadata.json").read_text())
    assert meta["instrument"] is True and meta["mpis"]["openmpi"]["bench"].endswith("-instr")

    rep = collkit("report", "c", "--breakdown", "--out-dir", "charts", cwd=workdir)
    assert rep.returncode == 0, rep.stderr
    assert "collkit:ring" in rep.stdout and "collkit:rabenseifner" in rep.stdout
    assert "1.000 .. 1.000" in rep.stdout
    assert {p.name for p in (workdir / "charts").iterdir()} == {"breakdown.csv"} | {
        f"{s}.{e}" for e in ("png", "svg") for s in ("allreduce-openmpi-collkit-ring-p4",
                                                   "allreduce-openmpi-collkit-rabenseifner-p4",
                                                   "overview-allreduce-openmpi-p4")}
    table = list(csv.DictReader((workdir / "charts" / "breakdown.csv").open()))
    assert len(table) == 4 and {r["comm_pct"] for r in table} == {"50.00"}
    assert {r["sum_over_e2e"] for r in table} == {"1.00000"}
    one_line_error(collkit("report", "c", "--out-dir", "x", cwd=workdir))

    rows = json.loads(collkit("export", "c", "--format", "json", cwd=workdir).stdout)
    for r in rows:  # the stand-in splits the median 50/20/10/20
        assert r["comm_us"] == pytest.approx(0.5 * r["time_median_us"])
        assert r["other_us"] == pytest.approx(0.2 * r["time_median_us"])
    assert collkit("export", "c", cwd=workdir).stdout.splitlines()[0].endswith(
        ",comm_us,reduce_us,copy_us,other_us,time_median_ci_low_us,time_median_ci_high_us,implausible,unstable")

    # Resuming stays instrumented though spec.toml does not say so: drop two
    # records (and the raw copies resume would take them back from).
    kept = recs[:2]
    (c / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    for raw in (c / "raw").glob("launch-*.jsonl"):
        raw.write_text("")
    res = collkit("run", "--resume", "c", "--platform", "platform.toml", cwd=workdir)
    assert res.returncode == 0, res.stderr
    after = records(c)
    assert len(after) == 4 and all("instrument" in r for r in after)


def test_spec_key_alone_instruments(workdir):
    with_instr(workdir)
    (workdir / "spec.toml").write_text("instrument = true\n" + SPEC)
    assert collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir).returncode == 0
    assert all("instrument" in r for r in records(workdir / "c"))
    assert collkit("report", "c", "--breakdown", cwd=workdir).returncode == 0
    assert (workdir / "c" / "breakdown" / "overview-allreduce-openmpi-p4.svg").stat().st_size > 0  # the default place


# ---------------------------------------------------------------- the real thing

@needs.bench_instr
def test_real_instrumented_campaign_parts_add_up(tmp_path):
    (tmp_path / "spec.toml").write_text("""
name = "real-instr"
instrument = true
collectives = ["allreduce"]
sizes = ["64B", "64KiB"]
ranks = [4]
mpi = ["openmpi"]
[backends]
collkit = ["rabenseifner"]
[measure]
min_iterations = 5
time_budget_s = 0
launches = 1
""")
    out = collkit("run", "spec.toml", "--out", "c", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr + failed_tails(tmp_path / "c")
    bd = breakdown.collect(records(tmp_path / "c"))
    (pts,) = bd.points.values()
    assert [p.bytes for p in pts] == [64, 65536]
    for p in pts:
        assert p.dropped == 0 and p.unbalanced == 0
        assert p.parts["comm"] > 0 and p.parts["reduce"] > 0     # rabenseifner sends and reduces
        assert min(p.parts["comm"], p.parts["reduce"], p.parts["copy"]) >= 0 and p.parts["other"] > -breakdown.OTHER_SLACK_US
        # The bench's identity (docs/bench-protocol.md): `other` is the slowest rank's call
        # time minus its tagged parts, taken at the median iteration, so the parts add up to
        # the median time exactly (up to the records' rounding to 1 ns).
        assert p.end_to_end_us == pytest.approx(p.median_us, abs=0.002)
        assert p.total_us == pytest.approx(p.median_us, abs=0.005)
    assert breakdown.text_report(bd).startswith("parts: ")
