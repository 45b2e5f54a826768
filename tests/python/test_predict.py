"""`collkit predict`: per class calls x median with its interval, the rules' choice as
the preload would run it, uncovered classes carried unchanged, totals, and bad input."""

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from cli_runner import in_process, one_line_error
from collkit.analysis import stats
from collkit.backends import openmpi
from collkit.campaign import plan as planner
from collkit.campaign import spec as specs
from collkit.campaign.platform import Platform, PlatformMPI
from collkit.common.errors import UserError
from collkit.library import registry
from collkit.mpis.install import MPIInstall
from collkit.program import profile_file, spec_from_profile
from collkit.program import predict
from collkit.program.predict import predict_profile
from program_fixture import call, profile, write

FIXTURES = Path(__file__).parent / "fixtures"
AR8 = call("allreduce", 8, 0.05, dtype="double", datatype="MPI_DOUBLE", op="sum", calls=1000)
BC = call("bcast", 1000, 0.01, root=2, calls=100)
BARRIER = call("barrier", 0, 0.005, datatype="", calls=50)


def times(median_us: float, n: int = 31) -> list[float]:
    """n iterations around median_us, whose median is exactly median_us."""
    return [float(t) for t in np.linspace(0.9 * median_us, 1.1 * median_us, n)]


def rec(backend, algorithm, c, t, status="ok", unstable="", mpi="openmpi"):
    """A record of the point spec_from_profile.point_of gives for class c."""
    p = spec_from_profile.point_of(c)
    timed = status in ("ok", "invalid") and bool(t)
    return {"id": f"{p.collective}/{backend}/{algorithm}/{p.bytes}/{p.dtype}/{p.op}", "collective": p.collective,
            "backend": backend, "mpi": mpi, "algorithm": algorithm, "ranks": p.ranks,
            "count": p.bytes // registry.datatype_size(p.dtype), "bytes": p.bytes, "dtype": p.dtype, "op": p.op, "root": p.root, "in_place": p.in_place, "status": status,
            "reason": "" if status == "ok" else f"it {status}", "iterations": len(t) if timed else 0,
            "times_us": t if timed else [], "unstable": unstable,
            "stats_us": {"median": float(np.median(t)), "min": min(t), "max": max(t), "p5": min(t), "p95": max(t)}
            if timed else {}}


