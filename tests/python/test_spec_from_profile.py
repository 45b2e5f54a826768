"""`collkit spec --from-profile`: which classes become which cases, what is listed as
not measurable and why, the written spec loads and plans (constraints end as skips),
bad input exits 2 with one line, and a generated spec runs for real."""

import hashlib
import json
import tomllib
from pathlib import Path

import pytest

import needs
from cli_runner import collkit, in_process, one_line_error
from collkit.backends import openmpi
from collkit.campaign import plan as planner
from collkit.campaign import platform as platforms
from collkit.campaign import spec as specs
from collkit.campaign.platform import Platform, PlatformMPI
from collkit.library import registry
from collkit.common.errors import UserError
from collkit.mpis.install import MPIInstall
from collkit.program.spec_from_profile import written_from
from program_fixture import call, write
from test_trial import mpis  # noqa: F401 (a fixture)

FIXTURES = Path(__file__).parent / "fixtures"

# Shares of a 1 s time in collectives (time_max_s sums to 1.0)
CLASSES = [
    call("allreduce", 8, 0.40, dtype="double", datatype="MPI_DOUBLE", op="sum", calls=10000),
    call("allreduce", 4096, 0.20, dtype="double", datatype="MPI_DOUBLE", op="sum"),
    call("allreduce", 64, 0.10, dtype="int32", datatype="MPI_INT", op="max", in_place=True),
    call("bcast", 1000, 0.10, root=2),
    call("barrier", 0, 0.05, datatype=""),
    call("allgatherv", 256, 0.04),
    call("allreduce", 16, 0.03, dtype="double", datatype="MPI_DOUBLE", op="user"),
    call("reduce", 48, 0.02, dtype=None, datatype="MPI_DOUBLE_INT", op="minloc", root=0),
    call("allreduce", 32, 0.02, dtype=None, datatype="derived", op="sum"),
    call("allgather", 128, 0.015, comm="inter"),
    call("bcast", 0, 0.0149, root=0),
    call("alltoall", 64, 0.0001),
    call("allgather", 24, 0.03, comm="c0x2", comm_size=2),
]


def generate(tmp_path, capsys, classes=CLASSES, *extra):
    prof = write(tmp_path / "app.profile.json", classes)
    out = tmp_path / "app.toml"
    res = in_process(capsys, "spec", "--from-profile", prof, "--out", out, *extra)
    assert res.returncode == 0, res.stderr
    return out, res.stdout


def test_classes_become_cases_at_their_exact_bytes(tmp_path, capsys):
    out, stdout = generate(tmp_path, capsys)
    raw = tomllib.loads(out.read_text())
    cases = {(c["collectives"], c["ranks"], c["dtype"], c["op"], c["root"], c["in_place"]): c["sizes"]
             for c in raw["case"]}
    assert cases == {
        ("allreduce", 4, "double", "sum", 0, False): [8, 4096],
        ("allreduce", 4, "int32", "max", 0, True): [64],
        ("bcast", 4, "int8", "sum", 2, False): [1000],       # data movement: int8, count = bytes
        ("allgather", 2, "int8", "sum", 0, False): [24],     # a 2-rank sub-communicator: a 2-rank world
    }
    assert raw["mpi"] == ["openmpi"]
    assert raw["backends"] == {"mpi": ["default", "all"], "collkit": "all"}
    assert raw["measure"]["min_iterations"] >= 6      # a median interval needs 6 iterations
    # the alltoall class is measurable but holds 0.01 % of the time: below the default 1 %
    assert "alltoall" not in out.read_text().split("\nname =")[1]
    spec = specs.load(out)
    assert len(spec.cases) == 4 and spec.ranks == (2, 4)


def test_what_cannot_be_measured_is_listed_with_the_reason(tmp_path, capsys):
    out, stdout = generate(tmp_path, capsys)
    header = out.read_text().split("\nname =")[0]
    expected = {
        "barrier comm world": "a barrier",
        "allgatherv comm world": "collkit-bench measures equal blocks only",
        "allreduce comm world 4 ranks 16B double user": "a user op",
        "reduce comm world 4 ranks 48B MPI_DOUBLE_INT minloc": "op minloc",
        "allreduce comm world 4 ranks 32B derived sum": "datatype derived",
        "allgather comm inter": "an intercommunicator",
        "bcast comm world 4 ranks 0B": "0 bytes",
    }
    for what, why in expected.items():
        line = next((ln for ln in header.splitlines() if what in ln), None)
        assert line is not None and why in line, (what, header)
        assert any(what in ln and why in ln for ln in stdout.splitlines() if ln.startswith("not measured:")), stdout
    assert "# not measured: 7 classes" in header


