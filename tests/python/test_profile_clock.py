"""The preload's rank files, version 2 (docs/application-loop.md, "Profile"),
read raw: the run's one id, the clock (one node: every rank the reference; with
COLLKIT_PROFILE_CLOCK=exchange every rank but 0 measures an offset that must
come out near 0), the communicators and each one's call numbering, the sample
(every call below 4,096; thinned to a stride's multiples past it), the trace's
rows and times, and the one-line refusal of a bad COLLKIT_PROFILE_CLOCK.
The program, fixtures/profile_sequence.c, runs at 2 and 3 ranks under both MPIs."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import mpi_programs
import needs
from collkit.apply import preload
from collkit.mpis import known

SOURCE = Path(__file__).parent / "fixtures" / "profile_sequence.c"
MPIS = needs.each_mpi()
MARGIN_S = 50e-6        # the clock's reading either side of an exchange (the bound)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """profile_sequence.c built with each MPI's own mpicc, once."""
    return mpi_programs.builder(tmp_path_factory, SOURCE)


def _run(mpi: str, exe: Path, ranks: int, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    install = known.find_install(mpi)
    full = {"LD_PRELOAD": str(known.find(mpi).part("preload")), **env}
    argv = [str(install.mpirun), "-n", str(ranks), *install.flags, *preload.env_flags(install.family, full),
            str(exe), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, env=install.environment())


def _profiled(mpi: str, exe: Path, ranks: int, out: Path, *args: str, **env: str) -> list[dict]:
    """The final rank files of one run, by rank, after checking the start files agree with them."""
    r = _run(mpi, exe, ranks, {"COLLKIT_PROFILE": str(out), **env}, *args)
    assert r.returncode == 0 and "profile_sequence: done" in r.stdout, r.stdout + r.stderr
    finals = [json.loads((out / f"rank-{k}.json").read_text()) for k in range(ranks)]
    starts = [json.loads((out / f"rank-{k}.start.json").read_text()) for k in range(ranks)]
    for f, s in zip(finals, starts):
        assert f["version"] == s["version"] == 2 and f["run_id"] == s["run_id"]
    return finals


# The calls of profile_sequence.c (no arguments) as [comm index, seq] in order,
# the same at every rank: world 0..2, its dup 0..3, world 3..4, the split 0..4,
# the split's dup 0, world 5.
CALLS = ([[0, s] for s in range(3)] + [[1, s] for s in range(4)] + [[0, 3], [0, 4]]
         + [[2, s] for s in range(5)] + [[3, 0], [0, 5]])
COLLECTIVES = ["allreduce"] * 3 + ["bcast"] * 4 + ["barrier"] * 2 + ["allreduce"] * 7


def _split_label(rank: int, ranks: int) -> str:
    """MPI_Comm_split by rank % 2: {0, 2} at 3 ranks; anything alone is "self"."""
    members = [r for r in range(ranks) if r % 2 == rank % 2]
    return "self" if len(members) == 1 else f"c{members[0]}x{len(members)}"


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("ranks", [2, 3])
def test_run_id_comms_seq_sample_and_trace(mpi, ranks, program, tmp_path):
    files = _profiled(mpi, program(mpi), ranks, tmp_path, COLLKIT_PROFILE_TRACE="100")
    ids = {f["run_id"] for f in files}
    assert len(ids) == 1 and re.fullmatch(r"[0-9a-f]{16}", ids.pop())
    for rank, f in enumerate(files):
        split = _split_label(rank, ranks)
        assert f["comms"] == [{"label": "world", "instance": 0, "rank": rank},
                              {"label": "world", "instance": 1, "rank": rank},
                              {"label": split, "instance": 0, "rank": 0 if split == "self" else rank // 2},
                              {"label": split, "instance": 1, "rank": 0 if split == "self" else rank // 2}]
        trace = f["trace"]
        assert trace["max_calls"] == 100 and trace["dropped"] == 0
        assert [row[3:] for row in trace["calls"]] == CALLS
        assert [f["classes"][row[0]]["collective"] for row in trace["calls"]] == COLLECTIVES
        # A row's class is on the row's communicator's label.
        assert all(f["classes"][row[0]]["comm"] == f["comms"][row[3]]["label"] for row in trace["calls"])
        # Fewer calls than the sample's slots: it keeps every one, the trace's very rows.
        assert f["sample"] == {"stride": 1, "max_calls": 4096, "calls": trace["calls"]}
        # On one node every rank is on the reference's clock.
        c = f["clock"]
        assert (c["node"], c["method"], c["offset_init_s"], c["offset_final_s"], c["error_s"]) == \
            (0, "reference", 0, 0, 0)
        # Entries in the program's order, each after the one before ended,
        # all between the two clock measurements.
        local = [(c["mono_zero_s"] + s, c["mono_zero_s"] + s + d) for _, s, d, _, _ in trace["calls"]]
        assert c["init_s"] <= c["mono_zero_s"] <= local[0][0]
        assert all(local[i + 1][0] >= local[i][1] - 1e-6 for i in range(len(local) - 1))
        assert local[-1][1] <= c["final_s"]


@pytest.mark.parametrize("mpi", MPIS)
def test_sample_thins_to_a_stride(mpi, program, tmp_path):
    """10,000 calls on one communicator: the 4,096 slots fill at call 4,096
    (stride 2) and again at 8,190 (stride 4); every multiple of 4 is kept."""
    files = _profiled(mpi, program(mpi), 2, tmp_path, "many", "10000")
    for f in files:
        s = f["sample"]
        assert s["stride"] == 4 and s["max_calls"] == 4096
        assert [row[4] for row in s["calls"]] == list(range(0, 10000, 4))
        assert {row[3] for row in s["calls"]} == {0} and f["trace"] is None
        assert all(s["calls"][i][1] <= s["calls"][i + 1][1] for i in range(len(s["calls"]) - 1))


@pytest.mark.parametrize("mpi", MPIS)
def test_exchange_measures_offsets_near_zero(mpi, program, tmp_path):
    """COLLKIT_PROFILE_CLOCK=exchange: ranks 1 and 2 measure as if on nodes
    of their own; on one node the true offset is 0."""
    files = _profiled(mpi, program(mpi), 3, tmp_path, COLLKIT_PROFILE_CLOCK="exchange")
    assert files[0]["clock"]["method"] == "reference" and files[0]["clock"]["error_s"] == 0
    for f in files[1:]:
        c = f["clock"]
        assert c["method"] == "exchange" and c["node"] == 0
        assert 0 < c["error_s"] < 1.0
        assert abs(c["offset_init_s"]) <= c["error_s"] + MARGIN_S
        assert abs(c["offset_final_s"]) <= c["error_s"] + MARGIN_S
        assert c["init_s"] <= c["mono_zero_s"] <= c["final_s"]


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("env, words", [
    ({"COLLKIT_PROFILE": "/tmp", "COLLKIT_PROFILE_CLOCK": "ptp"},
     ["COLLKIT_PROFILE_CLOCK: 'ptp' is neither auto nor exchange", "fix:"]),
    ({"COLLKIT_PROFILE_CLOCK": "exchange"}, ["COLLKIT_PROFILE_CLOCK is set without COLLKIT_PROFILE", "fix:"]),
])
def test_shim_refuses_a_bad_clock_setting(mpi, program, env, words):
    """As test_profile.py's other variables: one line, every rank stops."""
    r = _run(mpi, program(mpi), 3, env)
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("collkit-preload:")]
    assert r.returncode != 0 and len(lines) == 1, r.stdout + r.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert "profile_sequence: done" not in r.stdout


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("on_rank_1", ["COLLKIT_PROFILE={dir}", "COLLKIT_PROFILE={dir} COLLKIT_PROFILE_CLOCK=exchange"])
def test_shim_refuses_profile_settings_that_differ_between_ranks(mpi, program, tmp_path, on_rank_1):
    """The profile's set-up is collective: rank 1 alone profiling (or alone
    in exchange mode) would leave the others waiting in it, so rank 0 says
    so in one line and every rank stops."""
    install = known.find_install(mpi)
    same = {"LD_PRELOAD": str(known.find(mpi).part("preload"))}
    if "CLOCK" in on_rank_1:
        same["COLLKIT_PROFILE"] = str(tmp_path)
    rank = "${OMPI_COMM_WORLD_RANK:-$PMI_RANK}"
    script = (f'if [ "{rank}" = 1 ]; then export {on_rank_1.format(dir=tmp_path)}; fi; '
              f'exec "{program(mpi)}"')
    argv = [str(install.mpirun), "-n", "2", *install.flags, *preload.env_flags(install.family, same),
            "sh", "-c", script]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=install.environment())
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("collkit-preload:")]
    assert r.returncode != 0 and len(lines) == 1, r.stdout + r.stderr
    assert "differs between ranks" in lines[0] and "fix:" in lines[0]
    assert "profile_sequence: done" not in r.stdout
