"""`collkit replay` (issue #30): a synthetic `--trace` profile replayed on a
small simulated machine through collkit-replay under smpirun."""

import json
from pathlib import Path

import pytest

import needs
from cli_runner import in_process, one_line_error
from collkit.program import profile_file, replay_input
from collkit.program.profile_file import CallClass, Profile, RankTrace, Trace

REPO = Path(__file__).resolve().parents[2]
RANKS = 4
PLATFORM = "sim:fattree-2to1"


def cls(collective, nbytes, calls, *, dtype=None, datatype="MPI_BYTE", op=None, root=None, comm="world",
        size=RANKS, time=1e-3):
    return CallClass(collective=collective, comm=comm, comm_size=size, bytes=nbytes, datatype=datatype,
                     dtype=dtype, op=op, root=root, in_place=False, calls=calls, time_max_s=time,
                     time_sum_s=time * size, ranks=size)


CLASSES = (
    cls("allreduce", 8, 2, dtype="double", datatype="MPI_DOUBLE", op="sum"),      # 0
    cls("bcast", 64 << 10, 1, root=1),                                           # 1
    cls("alltoall", 4 << 10, 2),                                                 # 2
    cls("alltoallv", 100, 1, time=5e-3),                                         # 3: left out
    cls("allreduce", 4, 1, dtype="int32", datatype="MPI_INT", op="sum", comm="c2x2", size=2),   # 4
)
# every rank: allreduce, bcast, allreduce, alltoallv, [c2x2 allreduce on ranks 2, 3], alltoall, alltoall
SEQUENCE = (0, 1, 0, 3, 4, 2, 2)


def profile(path: Path, gap: float = 1e-3, drop_comm: bool = False, trace: bool = True,
            mpi: str = "openmpi") -> Path:
    ranks = []
    for r in range(RANKS):
        t, calls = 0.0, []
        for k in SEQUENCE:
            t += gap
            # ranks 0 and 1 compute while 2 and 3 call on c2x2: every rank stays in step
            if not (k == 4 and (r < 2 or drop_comm and r == 3)):
                calls.append((k, t, 2e-5))
            t += 2e-5
        ranks.append(RankTrace(rank=r, dropped=0, calls=tuple(calls)))
    prof = Profile(complete=True, exit_status=0, incomplete_reason="", created="2026-11-27T08:00:00Z",
                   collkit_version="test", command=("mpirun", "-n", "4", "./app"), cwd="/tmp",
                   mpi_name=mpi, mpi_family=mpi,
                   mpi_library_version="Open MPI v4.1.4" if mpi == "openmpi" else "MPICH Version: 5.0.2",
                   ranks=RANKS, ranks_reported=RANKS, nodes=1, hosts=("here",), wall_s=1.0, mpi_span_s=0.9,
                   classes=CLASSES, trace=Trace(max_calls_per_rank=100, ranks=tuple(ranks)) if trace else None)
    profile_file.dump(prof, path)
    return path


