"""`collkit compare`: matching, verdicts, listed points, formats, exit statuses."""

import csv
import io
import json

import numpy as np
import pytest

from cli_runner import in_process, one_line_error
from collkit.analysis import compare

ALGS = (("collkit", "ring"), ("collkit", "bine"), ("mpi", "default"))


def campaign(d, seed, slow=None, factor=2.0, drop=(), status=None, mpi="openmpi", iterations=30, launches=8,
             launch_sigma=0.1):
    """A campaign directory as `collkit run` leaves it (spec.toml, resolved.json,
    records.jsonl): allreduce, 3 algorithms x 2 rank counts x 3 sizes, each point
    measured in `launches` launches (one record per launch, campaign/repeats.py) whose
    state multiplies every point of the launch by a lognormal factor (launch_sigma:
    10 %, as launches on a loaded machine), times lognormal inside each launch."""
    d.mkdir(parents=True)
    (d / "spec.toml").write_text('name = "t"\n')
    (d / "resolved.json").write_text(json.dumps({"points": [], "skipped": []}))
    rng = np.random.default_rng(seed)
    states = rng.lognormal(0, launch_sigma, launches)
    status = status or {}
    lines = []
    for backend, alg in ALGS:
        for ranks in (4, 8):
            for size in (64, 1024, 65536):
                pid = f"{alg}-{ranks}-{size}"
                if pid in drop:
                    continue
                for k in range(launches):
                    t = ((5 + size / 1000) * states[k] * rng.lognormal(0, 0.05, iterations)
                         * (factor if alg == slow else 1.0))
                    st = status.get(pid, "ok")
                    timed = st in ("ok", "invalid")
                    lines.append(json.dumps({
                        "id": pid, "collective": "allreduce", "backend": backend, "mpi": mpi, "algorithm": alg,
                        "ranks": ranks, "count": size // 4, "bytes": size, "dtype": "int32", "op": "sum",
                        "root": 0, "in_place": False, "status": st, "reason": "" if st == "ok" else f"it {st}",
                        "iterations": iterations if timed else 0, "launch": k + 1, "repeat": k,
                        "times_us": [float(v) for v in t] if timed else [],
                        "stats_us": {"min": float(t.min()), "median": float(np.median(t)), "max": float(t.max()),
                                     "p5": float(np.percentile(t, 5)), "p95": float(np.percentile(t, 95))}
                        if timed else {}}))
    (d / "records.jsonl").write_text("\n".join(lines) + "\n")
    return d


def collkit_compare(capsys, *args):
    return in_process(capsys, "compare", *args)


def rows_of(capsys, *args):
    res = collkit_compare(capsys, *args, "--format", "csv")
    return res.returncode, list(csv.DictReader(io.StringIO(res.stdout)))


def test_identical_distributions_are_all_same(tmp_path, capsys):
    # every launch of b draws another state than a's: 10 % apart, steady inside each
    # launch, so iterations pooled over launches would call many points different
    a, b = campaign(tmp_path / "a", 1), campaign(tmp_path / "b", 2)
    rc, rows = rows_of(capsys, a, b, "--fail-on-regression", "5")
    assert rc == 0 and len(rows) == 18
    assert {r["status"] for r in rows} == {"compared"} and {r["verdict"] for r in rows} == {"same"}
    for r in rows:
        assert float(r["ratio_ci_low"]) <= float(r["ratio"]) <= float(r["ratio_ci_high"])
    res = collkit_compare(capsys, a, b)
    assert res.returncode == 0 and "18 points compared: 0 faster, 0 slower, 18 same" in res.stdout


