"""Intel MPI's own JSON tuning tree (backends/impi_tree.py, tune/writers/impi_json.py):
told from MPICH's JSON by its content, refused in one line where malformed, written by
`collkit tune --format impi-json` from the decisions of the I_MPI_ADJUST writer, loaded
by I_MPI_TUNING=FILE in campaigns and trials, and followed by the library (the logging
op of test_impi_tuning.py shows which preset's schedule runs)."""

from __future__ import annotations

import json

import pytest

import needs
from cli_runner import collkit, one_line_error
from collkit import backends
from collkit.backends import impi, impi_tree
from collkit.campaign import tuning
from collkit.common.errors import UserError
from collkit.tune.decide import DEFAULT
from collkit.tune.writers import impi_json as writer
from test_impi_tuning import (CANDS, OFFERS, _campaign, _lens, assert_sizes_run_the_chosen_presets,  # noqa: F401
                              op_log_program, plan, rules_at_4)   # op_log_program: a fixture

M = impi_tree.MAX_BOUND


def tree(*branches: tuple[int, list[tuple[int, int]]], coll: str = "Allreduce", stem: str = "ALLREDUCE") -> dict:
    return {f"coll={coll}": {"ppn=-1": {f"comm_size={p}": {"comm_id=-1": {
        f"msg_size={hi}": {f"{stem}={preset}": {}} for hi, preset in sizes}} for p, sizes in branches}}}


GOOD = tree((4, [(4095, 8), (M, 2)]))


# ------------------------------------------------------------------ the format

def test_the_content_tells_intels_tree_from_mpichs_json(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps(GOOD))
    tf = tuning.load(tmp_path / "t.json", "t", "fix")
    assert tf.library == "impi-json" and tf.collectives == ("allreduce",)
    assert backends.for_format("impi-json") is backends.backend_for("impi")
    assert backends.backend_for("impi").reads("impi-json") and not backends.backend_for("mpich").reads("impi-json")
    assert "impi-json" in backends.tuning_formats()
    mpich = {"collective=allreduce": {"comm_size<=8": {"algorithm=MPIR_Allreduce_intra_ring": {}}}}
    (tmp_path / "m.json").write_text(json.dumps(mpich))
    assert tuning.load(tmp_path / "m.json", "m", "fix").library == "mpich"


def test_what_2021_19_runs_upper_bounds_in_file_order_last_beyond():
    t = impi_tree.read(json.dumps(tree((3, [(4095, 8), (M, 2)]), (5, [(M, 1)]))), "t")
    assert [t.chosen("ALLREDUCE", p, 4096) for p in (2, 3, 4, 5, 6)] == [2, 2, 1, 1, 1]
    assert [t.chosen("ALLREDUCE", 3, n) for n in (0, 4095, 4096)] == [8, 8, 2]
    assert t.chosen("BCAST", 3, 1) is None


