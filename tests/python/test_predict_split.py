"""`collkit predict` on a profile that splits its calls into waiting and working
(issue #41): waiting carried unchanged into both totals, working from the
campaign's records measured under the class's own conditions, and one line for
a campaign measured under other conditions."""

from __future__ import annotations

import dataclasses
import pytest

from cli_runner import in_process, one_line_error
from collkit.campaign import conditions as conds
from collkit.common.errors import UserError
from collkit.program.predict import BASIS_PROGRAM, BASIS_SYNCHRONISED, BASIS_WHOLE, predict_profile
from collkit.program import profile_file
from collkit.program.profile_file import ClassSplit, RankSplit, RankTrace, Trace
from collkit.program.spec_from_profile import program_conditions
from program_fixture import call, profile, write
from test_predict import campaign, rec, rules, times

SKEW = ((0.0,) * 11, tuple(float(10 * k) for k in range(11)))     # rank 1 up to 100 us late


def split_class(waiting_s: float, *, calls: int = 1000, time_s: float = 0.5, gap_s: float = 20e-6):
    """An 8-byte allreduce at 2 ranks, its busiest rank waiting waiting_s in all."""
    ranks = tuple(RankSplit(rank=r, world_rank=r, waiting_s=waiting_s if r == 0 else 0.0,
                            working_s=time_s - (waiting_s if r == 0 else 0.0), last_share=float(r),
                            gap_median_s=gap_s, skew_quantiles_s=tuple(v * 1e-6 for v in SKEW[r]))
                  for r in range(2))
    s = ClassSplit(source="trace", matched_calls=calls, unmatched_calls=0, stride=1, waiting_s=waiting_s,
                   working_s=time_s - waiting_s, working_call_median_s=3e-6, ranks=ranks)
    c = call("allreduce", 8, time_s, dtype="double", datatype="MPI_DOUBLE", op="sum", calls=calls, comm_size=2)
    return dataclasses.replace(c, split=s)


def program_rec(backend, algorithm, c, working_us: float, conditions: conds.Conditions | None = None):
    """A record measured under c's program conditions (or the given ones), its
    iterations' slowest-rank times including the skew, its working median given."""
    r = rec(backend, algorithm, c, times(working_us + 100.0))
    r["conditions"] = (conditions or program_conditions(c)).record()
    r["working"] = {"iterations": 31, "median_us": working_us, "median_ci_us": [0.9 * working_us, 1.1 * working_us]}
    return r


def test_a_split_class_is_its_waiting_plus_calls_times_the_working_under_its_conditions(tmp_path):
    c = split_class(0.2)
    camp = campaign(tmp_path / "c", [program_rec("mpi", "default", c, 4.0),
                                     program_rec("collkit", "recursive_doubling", c, 2.0)])
    pred = predict_profile(profile([c], ranks=2), camp, rules(tmp_path, "allreduce * * recursive_doubling\n"))
    (x,) = pred.classes
    assert x.covered and x.basis == BASIS_PROGRAM and x.waiting_s == pytest.approx(0.2)
    # waiting, then calls x working (not the iterations' times, which hold the skew)
    assert x.default_total_s == pytest.approx(0.2 + 1000 * 4e-6)
    assert x.rules_total_s == pytest.approx(0.2 + 1000 * 2e-6)
    assert x.default_total_ci == pytest.approx((0.2 + 1000 * 3.6e-6, 0.2 + 1000 * 4.4e-6))
    assert pred.waiting_total_s == pytest.approx(0.2)
    assert pred.working_total_s("default") == pytest.approx(4e-3)
    assert pred.working_total_s("rules") == pytest.approx(2e-3)
    assert pred.wall_change_s == pytest.approx(-2e-3)      # the waiting is the same under both


def test_a_synchronised_campaign_for_a_split_profile_is_one_line_with_the_fix(tmp_path):
    c = split_class(0.2)
    camp = campaign(tmp_path / "c", [rec("mpi", "default", c, times(4.0))])
    with pytest.raises(UserError, match="measured under synchronised conditions.*spec --from-profile.*"
                                        "--synchronised"):
        predict_profile(profile([c], ranks=2), camp, None)
    # asked for: the synchronised median is the working time
    pred = predict_profile(profile([c], ranks=2), camp, None, synchronised=True)
    (x,) = pred.classes
    assert x.basis == BASIS_SYNCHRONISED and x.default_total_s == pytest.approx(0.2 + 1000 * 4e-6)