def test_an_algorithm_slowed_twice_is_slower_and_fails_the_gate(tmp_path, capsys):
    a, b = campaign(tmp_path / "a", 1), campaign(tmp_path / "b", 2, slow="bine")
    rc, rows = rows_of(capsys, a, b, "--fail-on-regression", "10")
    assert rc == 1
    for r in rows:
        assert r["verdict"] == ("slower" if r["algorithm"] == "bine" else "same"), r
        if r["algorithm"] == "bine":
            assert 1.8 < float(r["ratio"]) < 2.2 and float(r["p_holm"]) < 0.01
    res = collkit_compare(capsys, a, b, "--fail-on-regression", "10")
    err = res.stderr
    assert res.returncode == 1 and len(err.splitlines()) == 1
    assert "6 points significantly slower by more than 10 %" in err
    assert "Geometric mean" in res.stdout and "6 slower" in res.stdout
    # a 2x slowdown is within a 150 % allowance; without the option compare only reports
    assert collkit_compare(capsys, a, b, "--fail-on-regression", "150").returncode == 0
    assert collkit_compare(capsys, a, b).returncode == 0
    # the other way round the same points are faster
    _, rows = rows_of(capsys, b, a)
    assert {r["verdict"] for r in rows if r["algorithm"] == "bine"} == {"faster"}


def test_geometric_means_per_collective_and_backend(tmp_path, capsys):
    a, b = campaign(tmp_path / "a", 1), campaign(tmp_path / "b", 1, slow="ring", factor=1.5)
    doc = json.loads(collkit_compare(capsys, a, b, "--format", "json").stdout)
    g = {x["backend"]: x for x in doc["geomeans"]}
    # ring 1.5x and bine 1x among the collkit points: geometric mean sqrt(1.5)
    assert g["collkit"]["geomean_ratio"] == pytest.approx(1.5 ** 0.5, rel=1e-6)
    assert g["mpi"]["geomean_ratio"] == pytest.approx(1.0) and g["collkit"]["points"] == 12
    assert doc["correction"] == "holm" and doc["alpha"] == 0.01


def test_missing_and_not_ok_points_are_listed_not_dropped(tmp_path, capsys):
    a = campaign(tmp_path / "a", 1, drop=("ring-4-64",))
    b = campaign(tmp_path / "b", 2, drop=("bine-8-1024",),
                 status={"ring-8-64": "failed", "bine-4-64": "skipped", "ring-4-1024": "invalid"})
    rc, rows = rows_of(capsys, a, b)
    assert rc == 0 and len(rows) == 18
    by = {(r["algorithm"], r["ranks"], r["bytes"]): r for r in rows}
    assert (by[("ring", "4", "64")]["status"], by[("ring", "4", "64")]["base_status"]) == ("only_new", "")
    assert (by[("bine", "8", "1024")]["status"], by[("bine", "8", "1024")]["new_status"]) == ("only_base", "")
    assert by[("ring", "8", "64")]["status"] == "not_ok" and by[("ring", "8", "64")]["new_status"] == "failed"
    assert by[("ring", "8", "64")]["note"] == "NEW failed: it failed"
    assert by[("bine", "4", "64")]["new_status"] == "skipped"
    assert by[("ring", "4", "1024")]["status"] == "not_ok" and by[("ring", "4", "1024")]["verdict"] == ""
    assert sum(r["status"] == "compared" for r in rows) == 13
    section = collkit_compare(capsys, a, b).stdout.split("Points not compared:")[1]
    for what in ("only_new", "only_base", "NEW failed", "NEW skipped", "NEW invalid"):
        assert what in section


def test_match_keys_compare_two_libraries(tmp_path, capsys):
    a = campaign(tmp_path / "a", 1)
    b = campaign(tmp_path / "b", 2, mpi="mpich")
    res = collkit_compare(capsys, a, b)
    assert one_line_error(res, "share no points") and res.stdout == ""
    rc, rows = rows_of(capsys, a, b, "--ignore-keys", "mpi")
    assert rc == 0 and len(rows) == 18 and {r["verdict"] for r in rows} == {"same"}
    rc, rows = rows_of(capsys, a, b, "--match-keys", "collective,backend,algorithm,ranks,bytes")
    assert rc == 0 and len(rows) == 18
    # too few keys: two points of a campaign would match the same point
    one_line_error(collkit_compare(capsys, a, b, "--match-keys", "collective,algorithm,ranks"), "share the key")


