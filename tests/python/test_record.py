"""campaign/record.py: the one record type, its constructors, the export view and the counts."""

import json

from collkit.analysis import results
from collkit.campaign.points import Point
from collkit.campaign.record import Counts, Record
from collkit.campaign.store import Campaign

POINT = Point(collective="allreduce", backend="collkit", mpi="openmpi", algorithm="ring", ranks=4, count=16,
              bytes=64, dtype="int32", op="sum", root=0, in_place=False, env=(("X", "1"),))
LINE = {"type": "point", "id": POINT.id, "collective": "allreduce", "backend": "collkit", "algorithm": "ring",
        "ranks": 4, "count": 16, "dtype": "int32", "op": "sum", "root": 0, "in_place": 0, "bytes": 64,
        "status": "ok", "reason": "", "iterations": 3, "sync": "dissemination", "times_us": [1.0, 2.0, 3.0],
        "stats_us": {"min": 1.0, "median": 2.0, "max": 3.0, "p5": 1.1, "p95": 2.9}, "algbw_GBps": 0.5,
        "busbw_GBps": 0.75}


def test_a_bench_line_becomes_a_record_with_what_the_cli_knows():
    r = Record.from_bench(LINE, POINT, 3, sim_time=True)
    assert (r.id, r.status, r.mpi, r.label, r.time_median_us, r.in_place) == (POINT.id, "ok", "openmpi",
                                                                              "collkit:ring", 2.0, False)
    d = r.to_json()
    assert "type" not in d and d["env"] == {"X": "1"} and d["launch"] == 3 and d["sim_time"] is True
    assert Record.from_json(json.loads(json.dumps(d))) == r


def test_harness_records_carry_no_times():
    s = Record.skipped(Point(**{**POINT.__dict__, "skip_reason": "needs a power of two"}))
    assert (s.status, s.reason, s.time_median_us, s.algbw_GBps) == ("skipped", "needs a power of two", None, 0.0)
    f = Record.failed(POINT, "hung", 2, "tail", job_failure=True)
    assert (f.status, f.job_failure, f.to_json()["stderr_tail"], f.to_json()["launch"]) == ("failed", True, "tail", 2)


def test_results_csv_reads_back_as_the_same_rows(tmp_path):
    rows = [Record.from_bench(LINE, POINT, 1), Record.failed(POINT, "crashed")]
    (tmp_path / "results.csv").write_text(results.to_csv(rows))
    assert results.to_csv(results.read_csv(tmp_path / "results.csv")) == results.to_csv(rows)


def test_counts_are_of_planned_points(tmp_path):
    c = tmp_path / "c"
    c.mkdir()
    other = Point(**{**POINT.__dict__, "algorithm": "bine"})
    (c / "spec.toml").write_text("")
    (c / "resolved.json").write_text(json.dumps({"points": [POINT.describe(), other.describe()], "skipped": []}))
    camp = Campaign.open(c)
    assert camp.add(Record.failed(POINT, "hung")) and not camp.add(Record.from_bench(LINE, POINT, 1))
    n = camp.counts()
    assert n == Counts(failed=1, planned=2) and n.unrecorded == 1
    assert n.line() == "0 ok, 0 invalid, 1 failed, 0 skipped"


def test_a_too_fast_point_carries_the_bench_flag_and_keeps_its_status():
    # an artificial point, median 0.2 us in a launch whose one-message floor was 1.7 us
    why = "median 0.2 us below the one-message floor 1.7 us measured in this launch"
    fast = {**LINE, "stats_us": {**LINE["stats_us"], "median": 0.2}, "implausible": why}
    r = Record.from_bench(fast, POINT, 1)
    assert (r.status, r.implausible) == ("ok", why)
    assert Record.from_json(json.loads(json.dumps(r.to_json()))).implausible == why
    assert Record.from_bench(LINE, POINT, 1).implausible == ""            # older records: plausible
    failed = {**LINE, "status": "failed", "iterations": 0, "implausible": why}
    assert Record.from_bench(failed, POINT, 1).implausible == ""          # no times, nothing to doubt
