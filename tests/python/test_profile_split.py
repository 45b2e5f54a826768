"""Waiting and working in the profile (issue #41; docs/application-loop.md,
"Waiting and working"): rank files of version 2 written here by hand (their
clocks, communicators, traces and samples), matched across ranks and split
by waits.py's rule; strides that differ between ranks, a missing rank,
rooted collectives, classes that disagree, clocks too uncertain, files of two
runs, version 1 files and profiles, the profile file's version 2 and
`collkit profile`'s table. At the end, a real program with a known
imbalance (fixtures/imbalance.c: rank r sleeps r x 100 us before each of
2,000 allreduces) through `collkit profile`, with and without --trace, at 2
and 4 ranks under each MPI."""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path

import pytest

import mpi_programs
import needs
from cli_runner import one_line_error
from k_of_n import k_of_n
from collkit.common.errors import UserError
from collkit.program import arrivals, profile, profile_file, rank_files

US = 1e-6
RUN = "00c0ffee12345678"


def cls(collective="allreduce", *, comm="world", comm_size=2, nbytes=8, root=None, calls=0, time_s=0.0,
        in_place=False) -> dict:
    reduction = collective in ("allreduce", "reduce")
    return {"collective": collective, "comm": comm, "comm_size": comm_size, "bytes": nbytes,
            "datatype": "MPI_DOUBLE", "dtype": "double" if reduction else None, "op": "sum" if reduction else None,
            "root": root, "in_place": in_place, "calls": calls, "time_s": time_s}


def clock(rank: int, *, node: int = 0, mono_zero_s: float = 1000.0, offset: float = 0.0,
          offset_final: float | None = None, error_s: float = 0.0) -> dict:
    method = "reference" if node == 0 else ("exchange" if node == rank else "same-node")
    return {"mono_zero_s": mono_zero_s, "node": node, "method": method, "init_s": mono_zero_s - 0.5,
            "offset_init_s": offset, "final_s": mono_zero_s + 10.0,
            "offset_final_s": offset if offset_final is None else offset_final, "error_s": error_s}


def rank_file(rank: int, size: int, classes: list[dict], rows: list[list], *, comms=None, stride: int = 1,
              clk: dict | None = None, trace: int | None = None, run_id: str = RUN) -> dict:
    """A version-2 final file: rows [class, start_s, duration_s, comm, seq] are
    the sample (those at multiples of stride) and, with trace (the number of
    calls it dropped), the trace;
    each class's calls and time_s are counted from the rows unless given."""
    classes = [dict(c) for c in classes]
    for i, c in enumerate(classes):
        if not c["calls"]:
            mine = [r for r in rows if r[0] == i]
            c["calls"], c["time_s"] = len(mine), math.fsum(r[2] for r in mine)
    comms = comms if comms is not None else [{"label": "world", "instance": 0, "rank": rank}]
    out = {"format": "collkit-profile-rank", "version": 2, "run_id": run_id, "stage": "final", "rank": rank,
           "size": size, "host": "n1", "library_version": "MPI x", "pid": 100 + rank, "span_s": 1.0,
           "unclassified": {"calls": 0, "time_s": 0.0}, "classes": classes,
           "clock": clk or clock(rank, mono_zero_s=1000.0 + rank),
           "comms": comms, "trace": None,
           "sample": {"stride": stride, "max_calls": 4096, "calls": [r for r in rows if r[4] % stride == 0]}}
    if trace is not None:
        out["trace"] = {"max_calls": 100000, "dropped": trace, "calls": rows}
    return out


@pytest.fixture
def folder(tmp_path) -> Path:
    return tmp_path


def write(folder: Path, files: list[dict]) -> Path:
    for f in files:
        (folder / f"rank-{f['rank']}.json").write_text(json.dumps(f))
    return folder


def split_of(folder: Path) -> tuple[tuple[profile_file.CallClass, ...], profile_file.Clock | None]:
    found = rank_files.collect(folder)
    assert not found.problems, found.problems
    classes, _ = rank_files.merge(found.finals, 0)
    return arrivals.split_classes(found.finals, classes, found.size)


def imbalanced(rank: int, size: int, n: int, *, late_us: float = 100.0, work_us: float = 20.0,
               period_us: float = 1000.0) -> list[list]:
    """Rank r arrives at call k r x late_us after the call's first arrival, and
    every rank leaves work_us after the last arrival (times from its own zero,
    which is at 1000 + rank s, clock() and rank_file()'s default: to_reference
    must undo it)."""
    last = (size - 1) * late_us
    return [[0, 10 - rank + (k * period_us + rank * late_us) * US, (last - rank * late_us + work_us) * US, 0, k]
            for k in range(n)]


