"""collkit profile and the preload's profile mode (docs/application-loop.md,
"Profile"): exact call counts and class keys of a program with known calls at
4 ranks under both MPIs (world, a split communicator, MPI_COMM_SELF, a root of
2, in place, the collectives only timed), the trace's order, the same counts
while an algorithm is forced, a crashing program's incomplete profile, a
Fortran program's calls, and the bad inputs' one-line errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import mpi_programs
import needs
from cli_runner import one_line_error
from collkit.apply import preload
from collkit.common.errors import UserError
from collkit.mpis import known
from collkit.program import profile, profile_file, rank_files

REPO = Path(__file__).resolve().parents[2]
SOURCE = Path(__file__).parent / "fixtures" / "profile_calls.c"
RANKS = 4


MPIS = needs.each_mpi()     # the preload is a part of each MPI's build


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """profile_calls.c built with each MPI's own mpicc, once."""
    return mpi_programs.builder(tmp_path_factory, SOURCE)


def _launch(mpi: str, *program: str, ranks: int = RANKS) -> list[str]:
    install = known.find_install(mpi)
    return [str(install.mpirun), "-n", str(ranks), *install.flags, *program]


# (collective, comm, comm_size, bytes, dtype, op, root, in_place) -> (calls, ranks, datatype)
EXPECTED = {
    ("allreduce", "world", 4, 64, "double", "sum", None, False): (5, 4, "MPI_DOUBLE"),
    ("allreduce", "world", 4, 4, "int32", "sum", None, True): (3, 4, "MPI_INT"),
    ("bcast", "c0x2", 2, 16, None, None, 1, False): (2, 2, "MPI_INT"),
    ("bcast", "c1x2", 2, 16, None, None, 1, False): (2, 2, "MPI_INT"),
    ("reduce", "world", 4, 40, "int32", "max", 2, True): (2, 4, "MPI_INT"),
    ("barrier", "world", 4, 0, None, None, None, False): (4, 4, "none"),
    ("allgatherv", "world", 4, 48, None, None, None, False): (1, 4, "MPI_INT"),
    ("allreduce", "self", 1, 8, "double", "sum", None, False): (1, 4, "MPI_DOUBLE"),
    ("gather", "world", 4, 8, None, None, 2, False): (1, 4, "MPI_INT"),
}
# The program's calls in order, as indices into EXPECTED's keys.
ORDER = [0] * 5 + [1] * 3 + [2] * 2 + [4] * 2 + [5] * 4 + [6, 7, 8]


def _check_counts(p: profile_file.Profile) -> None:
    got = {c.key: (c.calls, c.ranks, c.datatype) for c in p.classes}
    assert got == EXPECTED
    for c in p.classes:
        assert 0 < c.time_max_s <= c.time_sum_s
    assert [c.time_max_s for c in p.classes] == sorted((c.time_max_s for c in p.classes), reverse=True)
    assert p.unclassified_calls == 0


@pytest.mark.parametrize("mpi", MPIS)
def test_counts_keys_and_trace(mpi, programs, tmp_path):
    r = profile.run_profiled(mpi, _launch(mpi, str(programs(mpi))), trace=100, stdout=subprocess.PIPE)
    p = r.profile
    assert r.exit_status == 0 and p.complete and p.incomplete_reason == ""
    assert "profile_calls: done" in r.stdout
    assert (p.ranks, p.ranks_reported, p.nodes, p.mpi_name) == (RANKS, RANKS, 1, mpi)
    assert p.mpi_library_version and len(p.hosts) == 1
    assert 0 < p.mpi_span_s and 0 < r.wall_s == p.wall_s
    _check_counts(p)
    keys = list(EXPECTED)
    assert p.trace is not None and p.trace.max_calls_per_rank == 100
    assert sorted(t.rank for t in p.trace.ranks) == list(range(RANKS))
    for t in p.trace.ranks:
        assert t.dropped == 0
        # Rank r's bcast is on its own half: {0,2} is c0x2, {1,3} c1x2.
        want = [keys[3] if (k == 2 and t.rank % 2) else keys[k] for k in ORDER]
        assert [p.classes[i].key for i, _, _ in t.calls] == want
        ends = [s + d for _, s, d in t.calls]
        assert all(t.calls[i + 1][1] >= ends[i] - 1e-6 for i in range(len(ends) - 1))
    # The file round-trips through the one reader.
    path = tmp_path / "p.json"
    profile_file.dump(p, path)
    again = profile_file.load(path, need_complete=True, need_trace=True)
    assert again.classes == p.classes and again.trace == p.trace


