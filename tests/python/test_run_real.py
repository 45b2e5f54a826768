"""`collkit run` with the real collkit-bench under Open MPI and MPICH: forcing
takes effect and shows in the records, inside the default's launch (per point:
MPI_T, and for Open MPI a communicator made after the setting), and bad forcing is
refused before launch."""

import json

import needs
from cli_runner import collkit, one_line_error

SPEC = """
name = "real"
collectives = ["allreduce"]
sizes = ["64B", "4KiB"]
ranks = [4]
mpi = [{mpi}]
[backends]
mpi = [{algs}]
collkit = ["ring"]
[measure]
min_iterations = 3
time_budget_s = 0
validate = "all"
launches = 2
"""


def run(tmp_path, mpis, algs, *extra, metadata="standard"):
    spec = SPEC.format(mpi=", ".join(f'"{m}"' for m in mpis), algs=", ".join(f'"{a}"' for a in algs))
    spec = f'metadata = "{metadata}"\n' + spec
    (tmp_path / "spec.toml").write_text(spec)
    out = collkit("run", "spec.toml", "--out", "c", *extra, cwd=tmp_path)
    recs = []
    if (tmp_path / "c" / "records.jsonl").exists():
        recs = [json.loads(line) for line in (tmp_path / "c" / "records.jsonl").read_text().splitlines()]
    # the first round's record of each point (a point runs once per round)
    return out, {(r["mpi"], r["backend"], r["algorithm"], r["bytes"]): r for r in recs if r.get("repeat", 0) == 0}