def test_min_share_chooses_the_classes(tmp_path, capsys):
    out, _ = generate(tmp_path, capsys, CLASSES, "--min-share", "0")
    assert any(c["collectives"] == "alltoall" for c in tomllib.loads(out.read_text())["case"])
    out, _ = generate(tmp_path, capsys, CLASSES, "--min-share", "15")
    cases = tomllib.loads(out.read_text())["case"]
    assert [(c["collectives"], c["sizes"]) for c in cases] == [("allreduce", [8, 4096])]


def test_the_written_spec_plans_with_constraints_as_skips(tmp_path, capsys):
    classes = [call("allreduce", 8, 0.5, dtype="double", datatype="MPI_DOUBLE", op="sum", comm_size=3),
               call("alltoall", 12, 0.3, comm_size=3), call("bcast", 7, 0.2, comm_size=3, root=1)]
    out, _ = generate(tmp_path, capsys, classes)
    offer = openmpi.build_offer(openmpi.parse((FIXTURES / "ompi_info-4.1.4.txt").read_text()), tool="ompi_info")
    platform = Platform("test", "test", {"openmpi": PlatformMPI(MPIInstall("openmpi", Path("/bin/true")),
                                                                Path("/bin/true"))})
    plan = planner.build(specs.load(out), platform, registry.load(), discover=lambda pm: offer)
    every = plan.points + plan.skipped
    assert {p.collective for p in plan.points} == {"allreduce", "alltoall", "bcast"}
    assert all(p.ranks == 3 for p in every)
    assert {(p.collective, p.bytes, p.count, p.dtype, p.root) for p in every} == {
        ("allreduce", 8, 1, "double", 0), ("alltoall", 12, 12, "int8", 0), ("bcast", 7, 7, "int8", 1)}
    # the default and every libcollkit algorithm of each collective have a point, run or skipped
    for coll in ("allreduce", "alltoall", "bcast"):
        assert any(p.backend == "mpi" and p.algorithm == "default" and p.collective == coll for p in plan.points)
        names = {a.name for a in registry.load() if a.collective == coll}
        assert names == {p.algorithm for p in every if p.backend == "collkit" and p.collective == coll}
    # what Open MPI cannot do at 3 ranks and 1 element is a skipped point with the reason, not a refusal
    reasons = {(p.collective, p.algorithm): p.skip_reason for p in plan.skipped}
    assert "ring needs count >= number of ranks" in reasons[("allreduce", "ring")]
    assert "two_proc needs exactly 2 ranks" in reasons[("alltoall", "two_proc")]


@pytest.mark.parametrize("args, message", [
    (("--min-share", "101"), "--min-share 101: give a percentage from 0 to 100"),
    (("--min-share", "nan"), "--min-share nan"),
])
def test_bad_options_exit_2_with_one_line(tmp_path, capsys, args, message):
    prof = write(tmp_path / "p.json", CLASSES)
    one_line_error(in_process(capsys, "spec", "--from-profile", prof, "--out", tmp_path / "s.toml", *args), message)
    assert not (tmp_path / "s.toml").exists()


def test_bad_profiles_exit_2_with_one_line(tmp_path, capsys):
    cases = {
        "incomplete": (write(tmp_path / "inc.json", CLASSES, complete=False, exit_status=3), "incomplete"),
        "foreign": (tmp_path / "foreign.json", "damaged or foreign profile"),
        "not json": (tmp_path / "text.json", "not JSON"),
        "missing": (tmp_path / "missing.json", "cannot read the profile"),
        "no collectives": (write(tmp_path / "none.json", []), "no time in collectives"),
        "nothing measurable": (write(tmp_path / "bar.json", [call("barrier", 0, 1.0, datatype="")]),
                               "no measurable class"),
    }
    (tmp_path / "foreign.json").write_text(json.dumps({"format": "something-else"}))
    (tmp_path / "text.json").write_text("{half")
    for name, (path, message) in cases.items():
        one_line_error(in_process(capsys, "spec", "--from-profile", path, "--out", tmp_path / "s.toml"), message)
        assert not (tmp_path / "s.toml").exists()