@pytest.mark.parametrize("mpi", MPIS)
def test_trace_bound_drops_later_calls(mpi, programs):
    p = profile.run_profiled(mpi, _launch(mpi, str(programs(mpi))), trace=7).profile
    assert p.complete
    for t in p.trace.ranks:
        assert len(t.calls) == 7 and t.dropped == len(ORDER) - 7


@pytest.mark.parametrize("mpi", MPIS)
def test_full_class_table_counts_unclassified(mpi, programs):
    p = profile.run_profiled(mpi, _launch(mpi, str(programs(mpi)), "many", ranks=2), trace=3000).profile
    assert p.complete and len(p.classes) == 2048
    assert sorted(c.bytes for c in p.classes) == list(range(1, 2049))
    assert p.unclassified_calls == 2100 - 2048 and p.unclassified_time_max_s > 0
    assert all(len(t.calls) == 2048 and t.dropped == 0 for t in p.trace.ranks)


@pytest.mark.parametrize("mpi", MPIS)
def test_same_counts_with_a_forced_algorithm_and_rules(mpi, programs, tmp_path):
    """trial profiles both variants: the profile must count the program's
    calls, not the algorithms' own messages or collectives."""
    cmd = _launch(mpi, str(programs(mpi)))
    _check_counts(profile.run_profiled(mpi, cmd, algorithms=(("allreduce", "ring"), ("bcast", "binomial_doubling")))
                  .profile)
    rules = tmp_path / "r.rules"
    rules.write_text("allreduce * * recursive_doubling\nreduce * * binomial_doubling\n")
    _check_counts(profile.run_profiled(mpi, cmd, rules=rules).profile)


@pytest.mark.parametrize("mpi", MPIS)
def test_crash_leaves_an_incomplete_profile(mpi, programs, collkit, tmp_path):
    out = tmp_path / "crash.json"
    r = collkit("profile", "--mpi", mpi, "--out", str(out), "--", *_launch(mpi, str(programs(mpi)), "crash"),
                timeout=300)
    assert r.returncode not in (0, 2), r.stderr
    assert "INCOMPLETE" in r.stderr
    p = profile_file.load(out)
    assert not p.complete and p.exit_status == r.returncode and p.exit_status != 0
    assert p.ranks == RANKS and p.ranks_reported < RANKS
    assert "wrote no profile at MPI_Finalize" in p.incomplete_reason
    with pytest.raises(UserError, match="incomplete"):
        profile_file.load(out, need_complete=True)