def campaign(d: Path, records: list[dict]) -> Path:
    d.mkdir(parents=True)
    (d / "spec.toml").write_text('name = "t"\n')
    (d / "resolved.json").write_text(json.dumps({"points": [], "skipped": []}))
    (d / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return d


def standard(tmp_path) -> Path:
    return campaign(tmp_path / "c", [
        rec("mpi", "default", AR8, times(40.0)), rec("collkit", "recursive_doubling", AR8, times(20.0)),
        rec("mpi", "default", BC, times(50.0)), rec("collkit", "binomial_halving", BC, times(100.0))])


def rules(tmp_path, text: str) -> Path:
    path = tmp_path / "r.rules"
    path.write_text(text)
    return path


RULES = "allreduce 4 0-64 recursive_doubling\nbcast * * binomial_halving\n"


def test_classes_and_totals_from_medians_and_intervals(tmp_path):
    pred = predict_profile(profile([AR8, BC, BARRIER]), standard(tmp_path), rules(tmp_path, RULES))
    by = {x.call.collective: x for x in pred.classes}
    ar, bc, bar = by["allreduce"], by["bcast"], by["barrier"]
    assert [x.call.collective for x in pred.classes] == ["allreduce", "bcast", "barrier"]   # by profiled time
    assert ar.covered and ar.choice == "recursive_doubling" and ar.note == ""
    assert ar.default_s == pytest.approx(40e-6) and ar.rules_s == pytest.approx(20e-6)
    assert ar.default_total_s == pytest.approx(0.04) and ar.rules_total_s == pytest.approx(0.02)
    lo, hi = stats.median_ci(times(40.0))
    assert ar.default_ci == pytest.approx((lo * 1e-6, hi * 1e-6))
    assert ar.default_total_ci == pytest.approx((1000 * lo * 1e-6, 1000 * hi * 1e-6))
    assert ar.default_total_ci[0] < ar.default_total_s < ar.default_total_ci[1]
    assert bc.rules_total_s == pytest.approx(0.01) and bc.default_total_s == pytest.approx(0.005)
    assert not bar.covered and "not measurable: a barrier" in bar.note
    assert bar.default_total_s == bar.rules_total_s == 0.005
    assert pred.uncovered_s == pytest.approx(0.005)
    assert pred.default_total_s == pytest.approx(0.04 + 0.005 + 0.005)
    assert pred.rules_total_s == pytest.approx(0.02 + 0.01 + 0.005)
    assert pred.wall_change_s == pytest.approx(-0.015)
    assert pred.measured_total_s == pytest.approx(0.065)
    lo_sum = sum(x.default_total_ci[0] for x in pred.classes)
    assert pred.default_total_ci[0] == pytest.approx(lo_sum)


def test_without_rules_both_totals_are_the_default(tmp_path):
    pred = predict_profile(profile([AR8, BC]), standard(tmp_path), None)
    assert all(x.choice == "library" for x in pred.classes)
    assert pred.rules_total_s == pred.default_total_s and pred.wall_change_s == 0


def test_forced_algorithms_predict_as_their_rules_everywhere(tmp_path):
    """`collkit trial --algorithm` predicts forced algorithms as `C * * NAME`
    would be, without a rules file; the table and JSON say which it was."""
    forced = (("allreduce", "recursive_doubling"), ("bcast", "binomial_halving"))
    c = standard(tmp_path)
    by_force = predict_profile(profile([AR8, BC, BARRIER]), c, None, forced=forced)
    by_rules = predict_profile(profile([AR8, BC, BARRIER]), c,
                               rules(tmp_path, "allreduce * * recursive_doubling\nbcast * * binomial_halving\n"))
    assert by_force.classes == by_rules.classes and by_force.rules_total_s == by_rules.rules_total_s
    assert by_force.rules_total_s == pytest.approx(0.02 + 0.01 + 0.005) and by_force.has_choice
    doc = by_force.to_json()
    assert doc["rules"] is None and doc["forced"] == [list(a) for a in forced]
    # at a fixed width: pytest-xdist's workers set COLUMNS=80, where the variant column wraps
    assert "forced: recursive_doubling" in predict.table(by_force, width=100)
    assert "rules: " in predict.table(by_rules, width=100)
    with pytest.raises(ValueError):
        predict_profile(profile([AR8]), c, rules(tmp_path, RULES), forced=forced)


def test_no_matching_rule_or_library_is_the_default(tmp_path):
    r = rules(tmp_path, "allreduce 8-* * recursive_doubling\nbcast * * library\n")
    pred = predict_profile(profile([AR8, BC]), standard(tmp_path), r)
    assert {x.choice for x in pred.classes} == {"library"}
    assert pred.rules_total_s == pytest.approx(pred.default_total_s)


def test_an_fp_rank_variant_choice_on_doubles_runs_the_library_unless_allowed(tmp_path):
    fp = next(a.name for a in registry.load() if a.collective == "allreduce" and a.traits.fp_rank_variant)
    ints = call("allreduce", 8, 0.05, dtype="int32", datatype="MPI_INT", op="sum", calls=1000)
    c = campaign(tmp_path / "c", [rec("mpi", "default", AR8, times(40.0)), rec("collkit", fp, AR8, times(10.0)),
                                  rec("mpi", "default", ints, times(40.0)), rec("collkit", fp, ints, times(10.0))])
    text = f"allreduce * * {fp}\n"
    pred = predict_profile(profile([AR8, ints]), c, rules(tmp_path, text))
    by = {x.call.dtype: x for x in pred.classes}
    assert by["double"].covered and "rank-dependent float results" in by["double"].note
    assert by["double"].rules_total_s == pytest.approx(by["double"].default_total_s)
    assert by["int32"].rules_s == pytest.approx(10e-6) and by["int32"].note == ""
    pred = predict_profile(profile([AR8]), c, rules(tmp_path, "allow_fp_rank_variant = true\n" + text))
    assert pred.classes[0].rules_s == pytest.approx(10e-6)


@pytest.mark.parametrize("change, why", [
    ({"status": "failed"}, "openmpi:default failed: it failed"),
    ({"unstable": "a slow start"}, "openmpi:default unstable: a slow start"),
    ({"drop": True}, "the campaign has no openmpi:default point"),
])
def test_unusable_points_leave_the_class_uncovered(tmp_path, change, why):
    default = rec("mpi", "default", AR8, times(40.0), status=change.get("status", "ok"),
                  unstable=change.get("unstable", ""))
    recs = [rec("collkit", "recursive_doubling", AR8, times(20.0))] + ([] if change.get("drop") else [default])
    pred = predict_profile(profile([AR8]), campaign(tmp_path / "c", recs), rules(tmp_path, RULES))
    x = pred.classes[0]
    assert not x.covered and x.note == why
    assert x.default_total_s == x.rules_total_s == AR8.time_max_s == pred.uncovered_s
    assert pred.wall_change_s == 0


def test_an_unusable_chosen_point_leaves_the_class_uncovered(tmp_path):
    c = campaign(tmp_path / "c", [rec("mpi", "default", AR8, times(40.0)),
                                  rec("collkit", "recursive_doubling", AR8, [], status="skipped")])
    x = predict_profile(profile([AR8]), c, rules(tmp_path, RULES)).classes[0]
    assert not x.covered and x.note == "collkit:recursive_doubling skipped: it skipped"


def test_a_point_without_an_interval_is_shown_as_such(tmp_path, capsys):
    c = campaign(tmp_path / "c", [rec("mpi", "default", AR8, times(40.0, n=4)),
                                  rec("collkit", "recursive_doubling", AR8, times(20.0))])
    pred = predict_profile(profile([AR8]), c, rules(tmp_path, RULES))
    x = pred.classes[0]
    assert x.default_ci is None and x.default_total_ci is None and pred.default_total_ci is None
    assert x.rules_ci is not None and pred.rules_total_ci is not None
    prof = write(tmp_path / "p.json", [AR8])
    res = in_process(capsys, "predict", prof, "--campaign", c, "--rules", tmp_path / "r.rules")
    assert res.returncode == 0 and "no interval" in res.stdout


def test_the_command_prints_the_table_totals_and_wall_change(tmp_path, capsys):
    prof = write(tmp_path / "p.json", [AR8, BC, BARRIER], wall_s=2.0)
    args = ["predict", str(prof), "--campaign", str(standard(tmp_path)), "--rules", str(rules(tmp_path, RULES))]
    res = in_process(capsys, *args)
    assert res.returncode == 0
    out = res.stdout
    assert "recursive_doubling" in out and "binomial_halving" in out
    assert "implied change of wall time: -15.00ms (-0.75 % of the profiled 2.000s)" in out
    assert "1 class(es) not covered" in out
    res = in_process(capsys, *args, "--json")
    assert res.returncode == 0
    data = json.loads(res.stdout)
    assert data["wall_change_s"] == pytest.approx(-0.015) and data["uncovered_s"] == pytest.approx(0.005)
    assert [c["class"]["collective"] for c in data["classes"]] == ["allreduce", "bcast", "barrier"]


def test_a_campaign_of_the_generated_spec_covers_every_measurable_class(tmp_path, capsys):
    """spec --from-profile's points are the ones predict looks up (one mapping)."""
    classes = [AR8, BC, call("allreduce", 64, 0.02, dtype="int32", datatype="MPI_INT", op="max", in_place=True),
               call("allgather", 24, 0.01, comm="c0x2", comm_size=2), BARRIER]
    prof = write(tmp_path / "p.json", classes)
    assert spec_from_profile.run(argparse.Namespace(from_profile=str(prof), min_share=0.0, mpi=None,
                                                    out=str(tmp_path / "s.toml"))) == 0
    offer = openmpi.build_offer(openmpi.parse((FIXTURES / "ompi_info-4.1.4.txt").read_text()), tool="ompi_info")
    platform = Platform("test", "test", {"openmpi": PlatformMPI(MPIInstall("openmpi", Path("/bin/true")),
                                                                Path("/bin/true"))})
    plan = planner.build(specs.load(tmp_path / "s.toml"), platform, registry.load(), discover=lambda pm: offer)
    recs = [dict(p.describe(), status="ok", reason="", iterations=31, times_us=times(30.0),
                 stats_us={"median": 30.0}) for p in plan.points]
    c = campaign(tmp_path / "c", recs)
    r = rules(tmp_path, "allreduce * * ring\nallgather * * ring\nbcast * * binomial_halving\n")
    pred = predict_profile(profile_file.load(prof), c, r)
    covered = {x.call.collective + str(x.call.bytes): x for x in pred.classes if x.covered}
    assert set(covered) == {"allreduce8", "bcast1000", "allreduce64", "allgather24"}
    assert all(x.rules_s == pytest.approx(30e-6) and x.choice != "library" for x in covered.values())
    assert pred.uncovered_s == BARRIER.time_max_s


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    good = write(tmp_path / "p.json", [AR8, BC])
    c = standard(tmp_path)
    (tmp_path / "plain").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "bad.json").write_text('{"format": "collkit-profile", "version": 99}')
    other = campaign(tmp_path / "other", [dict(rec("mpi", "default", AR8, times(40.0)), mpi="mpich")])
    cases = [
        ((tmp_path / "bad.json", c, None), "damaged or foreign profile"),
        ((write(tmp_path / "inc.json", [AR8], complete=False, exit_status=1), c, None), "incomplete"),
        ((good, tmp_path / "missing", None), "not a directory"),
        ((good, tmp_path / "plain", None), "is not a collkit campaign"),
        ((good, tmp_path / "file", None), "not a directory"),
        ((good, other, None), "measured MPI mpich, the profile ran on openmpi"),
        ((good, c, rules(tmp_path, "allreduce four * ring\n")), "line 1: bad rank range 'four'; fix: N, A-B, A-* or * with A >= 1"),
        ((good, c, tmp_path / "no.rules"), "cannot read it"),
    ]
    for (prof, camp, rules_path), message in cases:
        args = ["predict", str(prof), "--campaign", str(camp)] + (["--rules", str(rules_path)] if rules_path else [])
        one_line_error(in_process(capsys, *args), message)
    with pytest.raises(UserError, match="tuned over mpich, not openmpi"):
        predict_profile(profile([AR8]), c, rules(tmp_path, "# for libcollkit over mpich; campaigns: x\n" + RULES))
    with pytest.raises(UserError, match="unknown allreduce algorithm 'rign'"):
        predict_profile(profile([AR8]), c, rules(tmp_path, "allreduce * * rign\n"))


