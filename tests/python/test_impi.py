"""Intel MPI's backend (backends/impi.py): its presets read from impi_info, forced one
launch each through I_MPI_ADJUST_<COLL>, and shown to take effect."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import needs
from collkit import backends
from collkit.backends import impi
from collkit.common.errors import UserError
from collkit.mpis import identity, known

FIXTURES = Path(__file__).parent / "fixtures"


def test_the_preset_range_is_read_from_impi_info():
    assert impi.parse_range((FIXTURES / "impi_info-2021.19-allreduce.txt").read_text(), "x") == 32
    assert impi.parse_range((FIXTURES / "impi_info-2021.19-bcast.txt").read_text(), "x") == 22


@pytest.mark.parametrize("text", ["I_MPI_ADJUST_BCAST\n  Description:\n", "    range: 1-22 \n",
                                  "    range: 0-9999 \n"])
def test_an_unreadable_range_is_one_line(text):
    with pytest.raises(UserError, match="impi_info"):
        impi.parse_range(text, "I_MPI_ADJUST_BCAST")


def test_each_preset_is_forced_through_its_collectives_variable():
    offer = impi.build_offer({"allreduce": 32, "bcast": 22, "reduce_scatter": 4}, version="2021.19.0")
    assert offer.library == "Intel MPI 2021.19.0" and offer.launch_env is None
    names = [a.name for a in offer.for_collective("allreduce")]
    assert names == [f"impi_preset_{n}" for n in range(1, 33)]
    assert offer.force("allreduce", "impi_preset_8").env == {"I_MPI_ADJUST_ALLREDUCE": "8"}
    # collkit-bench's reduce_scatter is MPI_Reduce_scatter_block
    assert offer.force("reduce_scatter", "4").env == {"I_MPI_ADJUST_REDUCE_SCATTER_BLOCK": "4"}
    assert offer.for_collective("gather") == []


@pytest.mark.parametrize("name", ["33", "impi_preset_33", "0", "ring"])
def test_a_preset_outside_the_range_is_refused(name):
    """Intel MPI would ignore an id past its range (a warning, then its own choice): collkit
    refuses it before anything launches; 0 is the default point, not a forced one."""
    offer = impi.build_offer({"allreduce": 32})
    with pytest.raises(UserError, match="allreduce") as err:
        offer.force("allreduce", name)
    assert "\n" not in str(err.value)


def test_intel_mpi_is_its_own_family_with_its_own_backend():
    assert identity.kind_of("Intel(R) MPI Library 2021.19.0 for Linux* OS") == ("intel-mpi", "impi")
    assert backends.backend_for("impi").forcing_knobs == "I_MPI_ADJUST presets"
    # every family the version strings name has a backend of its own
    for family in identity.FAMILIES:
        assert backends.backend_for(family).family == family


def test_the_launcher_version_line_gives_the_version():
    line = "Intel(R) MPI Library for Linux* OS, Version 2021.19.0 Build 20260929 (id: 1821d9b)\n"
    assert impi.parse_version(line) == "2021.19.0"


# --- the library itself ---------------------------------------------------------------

OP_LOG_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int ncalls, lens[64];
static void sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
    if (ncalls < 64) lens[ncalls] = *len;
    ncalls++;
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, p, count = atoi(argv[1]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Op op;
    MPI_Op_create(sum, 1, &op);
    int *s = malloc(count * sizeof(int)), *r = malloc(count * sizeof(int));
    for (int i = 0; i < count; i++) s[i] = rank + i;
    int rc = MPI_Allreduce(s, r, count, MPI_INT, op, MPI_COMM_WORLD), bad = 0;
    for (int i = 0; i < count; i++) bad += r[i] != p * i + p * (p - 1) / 2;
    /* one write per rank: the launcher interleaves the ranks' output */
    char line[1024];
    int n = snprintf(line, sizeof line, "rank %d rc %d bad %d lens", rank, rc, bad);
    for (int i = 0; i < ncalls && i < 64; i++) n += snprintf(line + n, sizeof line - n, " %d", lens[i]);
    printf("%s\n", line);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def op_log(tmp_path_factory):
    out = tmp_path_factory.mktemp("impi") / "op_log"
    src = out.with_suffix(".c")
    src.write_text(OP_LOG_C)
    mpi = known.find("impi")
    from collkit.mpis.build import wrapper_env
    subprocess.run([mpi.mpicc, "-O1", "-o", str(out), str(src)], check=True, capture_output=True, timeout=120,
                   env=wrapper_env(Path(mpi.mpicc), None))
    return out


def _op_calls(program: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, dict[int, list[int]]]:
    mpi = known.find("impi").install()
    proc = subprocess.run(mpi.launch(4, program, ["1024"]), env={**mpi.environment(), **env},
                          capture_output=True, text=True, timeout=120)
    calls = {}
    # hydra may forward one rank's line in pieces, between another's: match records, not lines
    for rank, rc, bad, lens in re.findall(r"rank (\d+) rc (\d+) bad (\d+) lens((?: \d+)*)", proc.stdout):
        assert (rc, bad) == ("0", "0"), proc.stdout   # MPI_SUCCESS, the right sums
        calls[int(rank)] = [int(x) for x in lens.split()]
    return proc, calls


# A user op logs the reductions each rank makes, at 4 ranks and 1024 ints: the shape
# of the schedule each preset runs (docs/install.md, "Intel MPI"). Presets 1, 2 and 8 are
# what Intel's reference numbered recursive doubling, Rabenseifner's and ring up to
# 2021.12; their reductions here are those shapes.
SHAPES = {
    "1": {r: [1024, 1024] for r in range(4)},        # a full vector per step, log2(4) steps
    "2": {r: [512, 256] for r in range(4)},          # halving reduce-scatter, then allgather
    "8": {r: [256, 256, 256] for r in range(4)},     # p - 1 blocks of n/p
}


@needs.impi
@pytest.mark.parametrize("preset", sorted(SHAPES))
def test_a_forced_preset_runs_its_own_schedule(op_log, preset):
    offer = backends.discover(known.find("impi").install())
    alg = offer.force("allreduce", f"impi_preset_{preset}")
    proc, calls = _op_calls(op_log, alg.env)
    assert proc.returncode == 0, proc.stderr
    assert calls == SHAPES[preset]


@needs.impi
def test_the_library_ignores_an_id_past_its_range_which_collkit_refuses(op_log):
    """What collkit's refusal spares a user: Intel MPI warns and runs its own choice."""
    offer = backends.discover(known.find("impi").install())
    top = max(int(a.native_id) for a in offer.for_collective("allreduce"))
    proc, calls = _op_calls(op_log, {"I_MPI_ADJUST_ALLREDUCE": str(top + 1)})
    assert proc.returncode == 0 and f"Incorrect algorithm: ALLREDUCE={top + 1}" in proc.stdout + proc.stderr
    default_proc, default_calls = _op_calls(op_log, {})
    assert len(calls) == 4 and calls == default_calls
    with pytest.raises(UserError):
        offer.force("allreduce", str(top + 1))