@pytest.mark.parametrize("doc, message", [
    ('{"coll=Allreduce": {"ppn=-1": {', "not valid JSON"),
    (tree((4, [(M, 8)]), coll="Allredux"), "names no collective"),
    (tree((4, [(M, 8)]), stem="BCAST"), "ignores a leaf of another collective"),
    (tree((4, [(M, 8)]), stem="ALLREDUCE=x"), "is not"),
    (tree((4, [(M, 8), (4095, 2)])), "must ascend in file order"),
    (tree((5, [(M, 8)]), (4, [(M, 2)])), "must ascend in file order"),
    (tree((0, [(M, 8)])), "must ascend in file order"),
    ({"coll=Allreduce": {"ppn=4": {}}}, 'one key "ppn=-1"'),
    ({"coll=Allreduce": {"ppn=-1": {"comm_size=4": {"comm_id=0": {}}}}}, 'one key "comm_id=-1"'),
    ({"coll=Allreduce": {"ppn=-1": {"comm_size=4": {"comm_id=-1": {}}}}}, "msg_size=N"),
    ({"coll=Allreduce": {"ppn=-1": {"comm_size=4": {"comm_id=-1": {"msg_size=9": "ALLREDUCE=8"}}}}},
     "a string leaf crashes"),
    ({"coll=Allreduce": {"ppn=-1": {"comm_size=4": {"comm_id=-1": {"size=9": {"ALLREDUCE=8": {}}}}}}},
     'is not "msg_size=N"'),
    ({"coll=Allreduce": {"ppn=-1": {"comm_size=4": {"comm_id=-1": {"msg_size=9": {"ALLREDUCE=8": {"x": 1}}}}}}},
     "is not"),
    ({"coll=Allreduce": {}, "collective=bcast": {}}, "is not 'collective=NAME'"),
])
def test_a_malformed_tree_is_refused_in_one_line(tmp_path, doc, message):
    (tmp_path / "bad.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    with pytest.raises(UserError) as err:
        tuning.load(tmp_path / "bad.json", "bad", "fix")
    assert message in str(err.value) and "bad.json" in str(err.value) and "\n" not in str(err.value)


def test_cli_refuses_a_malformed_tree_in_one_line_with_exit_2(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps(tree((4, [(M, 8), (4095, 2)]))))
    (tmp_path / "spec.toml").write_text(
        "collectives = [\"allreduce\"]\nsizes = [\"64B\"]\nranks = [2]\nmpi = [\"openmpi\"]\n"
        "[backends]\nmpi = [\"default\", \"tuned:x.json\"]\n")
    one_line_error(collkit("run", "spec.toml", "--out", "c", "--dry-run", cwd=tmp_path), "x.json",
                   "must ascend in file order")


def test_a_tree_is_refused_where_the_spec_measures_no_intel_mpi(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps(GOOD))
    with pytest.raises(UserError, match=r"is an Intel MPI JSON tuning tree, but the spec measures openmpi") as err:
        plan(tmp_path, ["tuned:t.json"], mpis=("openmpi",))
    assert "\n" not in str(err.value)


def test_points_load_the_tree_through_i_mpi_tuning_at_every_rank_count(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps(GOOD))
    p = plan(tmp_path, ["default", "tuned:t.json"], ranks=(2, 4))
    envs = {pt.ranks: dict(pt.env) for pt in p.points if pt.algorithm == "tuned:t.json"}
    assert envs == {r: {"I_MPI_TUNING": str(tmp_path / "t.json")} for r in (2, 4)}


def test_a_preset_past_the_librarys_range_is_refused(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps(tree((4, [(4095, 8), (M, 33)]))))
    with pytest.raises(UserError, match=r"I_MPI_ADJUST_ALLREDUCE names preset 33, past Intel MPI 2021.19.0's range"):
        plan(tmp_path, ["tuned:t.json"])


def test_the_broken_copy_names_a_preset_past_every_range():
    broken = impi_tree.read(backends.for_format("impi-json").broken_copy(json.dumps(GOOD)), "b")
    assert {p for _, p in broken.presets()} == {impi.BROKEN_PRESET}
    assert [b.comm_size for _, bs in broken.colls for b in bs] == [4]


# ------------------------------------------------------------------ collkit tune --format impi-json

def test_the_writer_keeps_the_adjust_writers_decisions_and_the_default_elsewhere():
    text = writer.write(rules_at_4(), CANDS, None, ["test"])
    t = impi_tree.read(text, "w")
    assert t.collectives() == ("allreduce", "reduce_scatter_block")
    ids = {DEFAULT: 0, "impi_preset_8": 8, "impi_preset_5": 5, "impi_preset_3": 3}
    stems = {"allreduce": "ALLREDUCE", "reduce_scatter": "REDUCE_SCATTER_BLOCK"}
    for r in rules_at_4():
        for n in r.at_bytes:
            assert t.chosen(stems[r.collective], r.ranks, n) == ids[r.choice], r
    # untuned counts, below and above: preset 0
    assert {t.chosen("ALLREDUCE", p, n) for p in (1, 3, 5, 64) for n in (0, 4096, M)} == {0}
    with pytest.raises(UserError, match="no preset was chosen"):
        writer.write([r for r in rules_at_4() if r.choice == DEFAULT], CANDS, None, [])


# ------------------------------------------------------------------ in the library

def _tree_env(path) -> dict[str, str]:
    return backends.for_format("impi-json").tuned_env(OFFERS["impi"], str(path), None, None)


@needs.impi
def test_intel_mpi_runs_each_measured_size_as_the_tree_chose(tmp_path, op_log_program):
    """At 4 ranks, every measured size runs the chosen preset's schedule (which differs
    from the default's there), and preset 0 the default's."""
    path = tmp_path / "w.json"
    path.write_text(writer.write(rules_at_4(), CANDS, None, ["test"]))
    env = _tree_env(path)
    assert env == {"I_MPI_TUNING": str(path.resolve())}
    assert_sizes_run_the_chosen_presets(op_log_program, env)


@needs.impi
def test_comm_size_is_an_upper_bound_and_unmentioned_collectives_keep_the_default(tmp_path, op_log_program):
    """comm_size=3 -> 8 (ring), comm_size=5 -> 2: 3 ranks run ring, 4 ranks preset 2, 6
    ranks (above every bound) preset 2 too; reduce_scatter_block, not in the tree, keeps
    the default's schedule."""
    path = tmp_path / "cs.json"
    path.write_text(json.dumps(tree((3, [(M, 8)]), (5, [(M, 2)]))))
    env = _tree_env(path)
    assert _lens(op_log_program, "allreduce", 1024, env) == _lens(op_log_program, "allreduce", 1024, {"I_MPI_ADJUST_ALLREDUCE": "2"})
    assert _lens(op_log_program, "allreduce", 1024, env) != _lens(op_log_program, "allreduce", 1024, {"I_MPI_ADJUST_ALLREDUCE": "8"})
    assert _lens(op_log_program, "reduce_scatter_block", 256, env) == _lens(op_log_program, "reduce_scatter_block", 256, {})
    below = tmp_path / "below.json"
    below.write_text(json.dumps(tree((5, [(M, 8)]), (8, [(M, 2)]))))
    assert _lens(op_log_program, "allreduce", 1024, _tree_env(below)) == \
        _lens(op_log_program, "allreduce", 1024, {"I_MPI_ADJUST_ALLREDUCE": "8"})


@needs.impi
def test_the_proof_sees_intel_mpi_parse_the_tree_and_warn_on_a_broken_copy(tmp_path):
    from collkit.tune import proof
    path = tmp_path / "w.json"
    path.write_text(writer.write(rules_at_4(), CANDS, None, ["test"]))
    shown = proof.check("impi-json", path, 4, timeout=240)
    assert shown.ok, "\n".join(shown.lines)
    assert "Incorrect algorithm" in shown.lines[1], shown.lines


@needs.impi
def test_collkit_tune_writes_a_tree_from_an_intel_campaign(tmp_path):
    camp = _campaign(tmp_path / "c")
    out = collkit("tune", camp, "--format", "impi-json", "--out", tmp_path / "t.json")
    assert out.returncode == 0, out.stderr
    t = impi_tree.read((tmp_path / "t.json").read_text(), "t")
    for p in (2, 4):
        assert [t.chosen("ALLREDUCE", p, n) for n in (64, 4096, 65536)] == [8, 0, 2]
    assert tuning.load(tmp_path / "t.json", "t", "fix").library == "impi-json"
    # the tree cannot leave an untuned count to the .dat (preset 0 is Intel's built-in
    # choice): tune says so, and names the way that can
    assert ("note: under this tree, allreduce run Intel MPI's built-in choice (preset 0), not its .dat file's "
            "default, at every rank count but 2 and 4; --format impi leaves those counts to the .dat") in out.stdout


@needs.impi
def test_trial_runs_the_tree_through_i_mpi_tuning(tmp_path):
    from collkit.program import trial_choice
    (tmp_path / "t.json").write_text(json.dumps(GOOD))
    choice = trial_choice.from_options("impi", str(tmp_path / "t.json"), None)
    assert choice.extra_env == {"I_MPI_TUNING": str(tmp_path / "t.json")}


@needs.impi
def test_preset_0_in_the_tree_is_intels_fallback_as_from_the_environment(tmp_path, op_log_program):
    """A collective the tree names is decided by the tree at every count: preset 0 there
    runs what I_MPI_ADJUST_<COLL>=0 runs (on this machine's .dat, at 5 ranks and 16 KiB,
    not the plain run's schedule: docs/tuning-files.md)."""
    path = tmp_path / "zero.json"
    path.write_text(json.dumps(tree((4, [(M, 8)]), (M, [(M, 0)]))))
    tuned = _lens(op_log_program, "allreduce", 4096, _tree_env(path), ranks=5)
    assert tuned == _lens(op_log_program, "allreduce", 4096, {"I_MPI_ADJUST_ALLREDUCE": "0"}, ranks=5)
    assert tuned != _lens(op_log_program, "allreduce", 4096, {"I_MPI_ADJUST_ALLREDUCE": "8"}, ranks=5)


def test_minus_one_is_any_and_only_last():
    t = impi_tree.read(json.dumps(tree((2, [(M, 10)]), (-1, [(4095, 2), (-1, 8)]))), "t")
    assert [t.chosen("ALLREDUCE", 2, 4096), t.chosen("ALLREDUCE", 4, 4092), t.chosen("ALLREDUCE", 4, 4096)] == \
        [10, 2, 8]
    with pytest.raises(UserError, match="must be the last") as err:
        impi_tree.read(json.dumps(tree((-1, [(M, 10)]), (4, [(M, 8)]))), "t")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name, text, env", [
    ("t.json", json.dumps(GOOD), lambda copy: {"I_MPI_TUNING": str(copy)}),
    ("a.impi", "@4 I_MPI_ADJUST_ALLREDUCE=8\n", lambda copy: {"I_MPI_ADJUST_ALLREDUCE": "8"}),
])
def test_a_campaign_plans_intel_points_before_its_copy_exists(tmp_path, name, text, env):
    """`collkit run` plans before store.py writes DIR/tuning/NAME: the environment comes
    from the file as loaded, and the tree's variable names the copy."""
    from collkit.campaign import plan as planner
    from collkit.campaign import spec as specs
    from test_impi_tuning import PLATFORM
    (tmp_path / name).write_text(text)
    (tmp_path / "spec.toml").write_text(
        f"collectives = [\"allreduce\"]\nsizes = [\"64B\"]\nranks = [4]\nmpi = [\"impi\"]\n"
        f"[backends]\nmpi = [\"default\", \"tuned:{name}\"]\n")
    camp = tmp_path / "camp"
    p = planner.build(specs.load(tmp_path / "spec.toml"), PLATFORM, [], discover=lambda pm: OFFERS[pm.name],
                      campaign_dir=camp)
    got = [dict(pt.env) for pt in p.points if pt.algorithm == f"tuned:{name}"]
    assert got == [env(camp.resolve() / "tuning" / name)] and not (camp / "tuning").exists()