def test_rules_written_by_tune_are_used_as_the_preload_reads_them(tmp_path, capsys):
    """`collkit tune --format collkit` on the campaign: its header names the MPI, and
    its choice (recursive_doubling, twice as fast as the default here) is predicted."""
    c = standard(tmp_path)
    out = tmp_path / "tuned.rules"
    res = in_process(capsys, "tune", c, "--format", "collkit", "--out", out)
    assert res.returncode == 0, res.stderr
    text = out.read_text()
    from collkit.tune.writers import collkit as rules_format
    assert rules_format.written_for(text) == "openmpi"
    pred = predict_profile(profile([AR8, BC]), c, out)
    by = {x.call.collective: x for x in pred.classes}
    assert by["allreduce"].choice == "recursive_doubling" and by["allreduce"].rules_s == pytest.approx(20e-6)
    assert by["bcast"].choice == "library"
    with pytest.raises(UserError, match="tuned over openmpi, not mpich"):
        predict_profile(profile([AR8], mpi="mpich"), c, out)


def test_a_library_algorithm_rule_predicts_the_librarys_forced_algorithm(tmp_path):
    """`library:NAME` (the autotuner's candidates under MPICH, switched per call): the
    library runs NAME, so the prediction is the campaign's backend-mpi point forced
    to it, found by the library's own name (bcast's `binomial` is collkit's
    binomial_halving), not the library's default."""
    forced = dict(rec("mpi", "binomial_halving", BC, times(10.0), mpi="mpich"), native="binomial")
    c = campaign(tmp_path / "c", [dict(rec("mpi", "default", BC, times(50.0)), mpi="mpich"), forced,
                                  dict(rec("collkit", "binomial_halving", BC, times(100.0)), mpi="mpich")])
    pred = predict_profile(profile([BC], mpi="mpich"), c, rules(tmp_path, "bcast * * library:binomial\n"))
    (x,) = pred.classes
    assert x.covered and x.choice == "library:binomial"
    assert x.default_total_s == pytest.approx(100 * 50e-6) and x.rules_total_s == pytest.approx(100 * 10e-6)
    # a library algorithm the campaign did not force: uncovered, saying which point is missing
    pred = predict_profile(profile([BC], mpi="mpich"), c, rules(tmp_path, "bcast * * library:scatter_ring_allgather\n"))
    (x,) = pred.classes
    assert not x.covered and "mpich:scatter_ring_allgather (forced)" in x.note