@needs.impi
def test_collkit_mpis_says_where_intel_mpis_forcing_comes_from(collkit):
    out = collkit("mpis", "--json")
    assert out.returncode == 0, out.stderr
    row = next(r for r in json.loads(out.stdout)["mpis"] if r["name"] == "impi")
    assert "I_MPI_ADJUST presets" in row["forcing"] and "impi_info" in row["forcing"]


SWITCH_C = r"""
#include <mpi.h>
#include <stdio.h>
static int ncalls, lens[64];
static void sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
    if (ncalls < 64) lens[ncalls] = *len;
    ncalls++;
}
static void run(MPI_Comm comm, MPI_Op op, int rank, const char *what) {
    int s[1024], r[1024];
    for (int i = 0; i < 1024; i++) s[i] = 1;
    ncalls = 0;
    int rc = MPI_Allreduce(s, r, 1024, MPI_INT, op, comm);
    char line[512];
    int n = snprintf(line, sizeof line, "%s rank %d rc %d bad %d lens", what, rank, rc, r[5] != 4);
    for (int i = 0; i < ncalls && i < 64; i++) n += snprintf(line + n, sizeof line - n, " %d", lens[i]);
    printf("%s\n", line);
    fflush(stdout);
}
int main(int argc, char **argv) {
    int provided, rank, idx, count;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Op op;
    MPI_Op_create(sum, 1, &op);
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index("MPIR_CVAR_USE_ALLREDUCE", &idx) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS || MPI_T_cvar_write(h, argv[1]) != MPI_SUCCESS) {
        printf("rank %d cannot write MPIR_CVAR_USE_ALLREDUCE\n", rank);
        return 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    run(MPI_COMM_WORLD, op, rank, "world");
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    run(dup, op, rank, "dup");
    MPI_Finalize();
    return 0;
}
"""


@needs.impi
def test_intel_mpis_switch_written_while_running_changes_nothing(tmp_path):
    """Why IntelMPIBackend.runtime_switch is False: MPI_T takes the write, the library
    keeps the preset it read at MPI_Init, on old and new communicators."""
    assert not backends.backend_for("impi").runtime_switch.per_call
    src, exe = tmp_path / "switch.c", tmp_path / "switch"
    src.write_text(SWITCH_C)
    mpi = known.find("impi")
    from collkit.mpis.build import wrapper_env
    subprocess.run([mpi.mpicc, "-O1", "-o", str(exe), str(src)], check=True, capture_output=True, timeout=120,
                   env=wrapper_env(Path(mpi.mpicc), None))
    install = mpi.install()

    def shapes(value: str, env: dict[str, str]) -> dict[tuple[str, int], list[int]]:
        proc = subprocess.run(install.launch(4, exe, [value]), env={**install.environment(), **env},
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        found = re.findall(r"(world|dup) rank (\d+) rc 0 bad 0 lens((?: \d+)*)", proc.stdout)
        return {(where, int(rank)): [int(x) for x in lens.split()] for where, rank, lens in found}

    ring = {(w, r): [256, 256, 256] for w in ("world", "dup") for r in range(4)}
    default = {(w, r): [1024, 1024] for w in ("world", "dup") for r in range(4)}
    assert shapes("8", {}) == default                               # ring written: the default still runs
    assert shapes("1", {"I_MPI_ADJUST_ALLREDUCE": "8"}) == ring     # ring from the start: ring, whatever is written