@needs.openmpi
def test_forced_openmpi_algorithms_differ_in_their_effective_settings(tmp_path):
    out, recs = run(tmp_path, ["openmpi"], ["default", "ring", "recursive_doubling"])
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(recs) == 8 and all(r["status"] == "ok" for r in recs.values())
    ring = recs[("openmpi", "mpi", "ring", 4096)]
    rd = recs[("openmpi", "mpi", "recursive_doubling", 4096)]
    default = recs[("openmpi", "mpi", "default", 4096)]
    assert ring["effective"]["coll_tuned_allreduce_algorithm"] == "ring"
    assert rd["effective"]["coll_tuned_allreduce_algorithm"] == "recursive_doubling"
    assert ring["effective"]["coll_tuned_use_dynamic_rules"] == "true"
    assert default["effective"]["coll_tuned_allreduce_algorithm"] == "ignore"
    assert ring["cvars"]["coll_tuned_allreduce_algorithm"] == ring["native"] == "4"
    # coll/tuned serves both the default and the forced points (1 rank would be coll/self);
    # libcollkit's points run on point-to-point and name no component
    assert ring["component"] == rd["component"] == default["component"] == "tuned"
    assert "component" not in recs[("openmpi", "collkit", "ring", 4096)]
    # one launch for the default, libcollkit's ring and both forced algorithms (dynamic
    # rules for the launch, each id set for its point and read on a fresh communicator)
    assert ring["env"] == rd["env"] == default["env"] == {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}
    assert ring["launch"] == rd["launch"] == default["launch"] == recs[("openmpi", "collkit", "ring", 4096)]["launch"]
    for r in recs.values():
        assert r["iterations"] >= 3 and len(r["times_us"]) == r["iterations"]
        assert r["validated_iterations"] == r["iterations"]
        assert r["stats_us"]["min"] <= r["stats_us"]["median"] <= r["stats_us"]["max"]
    launches = [json.loads(line) for line in (tmp_path / "c" / "launches.jsonl").read_text().splitlines()]
    assert all("Open MPI" in l["library_version"] for l in launches)
    meta = json.loads((tmp_path / "c" / "metadata.json").read_text())
    assert "Open MPI" in meta["mpis"]["openmpi"]["library_version"]
    assert meta["knobs"] == [{"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}]
    export = collkit("export", "c", cwd=tmp_path)
    assert export.returncode == 0 and len(export.stdout.splitlines()) == 9


@needs.openmpi
def test_invalid_forced_id_is_refused_before_launch(tmp_path):
    out, recs = run(tmp_path, ["openmpi"], ["99"])
    one_line_error(out, prefix="collkit: error: spec.toml: unknown MPI library algorithm '99'")
    assert not recs


@needs.mpich
def test_forced_mpich_algorithms_are_set_after_mpi_init(tmp_path):
    # Rabenseifner's allreduce forced through the environment aborts MPICH's
    # MPI_Init; collkit-bench sets it through MPI_T for the point only.
    out, recs = run(tmp_path, ["mpich"], ["default", "rabenseifner", "mpich_ring"], metadata="full")
    assert out.returncode == 0, out.stdout + out.stderr
    assert all(r["status"] == "ok" for r in recs.values()), recs
    rab = recs[("mpich", "mpi", "rabenseifner", 4096)]
    assert rab["effective"]["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "reduce_scatter_allgather"
    assert rab["effective"]["MPIR_CVAR_COLLECTIVE_FALLBACK"] == "error"
    assert rab["cvars"] == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "reduce_scatter_allgather",
                            "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0"}
    assert rab["effective"]["MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE"] == "0"
    assert rab["launch"] == recs[("mpich", "mpi", "default", 4096)]["launch"]   # the default's launch
    # Restored after each point: the default that runs next to it is untouched.
    assert recs[("mpich", "mpi", "default", 4096)]["effective"]["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "auto"
    # metadata = "full": the library's whole parameter listing and every launch.
    assert "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM" in (tmp_path / "c" / "library-mpich.txt").read_text()
    meta = json.loads((tmp_path / "c" / "metadata.json").read_text())
    assert len(meta["launches"]) == 2 and "MPICH" in meta["mpis"]["mpich"]["library_version"]   # 1 group x 2
    # the device's own allreduce put back after each forced point: on for the default, which
    # runs after them in the second round (its points in reverse order)
    later = [json.loads(line) for line in (tmp_path / "c" / "records.jsonl").read_text().splitlines()]
    default = next(r for r in later if r["algorithm"] == "default" and r["bytes"] == 4096 and r["repeat"] == 1)
    assert default["effective"]["MPIR_CVAR_DEVICE_COLLECTIVES"] == "percoll"
    assert default["effective"]["MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE"] == "1"
    assert default["effective"]["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "auto"


@needs.mpich
def test_mpich_algorithm_outside_its_conditions_is_skipped_with_the_reason(tmp_path):
    spec = SPEC.format(mpi='"mpich"', algs='"rabenseifner"').replace('["64B", "4KiB"]', '["8B"]')
    (tmp_path / "spec.toml").write_text(spec)
    res = collkit("run", "spec.toml", "--out", "c", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    recs = [json.loads(line) for line in (tmp_path / "c" / "records.jsonl").read_text().splitlines()]
    skipped = [r for r in recs if r["status"] == "skipped"]
    assert len(skipped) == 1 and "count >= the largest power of two" in skipped[0]["reason"]


@needs.impi
def test_forced_intel_mpi_presets_run_one_launch_each_with_their_variable(tmp_path):
    out, recs = run(tmp_path, ["impi"], ["default", "impi_preset_1", "impi_preset_8"])
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(recs) == 8 and all(r["status"] == "ok" for r in recs.values())
    p1, p8 = recs[("impi", "mpi", "impi_preset_1", 4096)], recs[("impi", "mpi", "impi_preset_8", 4096)]
    default = recs[("impi", "mpi", "default", 4096)]
    assert p1["env"] == {"I_MPI_ADJUST_ALLREDUCE": "1"} and p8["env"] == {"I_MPI_ADJUST_ALLREDUCE": "8"}
    assert "I_MPI_ADJUST_ALLREDUCE" not in default["env"]
    # read at MPI_Init: each preset its own launch, none shared with the default's
    assert len({p1["launch"], p8["launch"], default["launch"]}) == 3


@needs.openmpi5
def test_forced_open_mpi_5_algorithms_are_tuneds_with_han_set_aside(tmp_path):
    out, recs = run(tmp_path, ["openmpi5"], ["default", "ring", "recursive_doubling"])
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(recs) == 8 and all(r["status"] == "ok" for r in recs.values())
    ring = recs[("openmpi5", "mpi", "ring", 4096)]
    assert ring["effective"]["coll_tuned_allreduce_algorithm"] == "ring"
    # han outranks tuned in 5.0 (ompi_info): forcing tuned's algorithm sets it aside
    assert ring["env"]["OMPI_MCA_coll"] == "^han"
    assert ring["component"] == recs[("openmpi5", "mpi", "default", 4096)]["component"] == "tuned"