def test_matched_calls_split_by_the_rule(folder):
    """A call's waiting at rank r is the time until the last rank arrived,
    its working the rest; scaled to all the rank's calls by its time."""
    p, n = 3, 8
    files = [rank_file(r, p, [cls(comm_size=p)], imbalanced(r, p, n),
                       clk=clock(r, mono_zero_s=1000.0 + r), trace=0) for r in range(p)]
    (c,), clk = split_of(write(folder, files))
    assert clk == profile_file.Clock(methods=("reference",), error_bound_s=0.0, nodes=1)
    s = c.split
    assert c.split_reason == "" and s is not None
    assert (s.source, s.matched_calls, s.unmatched_calls, s.stride) == ("trace", n, 0, 1)
    # rank 0 waits 200 us and works 20 us a call: the busiest rank
    assert s.waiting_s == pytest.approx(n * 200 * US) and s.working_s == pytest.approx(n * 20 * US)
    assert s.working_call_median_s == pytest.approx(20 * US)
    assert [(x.rank, x.world_rank) for x in s.ranks] == [(0, 0), (1, 1), (2, 2)]
    for x in s.ranks:
        assert x.waiting_s == pytest.approx(n * (p - 1 - x.rank) * 100 * US, abs=1e-12)
        assert x.waiting_s + x.working_s == pytest.approx(n * ((p - 1 - x.rank) * 100 + 20) * US)
        assert x.last_share == (1.0 if x.rank == p - 1 else 0.0)
        assert x.skew_quantiles_s == pytest.approx([x.rank * 100 * US] * 11, abs=1e-12)
        # every rank left the call before 220 us after its first arrival; the next one's came 1000 us after
        assert x.gap_median_s == pytest.approx((1000 + x.rank * 100 - 220) * US)


def test_drifting_clock_of_another_node_is_undone(folder):
    """Rank 1 is on a node of its own whose clock runs 1 s ahead at MPI_Init
    and 1.001 s at MPI_Finalize: the arrivals come out as on rank 0's clock."""
    zero = 1995.0
    clk1 = clock(1, node=1, mono_zero_s=zero, offset=1.0, offset_final=1.001, error_s=1 * US)
    c = rank_files._clock(clk1, 1, 2)
    init, slope = zero - 0.5, 0.001 / 10.5      # offset 1 s at init_s, 1.001 s at final_s (zero + 10)
    assert c.offset(zero + 5.0) == pytest.approx(1.0 + slope * 5.5)
    # rank 0 arrives at reference time 2000 + k ms, rank 1 100 us later, both leave at +150 us
    rows0 = [[0, 1000.0 + k * 1e-3, 150 * US, 0, k] for k in range(4)]
    rows1 = []
    for k in range(4):
        ref = 2000.0 + k * 1e-3 + 100 * US
        local = (ref + 1.0 - slope * init) / (1 - slope)     # local - offset(local) = ref
        rows1.append([0, local - zero, 50 * US, 0, k])
    files = [rank_file(0, 2, [cls()], rows0), rank_file(1, 2, [cls()], rows1, clk=clk1)]
    (c,), clk = split_of(write(folder, files))
    assert clk.methods == ("exchange", "reference") and clk.nodes == 2 and clk.error_bound_s == 1 * US
    by_rank = {x.rank: x for x in c.split.ranks}
    assert by_rank[0].waiting_s == pytest.approx(4 * 100 * US, rel=1e-3)
    assert by_rank[1].waiting_s == pytest.approx(0, abs=1e-9) and by_rank[1].last_share == 1.0
    assert c.split.source == "sample"