def test_classes_with_too_few_calls_are_said_to_be_so_with_what_they_weigh(tmp_path, capsys):
    """Issue #50: a class called fewer than 6 times is marked, and the summary
    says how many such classes there are and their share of the time."""
    few = call("bcast", 1000, 0.02, root=2, calls=5)
    enough = call("bcast", 2000, 0.02, root=2, calls=6)
    recs = [rec("mpi", "default", c, times(50.0)) for c in (AR8, few, enough)]
    pred = predict_profile(profile([AR8, few, enough]), campaign(tmp_path / "c", recs), None)
    by = {x.call.calls: x for x in pred.classes}
    assert by[5].few_calls and not by[6].few_calls and not by[1000].few_calls
    assert pred.few_calls_s == pytest.approx(0.02)
    assert all(x.covered for x in pred.classes)
    assert pred.to_json()["few_calls_classes"] == 1
    assert [c["few_calls"] for c in pred.to_json()["classes"] if c["class"]["calls"] == 5] == [True]
    text = " ".join(predict.table(pred, width=100).split())
    assert "5 calls, profiled 20.00ms; too few calls to predict (under 6)" in text
    assert "6 calls, profiled 20.00ms; too few" not in text
    # 0.02 of 0.05 + 0.02 + 0.02 s profiled in collectives
    assert "1 class(es) with too few calls to predict (under 6 each): they weigh 20.00ms profiled, 22.2 %" in text