@needs.openmpi
def test_cli_writes_table_and_file(programs, collkit, tmp_path):
    out = tmp_path / "p.json"
    # --mpi left out: the launcher is Open MPI's.
    r = collkit("profile", "--out", str(out), "--trace", "--", *_launch("openmpi", str(programs("openmpi"))),
                timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # one section per communicator (after the program's own output), each titled
    header = next(i for i, ln in enumerate(lines) if ln.startswith("collective"))
    titles = [ln for ln in lines if ln.startswith("communicator ")]
    assert lines[header - 1] in titles and f"communicator world ({RANKS} ranks)" in titles
    assert {"communicator self (1 rank)", "communicator c0x2 (2 ranks)"} <= set(titles)
    names = {k[0] for k in EXPECTED}
    # the classes' table ends where the waiting-and-working table begins
    end = next(i for i, ln in enumerate(lines) if ln.startswith("waiting and working"))
    rows = [ln.split() for ln in lines[header:end] if ln.split() and ln.split()[0] in names]
    assert sorted(row[0] for row in rows) == sorted(k[0] for k in EXPECTED)
    assert "in collectives" in r.stdout and f"profile written to {out}" in r.stdout
    p = profile_file.load(out, need_complete=True, need_trace=True)
    assert p.mpi_name == "openmpi" and p.trace.max_calls_per_rank == profile.DEFAULT_TRACE


@pytest.mark.parametrize("mpi", [pytest.param(m, marks=needs.fortran(m)) for m in ("openmpi", "mpich")])
def test_fortran_calls_show(mpi):
    """Open MPI's mpif.h binding calls PMPI_* itself (the shim's Fortran
    symbols catch it); MPICH's calls the C names. Both must be profiled."""
    prog = REPO / "build" / mpi / "tests" / "preload" / "ck_fortran_mpif"
    p = profile.run_profiled(mpi, _launch(mpi, str(prog)), stdout=subprocess.PIPE).profile
    assert p.complete
    got = {(c.collective, c.bytes, c.in_place): (c.calls, c.dtype, c.datatype) for c in p.classes}
    assert got == {
        ("allreduce", 28, False): (1, "int32", "MPI_INTEGER"),
        ("allreduce", 28, True): (1, "int32", "MPI_INTEGER"),
        ("allreduce", 4, False): (1, "int32", "MPI_INTEGER"),
        ("bcast", 28, False): (1, None, "MPI_INTEGER"),
        ("alltoall", 8, False): (1, None, "MPI_INTEGER"),
        ("alltoall", 8, True): (1, None, "MPI_INTEGER"),
    }


# ---------------------------------------------------------------- bad input


@needs.openmpi
def test_launcher_not_there(collkit):
    one_line_error(collkit("profile", "--mpi", "openmpi", "--", "/nonexistent/mpirun", "-n", "2", "./x"),
                   "not found")
    one_line_error(collkit("profile", "--", "/nonexistent/mpirun", "./x"), "not found")


@pytest.mark.parametrize("mpi", MPIS)
def test_program_without_mpi_init(mpi, collkit):
    one_line_error(collkit("profile", "--mpi", mpi, "--", *_launch(mpi, "/bin/true", ranks=2)), "MPI_Init")


def test_trace_out_of_bounds(collkit):
    for n in ("0", str(profile.TRACE_MAX + 1)):
        one_line_error(collkit("profile", "--mpi", "openmpi", "--trace", n, "--", "mpirun", "x"), "--trace")


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("env, words", [
    ({"COLLKIT_PROFILE": "/nonexistent/dir"}, "COLLKIT_PROFILE: /nonexistent/dir is not a writable directory"),
    ({"COLLKIT_PROFILE": "/tmp", "COLLKIT_PROFILE_TRACE": "many"}, "COLLKIT_PROFILE_TRACE: 'many'"),
    ({"COLLKIT_PROFILE_TRACE": "10"}, "COLLKIT_PROFILE_TRACE is set without COLLKIT_PROFILE"),
])
def test_shim_refuses_bad_profile_settings(mpi, programs, env, words):
    """The shim alone (no collkit in front): one line, every rank stops."""
    install = known.find_install(mpi)
    full = {"LD_PRELOAD": str(known.find(mpi).part("preload")), **env}
    argv = [str(install.mpirun), "-n", "3", *install.flags, *preload.env_flags(install.family, full),
            str(programs(mpi))]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=install.environment())
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("collkit-preload:")]
    assert r.returncode != 0 and len(lines) == 1 and words in lines[0], r.stdout + r.stderr
    assert "profile_calls: done" not in r.stdout


