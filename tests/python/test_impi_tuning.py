"""Intel MPI's tuning file (backends/impi_adjust.py, tune/writers/impi.py): I_MPI_ADJUST_<COLL>
settings per process count, told by content, refused in one line where malformed or for
another library, written by `collkit tune --format impi`, and followed by the library:
each measured size runs the preset the file chose there (a user op that logs its
reduction lengths, as in test_impi.py), and tune/proof.py sees a broken copy in Intel
MPI's warning (docs/tuning-files.md, "Intel MPI")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import needs
import op_log
from cli_runner import collkit, one_line_error
from collkit import backends
from collkit.backends import impi, impi_adjust, openmpi
from collkit.campaign import plan as planner
from collkit.campaign import spec as specs
from collkit.campaign import tuning
from collkit.campaign.platform import Platform, PlatformMPI
from collkit.common.errors import UserError
from collkit.mpis.install import MPIInstall
from collkit.tune.decide import DEFAULT, Candidate, Rule
from collkit.tune.writers import impi as writer

FIXTURES = Path(__file__).parent / "fixtures"
M = impi_adjust.MAX_BOUND
OFFERS = {
    "impi": impi.build_offer({"allreduce": 32, "bcast": 22, "reduce": 13, "reduce_scatter": 11, "allgather": 9},
                             version="2021.19.0"),
    "openmpi": openmpi.build_offer(openmpi.parse((FIXTURES / "ompi_info-4.1.4.txt").read_text()), tool="ompi_info"),
}
PLATFORM = Platform("test", "test", {m: PlatformMPI(MPIInstall(m, Path("/bin/true")), Path("/bin/true"))
                                     for m in OFFERS})
GOOD = ("# a comment\n"
        "I_MPI_ADJUST_BCAST=3\n"
        "@4 I_MPI_ADJUST_ALLREDUCE=0:0-1023;8:1024-65535;2:65536-2147483647\n"
        "@5-8 I_MPI_ADJUST_ALLREDUCE=\"2:0-4095;0:4096-2147483647\"\n")


def plan(tmp_path, selections, mpis=("impi",), ranks=(4,)):
    (tmp_path / "spec.toml").write_text(
        f"collectives = [\"allreduce\"]\nsizes = [\"64B\", \"64KiB\"]\nranks = {list(ranks)}\n"
        f"mpi = {json.dumps(list(mpis))}\n[backends]\nmpi = {json.dumps(selections)}\n"
        "[measure]\nmin_iterations = 3\nmax_iterations = 3\ntime_budget_s = 0\nlaunches = 1\n")
    return planner.build(specs.load(tmp_path / "spec.toml"), PLATFORM, [], discover=lambda pm: OFFERS[pm.name])


# ------------------------------------------------------------------ the format

def test_the_content_tells_intel_mpi(tmp_path):
    (tmp_path / "t.impi").write_text(GOOD)
    tf = tuning.load(tmp_path / "t.impi", "t", "fix")
    assert tf.library == "impi" == backends.for_format("impi").tuning_format
    assert tf.collectives == ("bcast", "allreduce")
    assert tuning.is_library_file(GOOD) and not tuning.is_library_file("allreduce 1-* 0-* ring\n")


def test_a_launch_gets_the_lines_of_its_process_count():
    settings = impi_adjust.read(GOOD, "t")
    assert impi_adjust.environment(settings, 4, "t") == {
        "I_MPI_ADJUST_BCAST": "3", "I_MPI_ADJUST_ALLREDUCE": "0:0-1023;8:1024-65535;2:65536-2147483647"}
    assert impi_adjust.environment(settings, 6, "t")["I_MPI_ADJUST_ALLREDUCE"] == "2:0-4095;0:4096-2147483647"
    assert impi_adjust.environment(settings, 2, "t") == {"I_MPI_ADJUST_BCAST": "3"}
    # a run whose process count collkit does not know (collkit trial) cannot choose the lines
    with pytest.raises(UserError, match="per process count") as err:
        impi_adjust.environment(settings, None, "t")
    assert "\n" not in str(err.value)
    assert impi_adjust.environment(impi_adjust.read("I_MPI_ADJUST_BCAST=3\n", "t"), None, "t") == \
        {"I_MPI_ADJUST_BCAST": "3"}
    # what 2021.19 runs: the first item whose upper bound holds the size
    items = settings[1].items
    assert [impi_adjust.chosen(items, n) for n in (0, 1023, 1024, 65535, 65536, M)] == [0, 0, 8, 8, 2, 2]


@pytest.mark.parametrize("content, message", [
    ("I_MPI_ADJUST_ALLREDUCE=8:0-4095@4-4;2:4096-2147483647\n", "put them before the variable"),
    ("I_MPI_ADJUST_ALLREDUCE=8:100-4095;2:4096-2147483647\n", "should start at 0"),
    ("I_MPI_ADJUST_ALLREDUCE=8:0-4095;2:5000-2147483647\n", "should start at 4096"),
    ("I_MPI_ADJUST_ALLREDUCE=8:0-4095;2:4096-2147483648\n", "ascend without a gap"),
    ("I_MPI_ADJUST_ALLREDUCE=8:0-4095\n", "end it at 2147483647"),
    ("I_MPI_ADJUST_ALLREDUCE=8:0-4095;2\n", "has no size range"),
    ("I_MPI_ADJUST_ALLREDUCE=08\n", "not <presetid>:<l>-<m>"),
    ("I_MPI_ADJUST_ALLREDUCE=8:0-x\n", "not <presetid>:<l>-<m>"),
    ("I_MPI_ADJUST_ALLREDUCE=\n", "not <presetid>:<l>-<m>"),
    ("I_MPI_ADJUST_ALLREDUSE=8\n", "not one of Intel MPI's I_MPI_ADJUST_<opname> variables"),
    ("I_MPI_ADJUST_BCAST=1\nI_MPI_ADJUST_BCAST=2\n", "already set"),
    ("@4 I_MPI_ADJUST_BCAST=1\n@3-5 I_MPI_ADJUST_BCAST=2\n", "already set"),
    ("@5-3 I_MPI_ADJUST_BCAST=1\n", "must be 1 or more and ascend"),
    ("I_MPI_ADJUST_BCAST=1\nring\n", "is not [@<p>[-<q>]] I_MPI_ADJUST_<COLL>=<value>"),
])
def test_malformed_settings_are_refused_in_one_line(tmp_path, content, message):
    (tmp_path / "bad.impi").write_text(content)
    with pytest.raises(UserError) as err:
        tuning.load(tmp_path / "bad.impi", "bad", "fix")
    assert message in str(err.value) and "bad.impi" in str(err.value) and "\n" not in str(err.value)


def test_cli_refuses_malformed_conditions_in_one_line_with_exit_2(tmp_path):
    (tmp_path / "x.impi").write_text("I_MPI_ADJUST_ALLREDUCE=8:0-4095@4-4;2:4096-2147483647\n")
    (tmp_path / "spec.toml").write_text(
        "collectives = [\"allreduce\"]\nsizes = [\"64B\"]\nranks = [2]\nmpi = [\"openmpi\"]\n"
        "[backends]\nmpi = [\"default\", \"tuned:x.impi\"]\n")
    one_line_error(collkit("run", "spec.toml", "--out", "c", "--dry-run", cwd=tmp_path), "x.impi",
                   "put them before the variable")


# ------------------------------------------------------------------ which library reads it

def test_an_intel_file_is_refused_where_the_spec_measures_no_intel_mpi(tmp_path):
    (tmp_path / "t.impi").write_text(GOOD)
    with pytest.raises(UserError, match=r"is an Intel MPI I_MPI_ADJUST file, but the spec measures openmpi, "
                                        r"none of the impi family") as err:
        plan(tmp_path, ["tuned:t.impi"], mpis=("openmpi",))
    assert "\n" not in str(err.value)


def test_another_librarys_file_is_refused_for_intel_mpi(tmp_path):
    (tmp_path / "r.rules").write_text((FIXTURES / "tuning" / "openmpi-allreduce.rules").read_text())
    with pytest.raises(UserError, match=r"is an Open MPI rules file, but the spec measures impi, "
                                        r"none of the openmpi family"):
        plan(tmp_path, ["tuned:r.rules"], mpis=("impi",))
    for fmt in ("openmpi", "mpich"):
        assert not backends.for_format(fmt).reads("impi")
    assert backends.backend_for("impi").reads("impi") and not backends.backend_for("impi").reads("openmpi")


def test_intel_points_carry_the_lines_of_their_rank_count(tmp_path):
    (tmp_path / "t.impi").write_text(GOOD)
    p = plan(tmp_path, ["default", "tuned:t.impi"], ranks=(2, 4, 6))
    env = {pt.ranks: dict(pt.env) for pt in p.points if pt.algorithm == "tuned:t.impi"}
    assert env[4]["I_MPI_ADJUST_ALLREDUCE"] == "0:0-1023;8:1024-65535;2:65536-2147483647"
    assert env[6]["I_MPI_ADJUST_ALLREDUCE"] == "2:0-4095;0:4096-2147483647"
    assert env[2] == {"I_MPI_ADJUST_BCAST": "3"}


def test_a_preset_past_the_librarys_range_is_refused(tmp_path):
    (tmp_path / "t.impi").write_text("@4 I_MPI_ADJUST_ALLREDUCE=8:0-1023;33:1024-2147483647\n")
    with pytest.raises(UserError, match=r"names preset 33, past Intel MPI 2021.19.0's range 0-32"):
        plan(tmp_path, ["tuned:t.impi"])


def test_the_broken_copy_names_a_preset_past_every_range():
    broken = backends.for_format("impi").broken_copy(GOOD)
    settings = impi_adjust.read(broken, "b")
    assert {i.preset for s in settings for i in s.items} == {impi.BROKEN_PRESET}
    assert [s.procs for s in settings] == [None, (4, 4), (5, 8)]
    assert impi.BROKEN_PRESET > impi.MAX_PRESETS


# ------------------------------------------------------------------ collkit tune --format impi

CANDS = {c: [Candidate(f"impi_preset_{n}", f"preset {n}", str(n)) for n in range(1, 12)]
         for c in ("allreduce", "reduce_scatter", "allgather")}


def rules_at_4():
    R = Rule
    return [R("allreduce", 2, 0, None, DEFAULT, "measured", at_bytes=[64, 4096]),
            R("allreduce", 4, 0, 1023, DEFAULT, "measured", at_bytes=[64]),
            R("allreduce", 4, 1024, 8191, "impi_preset_8", "measured", at_bytes=[4096]),
            R("allreduce", 4, 8192, None, "impi_preset_5", "measured", "models cross", at_bytes=[16384]),
            R("reduce_scatter", 4, 0, 511, DEFAULT, "measured", at_bytes=[64]),
            R("reduce_scatter", 4, 512, None, "impi_preset_3", "measured", at_bytes=[1024])]


def test_the_writer_gives_each_rank_count_its_size_conditions(tmp_path):
    text = writer.write(rules_at_4(), CANDS, None, ["test"])
    settings = impi_adjust.read(text, "w")
    assert [s.line() for s in settings] == [
        "@4 I_MPI_ADJUST_ALLREDUCE=0:0-1023;8:1024-8191;5:8192-2147483647",
        "@4 I_MPI_ADJUST_REDUCE_SCATTER_BLOCK=0:0-511;3:512-2147483647"]
    # every measured size runs the chosen preset, as 2021.19 reads the conditions
    ids = {"default": 0, "impi_preset_8": 8, "impi_preset_5": 5, "impi_preset_3": 3}
    by_var = {s.variable: s.items for s in settings}
    for r in rules_at_4():
        if r.ranks == 4:
            for n in r.at_bytes:
                assert impi_adjust.chosen(by_var[impi.variable(r.collective)], n) == ids[r.choice]
    # the file the campaign reads is the one written
    (tmp_path / "w.impi").write_text(text)
    assert tuning.load(tmp_path / "w.impi", "w", "fix").library == "impi"


def test_every_collectives_presets_are_written_but_never_preset_0():
    """Intel's message size is shown for all eight (test_impi_schedules.py for the block
    collectives); preset 0 is the library's own choice, a rule's DEFAULT."""
    for coll in impi.STEM:
        assert writer.expressible(coll, Candidate("impi_preset_3", "preset 3", "3"), None), coll
    assert not writer.expressible("allreduce", Candidate("impi_preset_0", "preset 0", "0"), None)
    with pytest.raises(UserError, match="no preset was chosen") as err:
        writer.write([Rule("allreduce", 4, 0, None, DEFAULT, "measured")], CANDS, None, [])
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------ in the library

@pytest.fixture(scope="module")
def op_log_program(tmp_path_factory):
    return op_log.program(tmp_path_factory)("impi")


def _lens(program: Path, coll: str, count: int, env: dict[str, str], ranks: int = 4
          ) -> dict[tuple[str, int], list[int]]:
    proc, calls = op_log.run(program, "impi", ranks, [coll, str(count)], env)
    assert proc.returncode == 0 and "Incorrect" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert len(calls) == ranks, proc.stdout
    return calls


def assert_sizes_run_the_chosen_presets(program: Path, env: dict[str, str]) -> None:
    """Under a tuning file's launch environment at 4 ranks, every measured size of
    rules_at_4() runs the schedule its chosen preset runs forced (which differs from the
    default's there, so the match means something), and the default's where the file
    keeps the default. Shared by both Intel formats (test_impi_json.py)."""
    stems = {"allreduce": "allreduce", "reduce_scatter": "reduce_scatter_block"}
    checked = 0
    for r in rules_at_4():
        if r.ranks != 4:
            continue
        for nbytes in r.at_bytes:
            count = nbytes // 4
            tuned = _lens(program, stems[r.collective], count, env)
            default = _lens(program, stems[r.collective], count, {})
            if r.choice == DEFAULT:
                assert tuned == default, (r, tuned)
            else:
                preset = r.choice.removeprefix("impi_preset_")
                forced = _lens(program, stems[r.collective], count, {impi.variable(r.collective): preset})
                assert forced != default and tuned == forced, (r, tuned, forced, default)
            checked += 1
    assert checked == 5


@needs.impi
def test_each_measured_size_runs_the_preset_the_file_chose(tmp_path, op_log_program):
    """Intel's message size is collkit-bench's bytes: allreduce's vector (4096 B is 1024
    ints, not 4 x 1024), reduce_scatter_block's one block (1024 B is 256 ints a rank)."""
    path = tmp_path / "w.impi"
    path.write_text(writer.write(rules_at_4(), CANDS, None, ["test"]))
    env = backends.for_format("impi").tuned_env(OFFERS["impi"], str(path), None, 4)
    assert_sizes_run_the_chosen_presets(op_log_program, env)


