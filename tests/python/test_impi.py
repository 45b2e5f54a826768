"""Intel MPI's backend (backends/impi.py): its presets read from impi_info, forced one
launch each through I_MPI_ADJUST_<COLL>, and shown to take effect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import needs
import op_log
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

@pytest.fixture(scope="module")
def op_log_program(tmp_path_factory):
    return op_log.program(tmp_path_factory)("impi")


def _world(calls: dict[tuple[str, int], list[int]]) -> dict[int, list[int]]:
    return {rank: lens for (where, rank), lens in calls.items() if where == "world"}


# fixtures/op_log.c's user op logs the reductions each rank makes, at 4 ranks and 1024
# ints: the shape of the schedule each preset runs (docs/install.md, "Intel MPI"). Presets
# 1, 2 and 8 are what Intel's reference numbered recursive doubling, Rabenseifner's and
# ring up to 2021.12; their reductions here are those shapes.
SHAPES = {
    "1": {r: [1024, 1024] for r in range(4)},        # a full vector per step, log2(4) steps
    "2": {r: [512, 256] for r in range(4)},          # halving reduce-scatter, then allgather
    "8": {r: [256, 256, 256] for r in range(4)},     # p - 1 blocks of n/p
}


@needs.impi
@pytest.mark.parametrize("preset", sorted(SHAPES))
def test_a_forced_preset_runs_its_own_schedule(op_log_program, preset):
    offer = backends.discover(known.find("impi").install())
    alg = offer.force("allreduce", f"impi_preset_{preset}")
    proc, calls = op_log.run(op_log_program, "impi", 4, ["allreduce", "1024"], alg.env)
    assert proc.returncode == 0, proc.stderr
    assert _world(calls) == SHAPES[preset]


@needs.impi
def test_the_library_ignores_an_id_past_its_range_which_collkit_refuses(op_log_program):
    """What collkit's refusal spares a user: Intel MPI warns and runs its own choice."""
    offer = backends.discover(known.find("impi").install())
    top = max(int(a.native_id) for a in offer.for_collective("allreduce"))
    proc, calls = op_log.run(op_log_program, "impi", 4, ["allreduce", "1024"],
                             {"I_MPI_ADJUST_ALLREDUCE": str(top + 1)})
    assert proc.returncode == 0 and f"Incorrect algorithm: ALLREDUCE={top + 1}" in proc.stdout + proc.stderr
    _, default_calls = op_log.run(op_log_program, "impi", 4, ["allreduce", "1024"])
    assert len(calls) == 4 and calls == default_calls
    with pytest.raises(UserError):
        offer.force("allreduce", str(top + 1))


@needs.impi
def test_collkit_mpis_says_where_intel_mpis_forcing_comes_from(collkit):
    out = collkit("mpis", "--json")
    assert out.returncode == 0, out.stderr
    row = next(r for r in json.loads(out.stdout)["mpis"] if r["name"] == "impi")
    assert "I_MPI_ADJUST presets" in row["forcing"] and "impi_info" in row["forcing"]


@needs.impi
def test_intel_mpis_switch_written_while_running_changes_nothing(op_log_program):
    """Why IntelMPIBackend.runtime_switch is False: MPI_T takes the write, the library
    keeps the preset it read at MPI_Init, on old and new communicators."""
    assert not backends.backend_for("impi").runtime_switch.per_call
    ring = {(w, r): [256, 256, 256] for w in ("world", "dup") for r in range(4)}
    default = {(w, r): [1024, 1024] for w in ("world", "dup") for r in range(4)}
    args = ["allreduce", "1024"]
    # ring written: the default still runs; ring from the start: ring, whatever is written
    assert op_log.run(op_log_program, "impi", 4, [*args, "MPIR_CVAR_USE_ALLREDUCE=8"])[1] == default
    assert op_log.run(op_log_program, "impi", 4, [*args, "MPIR_CVAR_USE_ALLREDUCE=1"],
                      {"I_MPI_ADJUST_ALLREDUCE": "8"})[1] == ring