def test_damaged_rank_file_makes_the_profile_incomplete(tmp_path):
    good = {"format": "collkit-profile-rank", "version": 1, "stage": "final", "rank": 0, "size": 2,
            "host": "n1", "library_version": "MPI x", "pid": 1, "span_s": 1.0,
            "unclassified": {"calls": 0, "time_s": 0.0},
            "classes": [{"collective": "allreduce", "comm": "world", "comm_size": 2, "bytes": 8,
                         "datatype": "MPI_DOUBLE", "dtype": "double", "op": "sum", "root": None,
                         "in_place": False, "calls": 3, "time_s": 0.5}], "trace": None}
    (tmp_path / "rank-0.json").write_text(json.dumps(good))
    (tmp_path / "rank-1.json").write_text(json.dumps({**good, "rank": 1})[:-20])  # cut short
    found = rank_files.collect(tmp_path)
    assert list(found.finals) == [0] and len(found.problems) == 1 and "rank-1.json" in found.problems[0]
    foreign = {**good, "rank": 1, "format": "something-else"}
    (tmp_path / "rank-1.json").write_text(json.dumps(foreign))
    assert "not a collkit-profile-rank" in rank_files.collect(tmp_path).problems[0]


def test_merge_max_and_sum_over_ranks(tmp_path):
    """calls and time_max are the busiest rank's, time_sum the sum; a rooted
    class whose root alone passed MPI_IN_PLACE is one class, in place."""
    def rank(r, calls, t, in_place):
        return rank_files.RankFile(rank=r, size=2, host="h", library_version="v", final=True, span_s=1.0, classes=[
            rank_files.RankClass(collective="reduce", comm="world", comm_size=2, bytes=8, datatype="MPI_INT",
                                 dtype="int32", op="sum", root=0, in_place=in_place, calls=calls, time_s=t)])
    classes, trace = rank_files.merge({0: rank(0, 3, 0.25, True), 1: rank(1, 3, 0.5, False)}, 0)
    assert trace is None and len(classes) == 1
    c = classes[0]
    assert (c.calls, c.time_max_s, c.time_sum_s, c.ranks, c.in_place) == (3, 0.5, 0.75, 2, True)


def test_rooted_classes_merge_over_in_place_the_others_do_not():
    """Rooted: the registry's (has_root) and gatherv, scatterv (timing-only, not in
    the registry); allgatherv and allreduce keep in place and out of place apart."""
    def cls(coll, root, in_place):
        return rank_files.RankClass(collective=coll, comm="world", comm_size=2, bytes=8, datatype="MPI_INT",
                                    dtype="int32" if coll == "allreduce" else None,
                                    op="sum" if coll == "allreduce" else None, root=root, in_place=in_place,
                                    calls=1, time_s=0.1)
    kinds = [("gatherv", 0), ("scatter", 1), ("allgatherv", None), ("allreduce", None)]
    finals = {r: rank_files.RankFile(rank=r, size=2, host="h", library_version="v", final=True, span_s=1.0,
                                     classes=[cls(c, root, r == 0) for c, root in kinds]) for r in (0, 1)}
    classes, _ = rank_files.merge(finals, 0)
    got = sorted((c.collective, c.in_place, c.ranks) for c in classes)
    assert got == [("allgatherv", False, 1), ("allgatherv", True, 1), ("allreduce", False, 1),
                   ("allreduce", True, 1), ("gatherv", True, 2), ("scatter", True, 2)]
    assert [c for c in ("bcast", "reduce", "gather", "scatter", "allgather", "reduce_scatter", "allreduce",
                        "alltoall", *profile_file.TIMING_ONLY) if profile_file.rooted(c)] == [
        "bcast", "reduce", "gather", "scatter"]


@needs.both_mpis
def test_mpi_from_the_launcher(tmp_path):
    names = {n: k for n, k in known.known().items() if k.build is not None and k.mpirun}
    for name, k in names.items():
        assert profile.resolve_mpi(None, [k.mpirun, "-n", "2", "./x"]) == name
        copy = Path(k.mpirun).parent / "mpiexec"
        if name == "mpich" and copy.is_file():
            assert profile.resolve_mpi(None, [str(copy), "./x"]) == "mpich"
    with pytest.raises(UserError, match="give --mpi NAME"):
        profile.resolve_mpi(None, ["/bin/sh", "./x"])