@needs.openmpi
def test_the_written_spec_plans_on_this_machine(tmp_path, capsys):
    """What `collkit run` resolves before it launches: this machine's Open MPI offer."""
    out, _ = generate(tmp_path, capsys, CLASSES[:4])
    plan = planner.build(specs.load(out), platforms.detect(), registry.load())
    assert {(p.collective, p.bytes) for p in plan.points if p.algorithm == "default"} == {
        ("allreduce", 8), ("allreduce", 4096), ("allreduce", 64), ("bcast", 1000)}


@needs.openmpi
def test_a_generated_spec_runs_for_real(tmp_path, capsys):
    """Two classes at 2 ranks under Open MPI: every point ok or skipped, none failed."""
    classes = [call("allreduce", 24, 0.6, dtype="double", datatype="MPI_DOUBLE", op="max", comm_size=2,
                    in_place=True),
               call("bcast", 1000, 0.4, comm_size=2, root=1)]
    out, _ = generate(tmp_path, capsys, classes)
    text = out.read_text()
    # Time only: no budget per point, and the library's default without the forced
    # algorithms (one launch each; their planning is test_the_written_spec_plans_*);
    # the cases, sizes and libcollkit's algorithms stay as generated.
    trimmed = text.replace("time_budget_s = 0.02", "time_budget_s = 0").replace(
        'mpi = ["default", "all"]', 'mpi = ["default"]').replace("launches = 3 ", "launches = 1 ")
    assert trimmed.count("time_budget_s = 0\n") == 1 and 'mpi = ["default"]' in trimmed
    assert "\nlaunches = 1 " in trimmed
    out.write_text(trimmed)
    done = collkit("run", out.name, "--out", "c", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    recs = [json.loads(ln) for ln in (tmp_path / "c" / "records.jsonl").read_text().splitlines()]
    assert recs and not [r for r in recs if r["status"] not in ("ok", "skipped")]
    default = {(r["collective"], r["bytes"], r["dtype"], r["op"], r["root"], r["in_place"]) for r in recs
               if r["backend"] == "mpi" and r["algorithm"] == "default" and r["status"] == "ok"}
    assert default == {("allreduce", 24, "double", "max", 0, True), ("bcast", 1000, "int8", "sum", 1, False)}
    assert any(r["backend"] == "collkit" and r["status"] == "ok" for r in recs)
    requested = json.loads((tmp_path / "c" / "resolved.json").read_text())["requested"]
    assert [(c["collectives"], c["sizes"]) for c in requested["cases"]] == [(["allreduce"], [24]), (["bcast"], [1000])]


def test_the_spec_records_the_profile_it_was_written_from(tmp_path, capsys):
    out, _ = generate(tmp_path, capsys)
    prof = tmp_path / "app.profile.json"
    assert tomllib.loads(out.read_text())["from_profile"] == {
        "path": str(prof.resolve()), "sha256": hashlib.sha256(prof.read_bytes()).hexdigest()}


def _campaign(tmp_path, spec_text):
    camp = tmp_path / "camp"
    camp.mkdir(parents=True)
    (camp / "spec.toml").write_text(spec_text)       # as `collkit run` keeps it
    return camp


def test_trial_takes_the_profile_the_campaigns_spec_was_written_from(tmp_path, capsys):
    out, _ = generate(tmp_path, capsys)
    prof = tmp_path / "app.profile.json"
    camp = _campaign(tmp_path, out.read_text())
    assert written_from(camp) == prof.resolve()
    by_hand = _campaign(tmp_path / "h", "collectives = [\"allreduce\"]\nsizes = [8]\nranks = [2]\n"
                                        "[backends]\ncollkit = \"all\"\n")
    assert written_from(by_hand) is None         # the trial predicts from its first default run, as before
    prof.write_bytes(prof.read_bytes() + b" ")   # profiled again at the same path
    with pytest.raises(UserError, match="has changed since .* give --profile"):
        written_from(camp)
    prof.unlink()
    with pytest.raises(UserError, match="which is not there: give --profile"):
        written_from(camp)


def test_trial_refuses_a_changed_profile_before_any_run(mpis, tmp_path, capsys):
    out, _ = generate(tmp_path, capsys)
    camp = _campaign(tmp_path, out.read_text())
    prof = tmp_path / "app.profile.json"
    prof.write_bytes(prof.read_bytes() + b" ")
    ran = tmp_path / "ran"
    res = in_process(capsys, "trial", "--runs", "4", "--algorithm", "allreduce=ring", "--campaign", camp,
                     "--", "/bin/sh", "-c", f"touch {ran}")
    one_line_error(res, str(prof.resolve()), "has changed", "--profile")
    assert not ran.exists()
