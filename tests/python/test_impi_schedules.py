"""Intel MPI's schedules seen by their messages (impi_traffic.py: each large message is one
kernel copy, or consecutive pieces of one, that strace names by sender, receiver and bytes): allgather's presets 1, 2
and 3 run recursive doubling, Bruck's and ring, as Intel's reference numbered them up to
2021.12; and the message size that I_MPI_ADJUST_<COLL> conditions and Intel's tuning
tree read for allgather, alltoall and scatter is one rank's block, collkit-bench's bytes,
so tuning files name their presets (backends/impi.py, MESSAGE_SIZE_IS_COLLKIT_BYTES)."""

from __future__ import annotations

import collections

import pytest

import impi_traffic
import needs
from collkit import backends
from collkit.backends import impi
from collkit.backends.impi_adjust import MAX_BOUND
from collkit.tune.decide import DEFAULT, Candidate, Rule
from collkit.tune.writers import impi as adjust_writer
from collkit.tune.writers import impi_json as tree_writer

B = 65536          # one rank's block, bytes
P = 4


@pytest.fixture(scope="module")
def cma_program(tmp_path_factory):
    return impi_traffic.program(tmp_path_factory)("impi")


def _run(program, tmp_path, collective: str, env: dict[str, str], block: int = B) -> collections.Counter:
    return impi_traffic.messages(program, collective, block, P, env, tmp_path)


_REFERENCE: dict[tuple, collections.Counter] = {}


def _reference(program, tmp_path, collective: str, preset: str | None, block: int = B) -> collections.Counter:
    """The messages of `preset` forced (None: Intel's default), run once per module."""
    key = (program, collective, preset, block)
    if key not in _REFERENCE:
        env = {} if preset is None else {impi.variable(collective): preset}
        _REFERENCE[key] = _run(program, tmp_path, collective, env, block)
    return _REFERENCE[key]


def _msgs(*triples: tuple[int, int, int]) -> collections.Counter:
    return collections.Counter(triples)


# At 4 ranks, by hand: recursive doubling swaps one block with rank^1, then two with
# rank^2; Bruck's sends one block to rank-1, then two to rank-2; ring passes one block to
# rank+1 three times.
ALLGATHER = {
    "1": _msgs(*[(r, r ^ 1, B) for r in range(P)], *[(r, r ^ 2, 2 * B) for r in range(P)]),
    "2": _msgs(*[(r, (r - 1) % P, B) for r in range(P)], *[(r, (r - 2) % P, 2 * B) for r in range(P)]),
    "3": _msgs(*[(r, (r + 1) % P, B) for r in range(P) for _ in range(P - 1)]),
}


@needs.impi_traced
@pytest.mark.parametrize("preset", sorted(ALLGATHER))
def test_allgathers_presets_run_the_schedules_intels_reference_named(cma_program, tmp_path, preset):
    assert _reference(cma_program, tmp_path, "allgather", preset) == ALLGATHER[preset]


# Two presets whose messages differ at 4 ranks and a 64 KiB block (scatter's preset 1
# moves its blocks through the shared cells, so its trace is empty; preset 3 sends each
# rank its block from the root)
TWO_PRESETS = {"allgather": ("1", "3"), "alltoall": ("1", "3"), "scatter": ("1", "3")}


@needs.impi_traced
@pytest.mark.parametrize("collective", sorted(TWO_PRESETS))
def test_the_conditions_read_one_ranks_block_as_the_message_size(cma_program, tmp_path, collective):
    """`a:B-B;b:...` runs a and `a:(B-1)-(B-1);b:...` runs b at a block of B bytes: the
    size is the block exactly (not the P x B bytes of the whole buffer)."""
    a, b = TWO_PRESETS[collective]
    var = impi.variable(collective)
    forced_a = _reference(cma_program, tmp_path, collective, a)
    forced_b = _reference(cma_program, tmp_path, collective, b)
    assert forced_a != forced_b
    assert _run(cma_program, tmp_path, collective, {var: f"{a}:{B}-{B};{b}:0-{MAX_BOUND}"}) == forced_a
    assert _run(cma_program, tmp_path, collective, {var: f"{a}:{B - 1}-{B - 1};{b}:0-{MAX_BOUND}"}) == forced_b


# gather's presets 1 (binomial) and 3 (linear) by Intel's profiler: at 4 ranks, binomial
# sends rank 3's block to 2 and rank 2's two to the root; linear sends each block to it
GATHER = {"1": collections.Counter({(1, 0, B): 1, (3, 2, B): 1, (2, 0, 2 * B): 1}),
          "3": collections.Counter({(1, 0, B): 1, (2, 0, B): 1, (3, 0, B): 1})}


@pytest.mark.full
@needs.impi
def test_gathers_conditions_read_one_ranks_block_too(cma_program, tmp_path):
    """In make test-full only: every profiled launch maps about 7.8 GB of shared memory
    for Intel's profiler, 15-20 s of system time each (80 s for this test in a make test
    on 2 cores, 2026-11-30); the writer's code path is the other block collectives'."""
    def run(value: str) -> collections.Counter:
        return impi_traffic.egress(cma_program, "gather", B, P, {"I_MPI_ADJUST_GATHER": value}, tmp_path)
    assert run(f"1:{B}-{B};3:0-{MAX_BOUND}") == GATHER["1"]
    assert run(f"1:{B - 1}-{B - 1};3:0-{MAX_BOUND}") == GATHER["3"]


CANDS = {c: [Candidate(f"impi_preset_{n}", f"preset {n}", str(n)) for n in range(1, 6)]
         for c in ("allgather", "alltoall", "scatter")}
# At 4 ranks Intel's default runs recursive doubling's messages for allgather and one
# block between every pair for alltoall (as presets 2 and 3 do): the file chooses presets
# whose messages differ from the default's. allgather: ring below 64 KiB a block, Bruck's
# from there; alltoall: the default below, Bruck's (preset 1) from there.
RULES = [Rule("allgather", P, 0, B - 1, "impi_preset_3", "measured", at_bytes=[B // 2]),
         Rule("allgather", P, B, None, "impi_preset_2", "measured", at_bytes=[B]),
         Rule("alltoall", P, 0, B - 1, DEFAULT, "measured", at_bytes=[B // 2]),
         Rule("alltoall", P, B, None, "impi_preset_1", "measured", at_bytes=[B])]


@needs.impi_traced
@pytest.mark.parametrize("fmt", ["impi", "impi-json"])
def test_a_file_for_block_collectives_runs_the_chosen_preset_at_each_size(cma_program, tmp_path, fmt):
    writer = adjust_writer if fmt == "impi" else tree_writer
    path = tmp_path / "tuned"
    path.write_text(writer.write(RULES, CANDS, None, ["test"]))
    offer = impi.build_offer({"allgather": 9, "alltoall": 5, "scatter": 3}, version="2021.19.0")
    env = backends.for_format(fmt).tuned_env(offer, str(path), None, P)
    for rule in RULES:
        for nbytes in rule.at_bytes:
            tuned = _run(cma_program, tmp_path, rule.collective, env, nbytes)
            default = _reference(cma_program, tmp_path, rule.collective, None, nbytes)
            if rule.choice == DEFAULT:
                assert tuned == default, rule
            else:
                preset = rule.choice.removeprefix("impi_preset_")
                forced = _reference(cma_program, tmp_path, rule.collective, preset, nbytes)
                assert tuned == forced and forced != default, rule
