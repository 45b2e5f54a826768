"""Every table a user reads in a terminal fits 100 columns (issue #40): the
campaign summary and its problem, unstable, skipped and per-rank tables
(`collkit run` / `report`), `profile`, `predict` and `trial`, rendered at
width 100 from data with the longest names they meet (reduce_scatter,
bine_scatter_allgather, a library variant with its parameters, a Fortran
datatype, intervals of several digits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from collkit.analysis import per_rank, results
from collkit.analysis.results import SummaryLine, PointCheck
from collkit.campaign.record import Record
from collkit.program import predict, profile, trial
from collkit.program.predict import ClassPrediction, Prediction
from collkit.program.trial_stats import Comparison
from program_fixture import call, profile as make_profile

WIDTH = 100
LONG_LABELS = ["collkit:bine_scatter_allgather", "openmpi:binomial[segmentsize=8192,fanout=4]",
               "mpich:recursive_exchange_doubling", "collkit:scatter_allgather_ring"]


def fits(text: str) -> None:
    long = [ln for ln in text.splitlines() if len(ln) > WIDTH]
    assert not long, "\n".join(long)


def test_campaign_summary_fits():
    lines = []
    for i, label in enumerate(LONG_LABELS * 3):
        lines.append(SummaryLine("reduce_scatter", ["openmpi", "mpich", "intel-mpi-2021"][i % 3], 1024,
                                 16 << 20 << (i % 2), label, 123456.7, "openmpi:default", 234567.8, 37,
                                 p_value=[0.001, 0.5, None][i % 3],
                                 checks=(PointCheck("spread", f"{label} reduce_scatter p=1024 32MiB"),),
                                 default_implausible=i == 4))
    text = results.summary_table(lines, width=WIDTH)
    fits(text)
    assert "default/best" in text and "floor:" in text and "tie:" in text


def record(label: str, status: str = "ok", reason: str = "", unstable: str = "", ranks: int = 1024) -> Record:
    backend, _, algorithm = label.partition(":")
    line = {"type": "point", "id": f"reduce_scatter/{label}/{ranks}", "collective": "reduce_scatter",
            "backend": "collkit" if backend == "collkit" else "mpi", "mpi": "openmpi",
            "algorithm": algorithm, "ranks": ranks, "count": 1 << 20, "bytes": 4 << 20, "dtype": "double",
            "op": "sum", "root": 0, "in_place": 0, "status": status, "reason": reason, "iterations": 30,
            "times_us": [1234.5] * 30, "unstable": unstable,
            "stats_us": {"min": 1234.5, "median": 1234.5, "max": 1234.5, "p5": 1234.5, "p95": 1234.5}}
    return Record.from_json(line)


def test_problem_unstable_and_skipped_tables_fit():
    why = ("collkit-bench exited with status 134 while running this point: MPI_ERR_TRUNCATE: message "
           "truncated on rank 731 of 1024 (the library refused the forced algorithm at this count)")
    rows = [record(label, status, why) for label in LONG_LABELS for status in ("failed", "invalid")]
    rows += [record(label, unstable="drift: the last window's median 1.41x the first's after 3 windows "
                                    "of 10 iterations, 0.2 s") for label in LONG_LABELS]
    fits(results.problems_table(rows))
    fits(results.unstable_table(rows))


def test_profile_table_fits():
    classes = [call("reduce_scatter", 3 << 30, 12.345678, calls=1234567, comm="comm#12", comm_size=1024,
                    dtype="double", datatype="MPI_DOUBLE_PRECISION", op="MPI_SUM", in_place=True),
               call("allgather", 8, 0.5, comm_size=1024, datatype="derived", calls=99),
               call("bcast", 1 << 20, 1.5, root=1023, comm_size=1024, datatype="MPI_DOUBLE_COMPLEX")]
    text = profile.table(make_profile(classes, ranks=1024, wall_s=1234.5), width=WIDTH)
    fits(text)
    assert "reduce_scatter" in text and "double_precision" in text


def test_profile_split_table_fits():
    """The waiting and working per class: the widest cells are a sample's
    stride, late ranks that tie, and a class with no split and its reason."""
    from dataclasses import replace
    from collkit.program.profile_file import ClassSplit, Clock, RankSplit
    ranks = tuple(RankSplit(rank=r, world_rank=r, waiting_s=123.456789, working_s=1234.567891,
                            last_share=0.25 if r >= 1020 else 0.0, gap_median_s=None,
                            skew_quantiles_s=(0.0,) * 11) for r in range(1024))
    split = ClassSplit(source="sample", matched_calls=1234567, unmatched_calls=123, stride=1 << 20,
                       waiting_s=123.456789, working_s=1234.567891, working_call_median_s=1e-6, ranks=ranks)
    classes = [replace(call("reduce_scatter_v", 3 << 30, 1358.02468, calls=1234567, comm="c1023x1024",
                            comm_size=1024, dtype="double", datatype="MPI_DOUBLE_PRECISION", op="sum"), split=split),
               replace(call("alltoallv", 8, 0.5, comm_size=1024, comm="inter"), split_reason=(
                   "calls on an intercommunicator are not matched across its two groups"))]
    prof = replace(make_profile(classes, ranks=1024, wall_s=12345.5),
                   clock=Clock(methods=("exchange", "reference", "same-node"), error_bound_s=1.5e-6, nodes=256))
    text = profile.table(prof, width=WIDTH)
    fits(text)
    assert "1/1048576" in text and "1020,1021,1022+1 (25%)" in text and "not split: alltoallv" in text


def _prediction(rules: bool) -> Prediction:
    long = call("reduce_scatter", 3 << 20, 12.345678, calls=1234567, comm="comm#12", comm_size=1024,
                dtype="double", datatype="MPI_DOUBLE", op="sum", in_place=True)
    short = call("bcast", 8, 0.01, root=1023, comm_size=1024)
    ci = (0.000123456, 0.000134567)
    parts = (ClassPrediction(long, True, "", 0.0001289, ci, "bine_scatter_allgather" if rules else "library",
                             0.0001012, ci, 159.2, (152.4, 166.1), 125.0, (120.1, 130.9)),
             ClassPrediction(short, False, "the campaign has no openmpi:default point; the preload runs the "
                                           "library, not bine_scatter_allgather: a power-of-two algorithm at "
                                           "1023 ranks", None, None, "library", None, None, 0.01, (0.01, 0.01),
                             0.01, (0.01, 0.01)))
    return Prediction(mpi="openmpi", campaign=Path("results/a-campaign-with-a-long-name-20261127-120000"),
                      rules=Path("app.rules") if rules else None, wall_s=1234.5, classes=parts,
                      default_total_s=159.21, default_total_ci=(152.41, 166.11), rules_total_s=125.01,
                      rules_total_ci=(120.11, 130.91), measured_total_s=160.0, uncovered_s=0.01)


@pytest.mark.parametrize("rules", [False, True])
def test_predict_table_fits(rules):
    text = predict.table(_prediction(rules), width=WIDTH)
    fits(text)
    assert "reduce_scatter comm comm#12 1024 ranks 3MiB double sum in place" in text
    assert ("rules: bine_scatter_allgather" in text) == rules


def test_trial_report_fits():
    s = trial.TrialSettings(command=("mpirun", "-n", "1024", "--map-by", "ppr:64:node", "./a-long-program-name",
                                     "--input", "/scratch/project/a/long/path/input.dat"),
                            mpi="openmpi", runs=1000, warmup=2,
                            choice=trial.choices.Choice(
                                kind=trial.choices.ALGORITHMS,
                                describe="forced allreduce=bine_scatter_allgather, reduce_scatter=bine_scatter_allgather",
                                algorithms=(("allreduce", "bine_scatter_allgather"),
                                            ("reduce_scatter", "bine_scatter_allgather"))),
                            campaign=Path("results/a-campaign-with-a-long-name-20261127-120000"))
    res = trial.TrialResult()
    res.comparisons = [Comparison("wall time", 1234.567, (1230.123, 1240.456), 1200.123, (1198.456, 1203.789),
                                  0.9721, 0.000123, "faster"),
                       Comparison("time in collectives", 159.2345, None, 125.0123, (120.1234, 130.9876), 0.7851,
                                  0.0456, "tie")]
    res.prediction = _prediction(True)
    res.status = "complete"
    fits(trial.report(s, res, width=WIDTH))


def test_per_rank_table_fits():
    points = []
    for label in LONG_LABELS:
        rows = [per_rank.RankRow(k, f"lrdn{k // 4:04d}", 12345.6 if k % 97 == 3 else 1234.5, 1.5, 2.5, 0.1,
                                 k % 97 == 3) for k in range(1024)]
        nodes = [per_rank.NodeRow(f"lrdn{n:04d}", 4, 12345.6 if n % 50 == 0 else 1234.5, n % 50 == 0)
                 for n in range(256)]
        points.append(per_rank.PointRanks(record(label), 30, 1000, "offset", rows, 1234.5, nodes, 123.4, 234.5,
                                          "iterations"))
    text = per_rank.table(points, width=WIDTH)
    fits(text)
    assert per_rank.table([]) == ""