@needs.impi
def test_the_proof_sees_intel_mpi_read_the_file_and_warn_on_a_broken_copy(tmp_path):
    """tune/proof.py: the correctness matrix passes with the file and no warning; with every
    preset set to 999 Intel MPI says 'Incorrect algorithm' at MPI_Init, which fails the copy."""
    from collkit.tune import proof
    path = tmp_path / "w.impi"
    path.write_text(writer.write(rules_at_4(), CANDS, None, ["test"]))
    shown = proof.check("impi", path, 4, timeout=240)
    assert shown.ok, "\n".join(shown.lines)
    assert "Incorrect algorithm" in shown.lines[1], shown.lines


def _campaign(path: Path) -> Path:
    """A campaign as measured under Intel MPI: preset 8 twice as fast as the default
    at 64 B, preset 2 at 64 KiB, the default best at 4 KiB (30 iterations each)."""
    import numpy as np
    path.mkdir()
    (path / "spec.toml").write_text('name = "impi"\ncollectives = ["allreduce"]\nsizes = ["64B"]\nranks = [2]\n'
                                    'dtype = "int32"\nmpi = ["impi"]\n\n[measure]\nmin_iterations = 30\n')
    (path / "resolved.json").write_text(json.dumps({"requested": {}, "points": [], "skipped": [],
                                                    "platform": {"name": "local"}}))
    medians = {64: {"default": 10, "impi_preset_8": 5, "impi_preset_2": 20},
               4096: {"default": 50, "impi_preset_8": 80, "impi_preset_2": 90},
               65536: {"default": 400, "impi_preset_8": 900, "impi_preset_2": 200}}
    recs, rng = [], np.random.default_rng(1)
    for p in (2, 4):
        for n, algs in medians.items():
            for alg, med in algs.items():
                times = list(med * p * (1 + 0.01 * rng.standard_normal(30)))
                recs.append({"id": f"allreduce/mpi/impi/{alg}/p{p}/{n}B", "collective": "allreduce", "backend": "mpi",
                             "mpi": "impi", "algorithm": alg, "ranks": p, "count": n // 4, "bytes": n,
                             "dtype": "int32", "op": "sum", "root": 0, "in_place": False, "status": "ok",
                             "reason": "", "iterations": 30, "times_us": times,
                             "stats_us": {"median": float(np.median(times))}})
    (path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


@needs.impi
def test_collkit_tune_writes_an_intel_file_from_an_intel_campaign(tmp_path):
    camp = _campaign(tmp_path / "c")
    out = collkit("tune", camp, "--format", "impi", "--out", tmp_path / "t.impi")
    assert out.returncode == 0, out.stderr
    settings = impi_adjust.read((tmp_path / "t.impi").read_text(), "t")
    assert [(s.variable, s.procs) for s in settings] == [("I_MPI_ADJUST_ALLREDUCE", (2, 2)),
                                                         ("I_MPI_ADJUST_ALLREDUCE", (4, 4))]
    for s in settings:
        assert [impi_adjust.chosen(s.items, n) for n in (64, 4096, 65536)] == [8, 0, 2], s.line()
    assert tuning.load(tmp_path / "t.impi", "t", "fix").library == "impi"


@needs.openmpi
def test_trial_refuses_an_intel_file_for_open_mpi_in_one_line(tmp_path):
    from collkit.program import trial_choice
    (tmp_path / "t.impi").write_text(GOOD)
    with pytest.raises(UserError, match=r"a tuning file for impi, but the program runs on openmpi") as err:
        trial_choice.from_options("openmpi", str(tmp_path / "t.impi"), None)
    assert "\n" not in str(err.value)


@needs.impi
def test_trial_refuses_per_count_lines_it_cannot_choose_between(tmp_path):
    from collkit.program import trial_choice
    (tmp_path / "t.impi").write_text(GOOD)
    with pytest.raises(UserError, match="per process count") as err:
        trial_choice.from_options("impi", str(tmp_path / "t.impi"), None)
    assert "\n" not in str(err.value)
    (tmp_path / "all.impi").write_text("I_MPI_ADJUST_BCAST=3\n")
    choice = trial_choice.from_options("impi", str(tmp_path / "all.impi"), None)
    assert choice.extra_env == {"I_MPI_ADJUST_BCAST": "3"}