def test_a_campaign_of_another_profiles_conditions_is_refused_on_the_command_line(tmp_path, capsys):
    c = split_class(0.2)
    other = conds.Conditions("program", 500.0, SKEW)
    camp = campaign(tmp_path / "c", [program_rec("mpi", "default", c, 4.0, other)])
    prof = write(tmp_path / "p.json", [c], ranks=2)
    res = in_process(capsys, "predict", str(prof), "--campaign", str(camp))
    one_line_error(res, "--campaign", "program conditions of another profile", "spec --from-profile")


def test_two_classes_of_one_point_share_the_busier_ones_conditions(tmp_path):
    busy = split_class(0.2, time_s=0.5)
    other = dataclasses.replace(split_class(0.1, time_s=0.3, gap_s=80e-6), comm="c0x2")
    assert program_conditions(busy) != program_conditions(other)
    camp = campaign(tmp_path / "c", [program_rec("mpi", "default", busy, 4.0)])
    pred = predict_profile(profile([busy, other], ranks=2), camp, None)
    notes = {x.call.comm: x.note for x in pred.classes}
    assert all(x.covered and x.basis == BASIS_PROGRAM for x in pred.classes)
    assert notes["world"] == "" and "another class of the same point" in notes["c0x2"]


def test_a_class_without_a_split_is_predicted_from_whole_synchronised_calls(tmp_path):
    c = call("allreduce", 8, 0.05, dtype="double", datatype="MPI_DOUBLE", op="sum", calls=1000, comm_size=2)
    camp = campaign(tmp_path / "c", [rec("mpi", "default", c, times(40.0))])
    (x,) = predict_profile(profile([c], ranks=2), camp, None).classes
    assert x.basis == BASIS_WHOLE and x.waiting_s is None and x.default_total_s == pytest.approx(1000 * 40e-6)


def test_a_trace_without_clock_data_is_one_line_naming_the_file(tmp_path, capsys):
    c = call("allreduce", 8, 0.05, dtype="double", datatype="MPI_DOUBLE", op="sum", calls=1000, comm_size=2)
    prof = profile([c], ranks=2)
    old = dataclasses.replace(prof, trace=Trace(max_calls_per_rank=10, ranks=(RankTrace(rank=0, dropped=0,
                                                                                      calls=((0, 0.1, 1e-5),)),)))
    path = tmp_path / "old.json"
    profile_file.dump(old, path)
    camp = campaign(tmp_path / "c", [rec("mpi", "default", c, times(40.0))])
    res = in_process(capsys, "predict", str(path), "--campaign", str(camp))
    line = one_line_error(res, "old.json", "no clock data", "profile the program again")
    assert "Traceback" not in line


def test_waiting_from_several_runs_is_the_median_per_call(tmp_path):
    """Issue #50: one atypical run's waiting (0.74 s where three others waited
    0.24-0.35 s) no longer sets the prediction: the median per call of the four."""
    c = split_class(0.74)
    camp = campaign(tmp_path / "c", [program_rec("mpi", "default", c, 4.0)])
    others = tuple(profile([split_class(w)], ranks=2) for w in (0.24, 0.30, 0.35))
    (x,) = predict_profile(profile([c], ranks=2), camp, None, waiting_from=others).classes
    assert x.waiting_runs == 4
    assert x.waiting_s == pytest.approx(1000 * (0.30 + 0.35) / 2 / 1000)       # median of 4 per-call waits x calls
    assert x.default_total_s == pytest.approx(0.325 + 1000 * 4e-6)
    (alone,) = predict_profile(profile([c], ranks=2), camp, None).classes
    assert alone.waiting_runs == 1 and alone.waiting_s == pytest.approx(0.74)


def test_waiting_from_a_profile_of_another_rank_count_is_one_line(tmp_path, capsys):
    c = split_class(0.2)
    camp = campaign(tmp_path / "c", [program_rec("mpi", "default", c, 4.0)])
    mine = write(tmp_path / "p.json", [c], ranks=2)
    other = write(tmp_path / "q.json", [c], ranks=4)
    one_line_error(in_process(capsys, "predict", str(mine), "--campaign", str(camp), "--waiting-from", str(other)),
                   f"--waiting-from {other}: a profile of 4 ranks")