def test_several_new_campaigns_and_deterministic_output(tmp_path, capsys):
    a, b, c = campaign(tmp_path / "a", 1), campaign(tmp_path / "b", 2), campaign(tmp_path / "c", 3, slow="ring")
    rc, rows = rows_of(capsys, a, b, c)
    assert rc == 0 and len(rows) == 36
    assert {r["verdict"] for r in rows if r["new"] == str(c) and r["algorithm"] == "ring"} == {"slower"}
    assert {r["verdict"] for r in rows if r["new"] == str(b)} == {"same"}
    first = collkit_compare(capsys, a, b, c).stdout
    assert first == collkit_compare(capsys, a, b, c).stdout
    table = [ln for ln in first.splitlines() if "allreduce" in ln and "collkit:ring" in ln and "slower" in ln]
    assert len(table) == 6 and all(ln.startswith("c ") for ln in table)     # rows name their NEW campaign


@pytest.mark.parametrize("args, message", [
    (["--fail-on-regression", "0"], "above 0 and below 10000"),
    (["--fail-on-regression", "-5"], "above 0 and below 10000"),
    (["--fail-on-regression", "nan"], "above 0 and below 10000"),
    (["--fail-on-regression", "inf"], "above 0 and below 10000"),
    (["--fail-on-regression", "10000"], "above 0 and below 10000"),
    (["--fail-on-regression", "ten"], "needs a percentage"),
    (["--match-keys", "collective,algo"], "unknown key 'algo' (did you mean 'algorithm'?)"),
    (["--match-keys", ","], "needs at least one key"),
    (["--ignore-keys", ",".join(compare.IDENTITY)], "leaves no key"),
    (["--match-keys", "ranks", "--ignore-keys", "mpi"], "not both"),
    (["--format", "xml"], "invalid choice"),
])
def test_bad_options_exit_2_with_one_line(tmp_path, capsys, args, message):
    a, b = campaign(tmp_path / "a", 1), campaign(tmp_path / "b", 2)
    res = collkit_compare(capsys, a, b, *args)
    assert one_line_error(res, message) and res.stdout == ""


def test_not_a_campaign_exits_2_with_one_line(tmp_path, capsys):
    a = campaign(tmp_path / "a", 1)
    (tmp_path / "plain").mkdir()
    (tmp_path / "file").write_text("x")
    for other in (tmp_path / "plain", tmp_path / "missing", tmp_path / "file"):
        for args in ((a, other), (other, a)):
            res = collkit_compare(capsys, *args)
            assert one_line_error(res, "campaign") and res.stdout == ""


def test_two_launches_a_side_cannot_tell_a_change_from_a_launch_state(tmp_path, capsys):
    # b's ring is 15 % slower in both of its launches: pooled iterations call that
    # significant, but two launches a side cannot tell it from a state each launch
    # drew (the exact test's smallest p is 0.33), so the verdict is unknown.
    a = campaign(tmp_path / "a", 1, launches=2, launch_sigma=0.0)
    b = campaign(tmp_path / "b", 2, launches=2, launch_sigma=0.0, slow="ring", factor=1.15)
    rc, rows = rows_of(capsys, a, b, "--fail-on-regression", "5")
    assert rc == 0 and {r["verdict"] for r in rows} == {"unknown"}
    assert all("2 + 2 launches" in r["note"] and "5 launches a side at least" in r["note"] for r in rows)
    out = collkit_compare(capsys, a, b).stdout
    assert "18 unknown" in out and "too few launches" in out


def test_one_launch_a_side_is_never_a_verdict_and_the_interval_is_the_iterations(tmp_path, capsys):
    a = campaign(tmp_path / "a", 1, launches=1)
    b = campaign(tmp_path / "b", 2, launches=1, slow="bine")
    rc, rows = rows_of(capsys, a, b)
    assert rc == 0 and {r["verdict"] for r in rows} == {"unknown"}
    bine = [r for r in rows if r["algorithm"] == "bine"]
    assert all(float(r["ratio_ci_low"]) > 1.5 for r in bine)     # the iterations' interval, shown as such
    assert {r["launches"] for r in rows} == {"1+1"}