def replay(capsys, *args):
    """`collkit replay ARGS` in this process (smpirun still runs as a program), as JSON."""
    res = in_process(capsys, "replay", *args, "--platform", PLATFORM, "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    r = json.loads(res.stdout)
    return r, {(c["class"]["collective"], c["class"]["comm"], c["class"]["bytes"]): c for c in r["classes"]}


@needs.simgrid_programs
def test_replay_reports_every_class_with_its_calls_and_is_deterministic(capsys, tmp_path):
    prof = profile(tmp_path / "p.json")
    r, by = replay(capsys, prof)
    assert set(by) == {("allreduce", "world", 8), ("bcast", "world", 65536), ("alltoall", "world", 4096),
                       ("allreduce", "c2x2", 4)}
    assert [by[k]["calls"] for k in sorted(by)] == [1, 2, 2, 1]  # sorted: c2x2 allreduce first
    assert all(c["runs"] == "library" and c["simulated_s"] > 0 for c in r["classes"])
    assert [x["reason"] for x in r["left_out"]] == ["MPI_Alltoallv is not replayed (none of the eight collectives)"]
    assert r["simulated_span_s"] > r["simulated_total_s"]
    again, _ = replay(capsys, prof)
    assert again["classes"] == r["classes"] and again["simulated_span_s"] == r["simulated_span_s"]


@needs.simgrid_programs
def test_the_table_shows_what_the_json_says(capsys, tmp_path):
    prof = profile(tmp_path / "p.json")
    r, _ = replay(capsys, prof)
    res = in_process(capsys, "replay", prof, "--platform", PLATFORM)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.startswith(f"replay of {prof} ({r['ranks']} ranks) on {PLATFORM} ({r['machine']}), rules: none")
    rows = [ln.split() for ln in out.splitlines() if ln.split() and ln.split()[0] in ("allreduce", "bcast",
                                                                                    "alltoall")]
    assert [(row[0], row[1], row[-1]) for row in rows] == [
        (c["class"]["collective"], c["class"]["comm"], f"{c['simulated_s']:.6g}") for c in r["classes"]]
    assert (f"measured {r['measured_total_s']:.6g} s, simulated {r['simulated_total_s']:.6g} s" in out
            and f"simulated {r['simulated_span_s']:.6g} s" in out)
    assert "alltoallv" in out and r["left_out"][0]["reason"] in out and "assumes: " in out


@needs.simgrid_programs
def test_gaps_change_the_span_not_the_class_times(capsys, tmp_path):
    short, by_short = replay(capsys, profile(tmp_path / "short.json", gap=1e-3))
    long, by_long = replay(capsys, profile(tmp_path / "long.json", gap=1e-2))
    for k in by_short:
        assert by_long[k]["simulated_s"] == pytest.approx(by_short[k]["simulated_s"], rel=1e-9)
    # seven gaps on the busiest rank, 9 ms longer each (the left-out call's gap too)
    assert long["simulated_span_s"] - short["simulated_span_s"] == pytest.approx(7 * 9e-3, rel=1e-6)


@needs.simgrid_programs
def test_rules_change_only_the_class_they_give_to_libcollkit(capsys, tmp_path):
    prof = profile(tmp_path / "p.json")
    rules = tmp_path / "app.rules"
    rules.write_text("alltoall * 4096 bruck\nallreduce * * library\n")
    _, base = replay(capsys, prof)
    _, ruled = replay(capsys, prof, "--rules", rules)
    a2a = ("alltoall", "world", 4096)
    assert ruled[a2a]["runs"] == "bruck" and base[a2a]["runs"] == "library"
    assert ruled[a2a]["simulated_s"] != pytest.approx(base[a2a]["simulated_s"], rel=1e-6)
    for k in base:                         # the alltoalls come last: nothing else may move
        if k != a2a:
            assert ruled[k]["simulated_s"] == base[k]["simulated_s"] and ruled[k]["runs"] == "library"


@needs.simgrid_programs
@needs.simgrid_programs
def test_a_library_algorithm_replays_as_its_twin_does(capsys, tmp_path):
    """Issue #50: MPICH's binomial bcast, chosen per call by the autotuner
    (library:binomial), replays exactly as libcollkit's binomial_halving, the
    same message schedule: the same simulated time (the simulation is deterministic)."""
    prof = profile(tmp_path / "p.json", mpi="mpich")
    learned, twin = tmp_path / "learned.rules", tmp_path / "twin.rules"
    learned.write_text("mpi_library = MPICH Version: 5.0.2\nbcast * * library:binomial\n")
    twin.write_text("bcast * * binomial_halving\n")
    _, base = replay(capsys, prof)
    _, by_learned = replay(capsys, prof, "--rules", learned)
    _, by_twin = replay(capsys, prof, "--rules", twin)
    k = ("bcast", "world", 65536)
    assert base[k]["runs"] == "library"
    assert by_learned[k]["runs"] == by_twin[k]["runs"] == "binomial_halving"
    assert by_learned[k]["simulated_s"] == by_twin[k]["simulated_s"]


def test_a_communicator_the_trace_cannot_rebuild_is_left_out(capsys, tmp_path):
    r, by = replay(capsys, profile(tmp_path / "p.json", drop_comm=True))
    assert ("allreduce", "c2x2", 4) not in by
    assert any("c2x2" in x["reason"] for x in r["left_out"])


def test_a_preload_fallback_is_honoured(tmp_path):
    from collkit.program.rules_choice import choose, load_rules
    rules = tmp_path / "r.rules"
    rules.write_text("allreduce * * bine_latency\n")
    c = CLASSES[0]  # double sum: bine_latency's results may differ across ranks
    assert choose(load_rules(rules), c).fallback == "fp-rank-variant"
    rules.write_text("allow_fp_rank_variant = true\nallreduce * * bine_latency\n")
    assert choose(load_rules(rules), c).runs == "bine_latency"


def test_bad_input_is_one_line_exit_2(collkit, capsys, tmp_path):
    no_trace = profile(tmp_path / "nt.json", trace=False)
    good = profile(tmp_path / "p.json")
    bad_rules = tmp_path / "bad.rules"
    bad_rules.write_text("allreduce * * no_such_algorithm\n")
    small = tmp_path / "small.toml"
    small.write_text('[simgrid]\nkind = "fattree"\ndown = [2]\nup = [1]\nlink_bw = "25GBps"\nlink_lat = "1us"\n')
    cases = [
        ([no_trace, "--platform", PLATFORM], "collkit profile --trace"),
        ([good, "--platform", REPO / "examples" / "platform-slurm.toml"], "not a simulated machine"),
        ([good, "--platform", "nosuch.toml"], "replay runs on a simulated machine"),
        ([good, "--platform", PLATFORM, "--rules", bad_rules], "unknown allreduce algorithm"),
        ([good, "--platform", small], "do not fit"),
        ([tmp_path / "missing.json", "--platform", PLATFORM], "cannot read the profile"),
    ]
    for args, words in cases:
        one_line_error(in_process(capsys, "replay", *args), words)
    # and as a user runs it
    one_line_error(collkit("replay", no_trace, "--platform", PLATFORM), "collkit profile --trace")


def test_a_truncated_trace_replays_what_every_member_holds(tmp_path):
    from collkit.program import replay_input
    prof = profile_file.load(profile(tmp_path / "p.json"))
    world = [k for k, c in enumerate(prof.classes) if c.comm == "world" and c.collective != "alltoallv"]
    ranks = list(prof.trace.ranks)
    cut = ranks[3].calls[:2]                         # rank 3 recorded only its first two calls
    ranks[3] = RankTrace(rank=3, dropped=len(ranks[3].calls) - 2, calls=cut)
    from dataclasses import replace
    p = replay_input.plan(replace(prof, trace=Trace(max_calls_per_rank=2, ranks=tuple(ranks))), None)
    assert all(len(calls) == 2 for calls in p.calls)   # allreduce, bcast on every rank: the common prefix
    assert {p.classes[k].index for calls in p.calls for k, _ in calls} <= set(world)
    assert any("truncated" in n for n in p.notes) and any("world: 2 calls" in n for n in p.notes)
    assert any("c2x2" in why for _, why in p.left_out)  # rank 3's c2x2 call is gone: not rebuilt


def test_dump_keeps_each_traced_call_with_its_class(tmp_path):
    # dump writes classes largest first: the trace's indices must follow them
    prof = profile_file.load(profile(tmp_path / "p.json"))
    assert prof.classes[0].collective == "alltoallv"          # 5 ms: written first
    names = [prof.classes[k].collective for k, _, _ in prof.trace.ranks[2].calls]
    assert names == ["allreduce", "bcast", "allreduce", "alltoallv", "allreduce", "alltoall", "alltoall"]


def test_a_trace_without_every_rank_is_refused(tmp_path):
    from dataclasses import replace

    from collkit.common.errors import UserError
    from collkit.program import replay_input
    prof = profile_file.load(profile(tmp_path / "p.json"))
    partial = replace(prof, trace=Trace(max_calls_per_rank=100, ranks=prof.trace.ranks[:3]))
    with pytest.raises(UserError, match="3 of the 4 ranks"):
        replay_input.plan(partial, None)


def test_a_zero_byte_call_is_left_out_not_replayed():
    # hpcc makes 0-byte bcasts; SMPI 3.32's pipelined bcast (Open MPI selection)
    # divided by zero on them and killed the whole replay (SIGFPE).
    zero = cls("bcast", 0, 3, root=0)
    prof = Profile(complete=True, exit_status=0, incomplete_reason="", created="2026-11-27T08:00:00Z",
                   collkit_version="test", command=("mpirun",), cwd="/tmp", mpi_name="openmpi",
                   mpi_family="openmpi", mpi_library_version="x", ranks=RANKS, ranks_reported=RANKS, nodes=1,
                   hosts=("here",), wall_s=1.0, mpi_span_s=0.9, classes=(CLASSES[0], zero),
                   trace=Trace(max_calls_per_rank=10, ranks=tuple(
                       RankTrace(rank=r, dropped=0, calls=((0, 0.001, 1e-5), (1, 0.002, 1e-5)))
                       for r in range(RANKS))))
    p = replay_input.plan(prof, None)
    assert [c.index for c in p.classes] == [0]
    assert any("0 bytes" in why for _, why in p.left_out)


@pytest.mark.parametrize("header, rule, runs, words", [
    # MPICH's binomial bcast is libcollkit's binomial_halving (backends/mpich.py, Name parity)
    ("mpi_library = MPICH Version: 5.0.2\n", "library:binomial", "binomial_halving",
     "library:binomial as binomial_halving"),
    # MPICH's pipelined tree has no libcollkit twin: SMPI's own collective, said so
    ("mpi_library = MPICH Version: 5.0.2\n", "library:pipelined_tree", "library", "SMPI"),
    # without the autotuner's mpi_library line the library, and so the names, are unknown
    ("", "library:binomial", "library", "SMPI"),
])
def test_a_library_algorithm_rule_is_replayed_as_its_libcollkit_twin(tmp_path, header, rule, runs, words):
    """Issue #50: library:NAME (the library's own algorithm, switched per call) is
    replayed as libcollkit's algorithm of the same message schedule where there is
    one; else the plan says SMPI's own collective runs (SMPI selects per run)."""
    from collkit.program.rules_choice import load_rules
    rules = tmp_path / "r.rules"
    rules.write_text(f"{header}bcast * * {rule}\n")
    plan = replay_input.plan(profile_file.load(profile(tmp_path / "p.json")), load_rules(rules))
    bcast = [c for c in plan.classes if c.choice.rule == rule]
    assert len(bcast) == 1 and bcast[0].choice.runs == runs
    assert [n for n in plan.notes if rule in n and words in n], plan.notes