def test_strides_differ_between_ranks(folder):
    """Rank 1's sample was thinned to every 4th call, rank 0's to every 2nd:
    the calls both kept (seq 0, 4, ...) are matched, the others are not
    counted as unmatched: they were never meant to be in both."""
    n = 16
    files = [rank_file(0, 2, [cls()], imbalanced(0, 2, n), stride=2),
             rank_file(1, 2, [cls()], imbalanced(1, 2, n), stride=4)]
    (c,), _ = split_of(write(folder, files))
    s = c.split
    assert (s.source, s.matched_calls, s.unmatched_calls, s.stride) == ("sample", n // 4, 0, 4)
    # a thinned sample's previous row is not the previous call: no gap
    assert all(x.gap_median_s is None for x in s.ranks)
    # rank 0's time in the class (all its calls, from its own count) in the matched calls' proportions
    assert s.waiting_s == pytest.approx(n * 100 * US) and s.working_s == pytest.approx(n * 20 * US)


def test_a_class_the_samples_missed_says_so(folder):
    """Every other call is a bcast, at odd numbers: a sample thinned to
    stride 2 holds none of them."""
    def rows(r):
        return [[k % 2, 10 - r + k * 1e-3 + r * 100 * US, (120 - r * 100) * US, 0, k] for k in range(8)]
    classes = [cls(), cls("bcast", root=0)]
    (allreduce, bcast), _ = split_of(write(folder, [rank_file(r, 2, classes, rows(r), stride=2) for r in range(2)]))
    assert allreduce.split.matched_calls == 4 and allreduce.split.stride == 2
    assert bcast.split is None and "multiple of up to 2" in bcast.split_reason


def test_a_trace_that_dropped_calls_gives_way_to_the_sample(folder):
    files = [rank_file(r, 2, [cls()], imbalanced(r, 2, 8), trace=3) for r in range(2)]
    (c,), _ = split_of(write(folder, files))
    assert c.split.source == "sample" and c.split.matched_calls == 8


def test_missing_rank_leaves_its_communicators_classes_unsplit(folder):
    """Rank 1 of 2 wrote no final file: world's class cannot be matched,
    rank 0's calls on MPI_COMM_SELF still can."""
    comms = [{"label": "world", "instance": 0, "rank": 0}, {"label": "self", "instance": 0, "rank": 0}]
    rows = imbalanced(0, 2, 4) + [[1, 0.5 + k * 1e-3, 10 * US, 1, k] for k in range(3)]
    write(folder, [rank_file(0, 2, [cls(), cls(comm="self", comm_size=1)], rows, comms=comms)])
    (folder / "rank-1.start.json").write_text(json.dumps(
        {"format": "collkit-profile-rank", "version": 2, "run_id": RUN, "stage": "start", "rank": 1, "size": 2,
         "host": "n1", "library_version": "MPI x", "pid": 2}))
    found = rank_files.collect(folder)
    classes, _ = rank_files.merge(found.finals, 0)
    out, _ = arrivals.split_classes(found.finals, classes, found.size)
    world = next(c for c in out if c.comm == "world")
    self_ = next(c for c in out if c.comm == "self")
    assert world.split is None and "rank 1 wrote no final file" in world.split_reason
    assert self_.split is not None and self_.split.matched_calls == 3 and self_.split.waiting_s == 0
    assert self_.split.ranks[0].last_share == 1.0 and _late_text(self_) == "-"


def _late_text(c) -> str:
    return profile._late(c.split)


@pytest.mark.parametrize("collective, root, waiting_us", [
    # arrivals: rank 0 at 0, rank 1 at 200 us, rank 2 at 300 us
    ("bcast", 1, [200, 0, 0]),      # a non-root waits for the root only; the root for nobody
    ("reduce", 0, [300, 0, 0]),     # the root waits for everyone; a non-root for nobody
    ("gatherv", 2, [0, 0, 0]),      # the root arrived last: nobody waits
    ("scan", None, [0, 0, 0]),      # each waits for the ranks below it: they came earlier
    ("allreduce", None, [300, 100, 0]),
])
def test_rooted_and_prefix_collectives(folder, collective, root, waiting_us):
    arrive = [0, 200, 300]
    leave = 400
    files = [rank_file(r, 3, [cls(collective, comm_size=3, root=root)],
                       [[0, 10 - r + k * 1e-3 + arrive[r] * US, (leave - arrive[r]) * US, 0, k] for k in range(5)])
             for r in range(3)]
    (c,), _ = split_of(write(folder, files))
    got = [x.waiting_s / 5 / US for x in c.split.ranks]
    assert got == pytest.approx(waiting_us, abs=1e-6)
    assert [x.last_share for x in c.split.ranks] == [0.0, 0.0, 1.0]
    assert _late_text(c) == "2 (100%)"


def test_classes_that_disagree_are_not_matched(folder):
    """Rank 1 counts seq 1 as a 16-byte call, rank 0 as an 8-byte one."""
    rows0 = imbalanced(0, 2, 4)
    rows1 = imbalanced(1, 2, 4)
    rows1[1][0] = 1
    files = [rank_file(0, 2, [cls()], rows0), rank_file(1, 2, [cls(), cls(nbytes=16)], rows1)]
    classes, _ = split_of(write(folder, files))
    eight = next(c for c in classes if c.bytes == 8)
    sixteen = next(c for c in classes if c.bytes == 16)
    assert eight.split.matched_calls == 3 and eight.split.unmatched_calls == 1
    assert sixteen.split is None and "different classes" in sixteen.split_reason


def test_subcommunicators_match_by_label_instance_and_comm_rank(folder):
    """Two communicators of one label (instances 0 and 1) are told apart; a
    rank's comm rank, not its world rank, places it in the call."""
    rows = {}
    for w in range(3):
        # c0x2 instance 0 is {0, 1}; instance 1 is {0, 2} where world rank 2 is comm rank 1
        comms = [{"label": "c0x2", "instance": 0, "rank": w}] if w < 2 else []
        comms += [{"label": "c0x2", "instance": 1, "rank": 0 if w == 0 else 1}] if w != 1 else []
        rows[w] = comms
    files = []
    for w, comms in rows.items():
        calls = []
        for i, comm in enumerate(comms):
            for k in range(4):
                late = 50 if comm["rank"] == 1 and comm["instance"] == 1 else 0
                calls.append([0, 10 - w + comm["instance"] + k * 1e-3 + late * US, (80 - late) * US, i, k])
        files.append(rank_file(w, 3, [cls(comm="c0x2", comm_size=2)], calls, comms=comms))
    (c,), _ = split_of(write(folder, files))
    assert c.split.matched_calls == 8 and c.split.unmatched_calls == 0
    assert sorted((x.rank, x.world_rank) for x in c.split.ranks) == [(0, 0), (1, 1), (1, 2)]
    by = {(x.rank, x.world_rank): x for x in c.split.ranks}
    assert by[(1, 2)].last_share == 1.0 and by[(1, 1)].last_share == 1.0  # instance 0: both at once
    assert by[(0, 0)].waiting_s == pytest.approx(4 * 50 * US)


def test_clocks_too_uncertain_leave_the_split_out(folder):
    """Rank 1's offset is known to 200 us, the calls last 120 us: which rank
    came first cannot be told."""
    files = [rank_file(0, 2, [cls()], imbalanced(0, 2, 4)),
             rank_file(1, 2, [cls()], imbalanced(1, 2, 4),
                       clk=clock(1, node=1, mono_zero_s=1001.0, error_s=200 * US))]
    (c,), clk = split_of(write(folder, files))
    assert clk.error_bound_s == 200 * US
    assert c.split is None and "clocks agree to 200 us" in c.split_reason


# ------------------------------------------------------------- bad rank files


def _good(rank=0) -> dict:
    return rank_file(rank, 2, [cls()], imbalanced(rank, 2, 4), trace=0)


@pytest.mark.parametrize("change, words", [
    (lambda f: f.update(run_id="00C0FFEE12345678"), "run_id"),
    (lambda f: f.update(run_id=None), "run_id"),
    (lambda f: f["clock"].update(method="guess"), "method"),
    (lambda f: f["clock"].update(method="exchange"), "method"),       # node 0 is the reference
    (lambda f: f["clock"].update(offset_init_s=float("nan")), "offset_init_s"),
    (lambda f: f["clock"].update(offset_init_s=0.5), "offset"),      # the reference has none
    (lambda f: f["clock"].update(node=1), "node"),
    (lambda f: f["clock"].update(final_s=None), "final_s"),
    (lambda f: f["clock"].update(mono_zero_s=-1.0), "mono_zero_s"),
    (lambda f: f["clock"].update(final_s=1.0), "before"),
    (lambda f: f.update(comms=[{"label": "world", "instance": 0, "rank": 2}]), "rank 2"),
    (lambda f: f.update(comms=[{"label": "c0x", "instance": 0, "rank": 0}]), "label"),
    (lambda f: f.update(comms=[{"label": "world", "instance": 0, "rank": 0}] * 2), "twice"),
    (lambda f: f["sample"].update(stride=3), "power of two"),
    (lambda f: f["sample"].update(stride=2), "multiple of the stride"),
    (lambda f: f["sample"].update(max_calls=2), "max_calls"),
    (lambda f: f["sample"]["calls"][0].__setitem__(3, 1), "[class index"),
    (lambda f: f["trace"]["calls"][0].__setitem__(4, -1), "[class index"),
    (lambda f: f["trace"]["calls"][0].__setitem__(2, float("inf")), "[class index"),
    (lambda f: f["trace"]["calls"][0].pop(), "[class index"),
    (lambda f: f["classes"][0].update(comm="self", comm_size=1), "names communicator world"),
    (lambda f: f.pop("sample"), "sample"),
    (lambda f: f.pop("clock"), "clock"),
])
def test_bad_version_2_fields_are_problems(folder, change, words):
    f = _good()
    change(f)
    write(folder, [f, _good(1)])
    found = rank_files.collect(folder)
    assert 0 not in found.finals and 1 in found.finals
    assert len(found.problems) == 1 and found.problems[0].startswith("rank-0.json:") and words in found.problems[0]


def test_files_of_two_runs(folder):
    write(folder, [_good(0), {**_good(1), "run_id": "0123456789abcdef"}])
    found = rank_files.collect(folder)
    assert found.run_ids == {RUN, "0123456789abcdef"} and "2 runs" in found.problems[0]
    with pytest.raises(UserError) as e:
        rank_files.require_one_run(found, folder)
    msg = str(e.value)
    assert str(folder) in msg and RUN in msg and "0123456789abcdef" in msg and "empty folder" in msg
    rank_files.require_one_run(rank_files.collect(write(folder, [_good(1)])), folder)   # one run: fine


FAKE_LAUNCHER = """#!/usr/bin/env python3
# A launcher that runs no program: it writes rank files of two runs where
# collkit told the ranks to (-x COLLKIT_PROFILE=DIR, Open MPI's way).
import json, sys
folder = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("COLLKIT_PROFILE="))
for rank, text in enumerate(sys.argv[-1].split("|")):
    open(f"{folder}/rank-{rank}.json", "w").write(text)
"""


@needs.openmpi
def test_collkit_profile_refuses_two_runs(folder, collkit):
    launcher = folder / "mpirun"
    launcher.write_text(FAKE_LAUNCHER)
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    files = "|".join(json.dumps(f) for f in [_good(0), {**_good(1), "run_id": "0123456789abcdef"}])
    line = one_line_error(collkit("profile", "--mpi", "openmpi", "--out", str(folder / "p.json"), "--",
                                  str(launcher), files), "2 runs", RUN, "0123456789abcdef", "empty folder")
    assert ".collkit-profile-" in line
    assert not (folder / "p.json").exists()


# ------------------------------------------------------------- version 1


V1 = {"format": "collkit-profile-rank", "version": 1, "stage": "final", "size": 2, "host": "n1",
      "library_version": "MPI x", "pid": 1, "span_s": 1.0, "unclassified": {"calls": 0, "time_s": 0.0},
      "classes": [cls(calls=2, time_s=0.5)],
      "trace": {"max_calls": 10, "dropped": 0, "calls": [[0, 0.1, 0.2], [0, 0.4, 0.3]]}}


def test_version_1_rank_files_load_without_a_split(folder):
    write(folder, [{**V1, "rank": 0}, {**V1, "rank": 1}])
    found = rank_files.collect(folder)
    assert not found.problems and found.run_ids == set()
    classes, trace = rank_files.merge(found.finals, 10)
    assert trace.ranks[0].calls == ((0, 0.1, 0.2), (0, 0.4, 0.3))
    (c,), clk = arrivals.split_classes(found.finals, classes, 2)
    assert clk is None and c.split is None and "version 1" in c.split_reason
    # a v1 row of 5 or a v2 row of 3 is refused
    write(folder, [{**V1, "rank": 0, "trace": {**V1["trace"], "calls": [[0, 0.1, 0.2, 0, 0]]}}])
    assert "[class index, start_s, duration_s]" in rank_files.collect(folder).problems[0]


def test_rank_files_of_two_versions_are_a_problem(folder):
    write(folder, [{**V1, "rank": 0}, _good(1)])
    assert any("different versions" in p for p in rank_files.collect(folder).problems)


def _profile_of(folder: Path) -> profile_file.Profile:
    found = rank_files.collect(folder)
    classes, tr = rank_files.merge(found.finals, 0)
    classes, clk = arrivals.split_classes(found.finals, classes, found.size)
    return profile_file.Profile(
        complete=True, exit_status=0, incomplete_reason="", created="2026-11-27T08:00:00Z", collkit_version="t",
        command=("mpirun", "./app"), cwd="/tmp", mpi_name="openmpi", mpi_family="openmpi",
        mpi_library_version="Open MPI v4.1.4", ranks=found.size, ranks_reported=len(found.finals), nodes=1,
        hosts=("n1",), wall_s=1.0, mpi_span_s=0.9, classes=classes, trace=tr,
        run_id=next(iter(found.run_ids), None), clock=clk)


def test_profile_file_version_2_round_trips(folder, tmp_path_factory):
    p = _profile_of(write(folder, [rank_file(r, 3, [cls(comm_size=3)], imbalanced(r, 3, 6)) for r in range(3)]))
    out = tmp_path_factory.mktemp("out") / "p.json"
    profile_file.dump(p, out)
    raw = json.loads(out.read_text())
    assert raw["version"] == 2 and raw["run_id"] == RUN
    assert raw["clock"] == {"methods": ["reference"], "error_bound_s": 0.0, "nodes": 1}
    split = raw["classes"][0]["split"]
    assert set(split) == {"source", "matched_calls", "unmatched_calls", "stride", "waiting_s", "working_s",
                          "working_call_median_s", "ranks"}
    assert set(split["ranks"][0]) == {"rank", "world_rank", "waiting_s", "working_s", "last_share",
                                      "gap_median_s", "skew_quantiles_s"}
    again = profile_file.load(out, need_split=True)
    assert again.classes == p.classes and again.clock == p.clock and again.run_id == RUN


@pytest.mark.parametrize("change, words", [
    (lambda s: s.update(source="guess"), "source"),
    (lambda s: s.update(stride=6), "power of two"),
    (lambda s: s.update(matched_calls=0), "matched_calls"),
    (lambda s: s.update(waiting_s=-1.0), "waiting_s"),
    (lambda s: s["ranks"][0].update(last_share=1.5), "last_share"),
    (lambda s: s["ranks"][0].update(rank=3), "rank"),
    (lambda s: s["ranks"][0].update(world_rank=3), "world_rank"),
    (lambda s: s["ranks"][0].update(skew_quantiles_s=[0.0] * 10), "skew_quantiles_s"),
    (lambda s: s["ranks"][0].update(skew_quantiles_s=[1.0] + [0.0] * 10), "increasing"),
    (lambda s: s["ranks"][0].update(gap_median_s=float("nan")), "gap_median_s"),
])
def test_damaged_split_is_refused_in_one_line(folder, tmp_path_factory, change, words):
    p = _profile_of(write(folder, [rank_file(r, 3, [cls(comm_size=3)], imbalanced(r, 3, 6)) for r in range(3)]))
    raw = p.to_json()
    raw = json.loads(json.dumps(raw))
    change(raw["classes"][0]["split"])
    out = tmp_path_factory.mktemp("out") / "p.json"
    out.write_text(json.dumps(raw))
    with pytest.raises(UserError) as e:
        profile_file.load(out)
    assert str(out) in str(e.value) and words in str(e.value) and "\n" not in str(e.value)


def test_version_1_profile_loads_with_split_null(tmp_path):
    p = _profile_of(write(tmp_path, [{**V1, "rank": 0}, {**V1, "rank": 1}]))
    raw = json.loads(json.dumps(p.to_json()))
    raw["version"] = 1
    for key in ("run_id", "clock"):
        raw.pop(key)
    for c in raw["classes"]:
        c.pop("split"), c.pop("split_reason")
    out = tmp_path / "v1.json"
    out.write_text(json.dumps(raw))
    old = profile_file.load(out)
    assert old.clock is None and old.run_id is None and all(c.split is None for c in old.classes)
    with pytest.raises(UserError) as e:
        profile_file.load(out, need_split=True)
    assert str(out) in str(e.value) and "no clock data" in str(e.value) and "collkit profile" in str(e.value)
    with pytest.raises(UserError):
        profile_file.require_split(old)
    assert "no class is split into waiting and working" in profile.table(old, width=100)


def test_table_shows_waiting_working_and_late_ranks(folder):
    p = _profile_of(write(folder, [rank_file(r, 4, [cls(comm_size=4)], imbalanced(r, 4, 10, work_us=30))
                                   for r in range(4)]))
    text = profile.table(p, width=100)
    assert all(len(ln) <= 100 for ln in text.splitlines())
    row = next(ln.split() for ln in text.splitlines()[text.splitlines().index(
        next(ln for ln in text.splitlines() if ln.startswith("waiting and working"))):]
        if ln.startswith("allreduce"))
    # rank 0 is the busiest: 300 us waiting and 30 us working a call, 10 calls; rank 3 always last
    assert row[:8] == ["allreduce", "8", "B", "1/1", "10", "0.003000", "0.000300", "90.9"]
    assert " ".join(row[8:]) == "3 (100%)"
    assert "in total 0.003000 s waiting and 0.000300 s working" in text
    assert "reference on 1 node, error bound 0 us" in text


# ------------------------------------------------------------- end to end


IMBALANCE = Path(__file__).parent / "fixtures" / "imbalance.c"
CALLS, STEP_US = 2000, 100
SKEW_MEDIAN = 5     # skew_quantiles_s[5]: the 50 % quantile


@pytest.fixture(scope="module")
def imbalance(tmp_path_factory):
    """imbalance.c built with each MPI's own mpicc, once."""
    return mpi_programs.builder(tmp_path_factory, IMBALANCE)


def _own_us(stdout: str, what: str) -> dict[int, float]:
    """The program's own measure per rank (its clock, one node): `waiting_us`, each
    rank's mean waiting, or `median_skew_us`, its median arrival after the call's first."""
    got = {}
    for line in stdout.splitlines():
        if line.startswith("imbalance: rank "):
            _, _, rank, key, value = line.split()
            if key == what:
                got[int(rank)] = float(value)
    return got


def _own_waiting_us(stdout: str) -> dict[int, float]:
    return _own_us(stdout, "waiting_us")


def _profile_imbalance(collkit, mpi: str, program: Path, ranks: int, trace: bool, out: Path):
    from collkit.mpis import known
    install = known.find_install(mpi)
    r = collkit("profile", "--mpi", mpi, "--out", str(out), *(["--trace"] if trace else []), "--",
                str(install.mpirun), "-n", str(ranks), *install.flags, str(program), str(CALLS), str(STEP_US),
                timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r, profile_file.load(out, need_complete=True, need_split=True)


def _check_imbalance(r, p: profile_file.Profile, ranks: int, trace: bool, nominal: bool = True) -> None:
    """Every call matched; each rank's mean waiting within 10 % of what the
    program measured on its own clock (10 % of a step for a rank that hardly
    waits); and with nominal the issue's bound on the typical call (the median
    arrival skews), rank r waits what the program's own clock says its typical call
    waited within 10 % (about (p - 1 - r) x STEP_US; a busy machine, or MPICH's
    throttled progress under --trace, stretched it to 175 us once: the profile must
    report the imbalance there was, not the one the schedule asked for). The mean itself is
    the program's, not the profile's: on a machine busy with other work (two
    cores, other tests beside this one) a rank descheduled for milliseconds
    now and then adds that to the others' waiting (measured here with other
    tests running: rank 0 of 2 waited 109 to 345 us a call on average while
    its typical call waited 100)."""
    c = next(c for c in p.classes if c.collective == "allreduce")
    assert (c.comm, c.bytes, c.calls) == ("world", 8, CALLS)
    s = c.split
    assert s is not None, c.split_reason
    assert (s.source, s.matched_calls, s.unmatched_calls, s.stride) == ("trace" if trace else "sample", CALLS, 0, 1)
    assert p.clock is not None and p.clock.nodes == 1 and p.run_id
    own = _own_waiting_us(r.stdout)
    assert sorted(own) == list(range(ranks)), r.stdout
    own_skew = _own_us(r.stdout, "median_skew_us")
    assert sorted(own_skew) == list(range(ranks)), r.stdout
    median_skew_us = {x.rank: x.skew_quantiles_s[SKEW_MEDIAN] * 1e6 for x in s.ranks}
    seen = [f"rank {x.rank}: waiting {x.waiting_s / CALLS * 1e6:.1f} us a call (the program's clock: "
            f"{own[x.rank]:.1f}), median skew {median_skew_us[x.rank]:.1f} us (the program's: "
            f"{own_skew[x.rank]:.1f}), working "
            f"{x.working_s / CALLS * 1e6:.1f} us" for x in s.ranks]
    # the second half (working within 25 % of a campaign's) is the loop's test: recorded here
    print(f"{p.mpi_name} {ranks} ranks {'trace' if trace else 'sample'}: working_call_median "
          f"{s.working_call_median_s * 1e6:.2f} us; " + "; ".join(seen))
    assert [x.rank for x in s.ranks] == list(range(ranks))
    for x in s.ranks:
        waiting_us = x.waiting_s / CALLS * 1e6
        assert abs(waiting_us - own[x.rank]) <= 0.1 * max(own[x.rank], STEP_US), seen
        if not nominal:
            continue
        want = own_skew[ranks - 1] - own_skew[x.rank]
        typical = median_skew_us[ranks - 1] - median_skew_us[x.rank]
        assert abs(typical - want) <= 0.1 * max(want, STEP_US), seen
    late = max(s.ranks, key=lambda x: x.last_share)
    assert not nominal or (late.rank == ranks - 1 and late.last_share >= 0.5), seen
    assert f"{late.rank} (" in profile.table(p, width=100)


def _campaign_working_us(collkit, profile_path: Path, tmp_path: Path, conditions: str) -> float:
    """The median working time (us) of the library's default on the
    profile's allreduce class, measured by a campaign that `spec
    --from-profile` writes under the given conditions."""
    spec_path = tmp_path / f"{conditions}.toml"
    r = collkit("spec", "--from-profile", str(profile_path), "--min-share", "50", "--conditions", conditions,
                "--launches", "1", "--out", str(spec_path))
    assert r.returncode == 0, r.stdout + r.stderr
    text = spec_path.read_text()
    # the library's default only: the other candidates are not what this test compares
    lines = text.splitlines()
    assert any(ln.startswith('mpi = ["default", "all"]') for ln in lines), text
    lines = ['mpi = ["default"]' if ln.startswith('mpi = ["default", "all"]') else ln
             for ln in lines if not ln.startswith("collkit = ")]
    spec_path.write_text("\n".join(lines) + "\n")
    out = tmp_path / f"{conditions}-out"
    r = collkit("run", str(spec_path), "--out", str(out), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    # an unstable first measurement is measured again in another launch: the point's record is its last
    rec = [json.loads(ln) for ln in (out / "records.jsonl").read_text().splitlines()
           if json.loads(ln)["collective"] == "allreduce"][-1]
    assert rec["status"] == "ok" and rec["conditions"]["mode"] == conditions, rec
    return rec["working"]["median_us"] if conditions == "program" else rec["stats_us"]["median"]


def _working_pair(collkit, p: profile_file.Profile, profile_path: Path, tmp_path: Path) -> tuple[bool, str]:
    """The issue's second bound: the profile's typical working time of the
    allreduce within 25 % of a campaign's. Of the campaign under the
    program's conditions, not of the synchronised one: on this machine a call
    that comes 50 us or more after a rank's previous one costs 1.5-2 us more
    than one back to back, under both MPIs, by the program's own clock
    (docs/experiments/applications.md, "The imbalance program"), and the late
    rank here computes 100 us or more between its calls. The synchronised
    median is printed beside it. (passed, what was seen)."""
    c = next(c for c in p.classes if c.collective == "allreduce")
    profiled_us = c.split.working_call_median_s * 1e6
    program_us = _campaign_working_us(collkit, profile_path, tmp_path, "program")
    synchronised_us = _campaign_working_us(collkit, profile_path, tmp_path, "synchronised")
    seen = (f"{p.mpi_name}: working a call {profiled_us:.2f} us profiled, campaign {program_us:.2f} us under the "
            f"program's conditions, {synchronised_us:.2f} us synchronised")
    print(seen)
    return abs(profiled_us - program_us) <= 0.25 * program_us, seen


def _check_working(collkit, mpi, program, ranks, p, tmp_path, k: int, n: int) -> None:
    """k of n profile-and-campaign pairs within the bound (k_of_n.py): the
    first pair uses the profile `p` already made, each later one a new
    profile. The two of a pair are measured seconds apart, so a pair can
    miss on a busy machine; the callers state the miss rate seen and what
    their k of n costs in false failures."""
    def pair(i: int) -> tuple[bool, str]:
        nonlocal p
        here = tmp_path / f"pair{i}"
        here.mkdir()
        if i:
            _, p = _profile_imbalance(collkit, mpi, program, ranks, False, here / "p.json")
            return _working_pair(collkit, p, here / "p.json", here)
        return _working_pair(collkit, p, tmp_path / "p.json", here)
    k_of_n(pair, k, n)


@pytest.mark.parametrize("trace", [False, True], ids=["sample", "trace"])
@pytest.mark.parametrize("mpi", needs.each_mpi())
def test_imbalanced_program_at_2_ranks(mpi, trace, imbalance, collkit, tmp_path):
    r, p = _profile_imbalance(collkit, mpi, imbalance(mpi), 2, trace, tmp_path / "p.json")
    _check_imbalance(r, p, 2, trace)


@pytest.mark.alone
@pytest.mark.full
@pytest.mark.parametrize("mpi", needs.each_mpi())
def test_imbalanced_program_working_against_the_campaign_at_2_ranks(mpi, imbalance, collkit, tmp_path):
    """In `make test-full` only: under `make test` two test files share the 2
    cores and MPICH's campaign measured 11.3 us against 2.0 us profiled in
    three pairs running (a machine this busy is no place for the bound).
    Alone, a pair missed once in six runs (2.67 us profiled against 5.09 us in
    the campaign): 2 of 4 pairs fail a right program with probability 21/1296
    (1.6 %, k_of_n.false_failure_rate(2, 4, 1/6))."""
    _, p = _profile_imbalance(collkit, mpi, imbalance(mpi), 2, False, tmp_path / "p.json")
    _check_working(collkit, mpi, imbalance(mpi), 2, p, tmp_path, k=2, n=4)


@pytest.mark.alone
@pytest.mark.full
@pytest.mark.parametrize("trace", [False, True], ids=["sample", "trace"])
@pytest.mark.parametrize("mpi", needs.each_mpi())
def test_imbalanced_program_at_4_ranks(mpi, trace, imbalance, collkit, tmp_path):
    """In `make test-full` only: 4 ranks on a 2-core machine are
    oversubscribed, and the bounds did not hold in every run. Under Open MPI
    2 runs of 22 (other tests running beside them) had one rank's arrivals
    23-36 us off the program's own clock: the preload maps its counter onto
    CLOCK_MONOTONIC from one pair of readings at the trace's zero, and a rank
    descheduled between them maps every time it records off by up to half
    that gap; 1 run had the program's typical imbalance 36 us off. MPICH's
    oversubscribed ranks (its progress throttle) take 50-900 us a call, past
    the program's schedule, so the program makes another imbalance than it
    means to: only the profile against the program's own clock is checked."""
    r, p = _profile_imbalance(collkit, mpi, imbalance(mpi), 4, trace, tmp_path / "p.json")
    _check_imbalance(r, p, 4, trace, nominal=mpi == "openmpi")
    if trace or mpi != "openmpi":
        return
    # Oversubscribed, the program's working at 4 ranks is 17-24 us a call (against
    # 2-3 us at 2 ranks: descheduled ranks) and a pair was within 25 % in 3 of 4 runs:
    # with a miss in 4, 2 of 5 pairs fail a right program with probability 16/1024 (1.6 %).
    _check_working(collkit, mpi, imbalance(mpi), 4, p, tmp_path, k=2, n=5)


@needs.openmpi
def test_measured_offsets_still_split_alike(imbalance):
    """COLLKIT_PROFILE_CLOCK=exchange: rank 1 measures its offset to rank 0 by
    ping-pong as if on another node; on rank 0's clock through that offset,
    the split still agrees with the program's own clock."""
    import subprocess
    from collkit.mpis import known
    install = known.find_install("openmpi")
    run = profile.run_profiled("openmpi", [str(install.mpirun), "-n", "2", *install.flags, str(imbalance("openmpi")),
                                           str(CALLS), str(STEP_US)],
                               extra_env={"COLLKIT_PROFILE_CLOCK": "exchange"}, stdout=subprocess.PIPE)
    p = run.profile
    assert p.complete and p.clock.methods == ("exchange", "reference") and 0 < p.clock.error_bound_s < 1e-4
    _check_imbalance(run, p, 2, False)
