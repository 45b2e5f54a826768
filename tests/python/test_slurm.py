"""The Slurm launcher: the platform's [slurm] table, the batch scripts, and whole
campaigns through a real one-node Slurm on localhost (slurm_fixture.py), compared
with a local run of the same spec: one allocation holds every launch of the
campaign (its launch groups' rounds), each a job step on the allocation's nodes. The Slurm tests need root and the slurm-wlm/munge
packages (needs.slurm); CI installs them."""

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import needs
import slurm_fixture
from cli_runner import HANG_GUARD_S, REPO, collkit, one_line_error, start
from collkit.campaign import platform as platforms
from collkit.campaign.store import Campaign
from collkit.common.errors import UserError
from collkit.launch import slurm
from collkit.mpis import known, remote

OPENMPI = platforms.detect().mpis.get("openmpi")
BENCH = OPENMPI.bench if OPENMPI else Path("/nonexistent/collkit-bench")

SPEC = """
name = "slurm"
collectives = ["allreduce"]
sizes = ["8B", "512B"]
ranks = [2]
mpi = ["openmpi"]
[backends]
mpi = ["default", "ring"]
collkit = ["ring", "recursive_doubling"]
[measure]
min_iterations = 3
time_budget_s = 0
launches = 2
"""
# 2 sizes x (default, forced ring, 2 libcollkit algorithms), all in one launch group (the
# forced ring per point, MPI_T), launched twice: 2 job steps of one job
TOTAL = 8
LAUNCHES = 2


def platform_text(extra: str = "") -> str:
    return (f'name = "local-slurm"\n[mpi.openmpi]\nbench = "{BENCH}"\n'
            f'[slurm]\nlauncher = ["mpirun"]\ntime_limit = "5"\npoll_s = 0.3\n{extra}')


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / "records.jsonl").read_text().splitlines()]


# ------------------------------------------------------------------ no Slurm needed
def test_platform_slurm_table_is_parsed(tmp_path):
    f = tmp_path / "cluster.toml"
    f.write_text('[mpi.openmpi]\nmpirun = "/opt/ompi/bin/mpirun"\nbench = "/opt/ck/collkit-bench"\n'
                 '[slurm]\npartition = "boost"\naccount = "proj"\nqos = "normal"\ntime_limit = "00:10:00"\n'
                 'setup = ["module load openmpi"]\nlauncher = ["srun", "--mpi=pmix"]\ntasks_per_node = 4\n'
                 'gpus = 2\nsbatch_flags = ["--exclusive"]\npoll_s = 2\n')
    p = platforms.load(f)
    s = p.slurm
    assert (s.partition, s.account, s.qos, s.time_limit) == ("boost", "proj", "normal", "00:10:00")
    assert s.launcher == ("srun", "--mpi=pmix") and s.setup == ("module load openmpi",)
    assert (s.tasks_per_node, s.gpus, s.sbatch_flags, s.poll_s) == (4, 2, ("--exclusive",), 2.0)
    assert s.nodes(8) == 2 and s.nodes(9) == 3
    assert p.mpis["openmpi"].bench == Path("/opt/ck/collkit-bench")


@pytest.mark.parametrize("table, message", [
    ('partiton = "x"', "unknown key 'partiton' in [slurm] (did you mean 'partition'?)"),
    ('launcher = ["aprun"]', "launcher must start with one of srun, mpirun"),
    ('tasks_per_node = -1', "tasks_per_node must be a non-negative integer"),
    ('poll_s = 0', "poll_s must be a positive number"),
    ('setup = "module load x"', "setup must be a list of strings"),
])
def test_bad_slurm_tables_are_one_line_errors(tmp_path, table, message):
    (tmp_path / "c.toml").write_text(f'[mpi.openmpi]\nmpirun = "/x/mpirun"\n[slurm]\n{table}\n')
    with pytest.raises(UserError, match=re.escape(message)):
        platforms.load(tmp_path / "c.toml")
    (tmp_path / "s.toml").write_text(SPEC)
    one_line_error(collkit("run", "s.toml", "--platform", "c.toml", "--dry-run", cwd=tmp_path), message.split(" (")[0])


def test_a_slow_controller_is_asked_again_not_fatal(monkeypatch):
    """scontrol timing out once (a busy controller) must not end the following of
    a job: the loop asks again at its next poll and ends on the job's own state."""
    answers = iter([slurm.SlurmSlow("scontrol did not answer within 30 s"), ("RUNNING", "", ""),
                    ("COMPLETED", "", "0:0")])

    def query(job_id):
        a = next(answers)
        if isinstance(a, Exception):
            raise a
        return a

    class Quiet:
        notes: list = []

        def note(self, text):
            self.notes.append(text)

        def working_on(self, text):
            pass

    class Follow:
        def __init__(self, job):
            self.job = job

        def poll(self):
            return False

    finished = []
    monkeypatch.setattr(slurm, "query", query)
    monkeypatch.setattr(slurm, "save_jobs", lambda campaign, jobs: None)
    monkeypatch.setattr(slurm, "_finish", lambda campaign, f, progress: finished.append(f.job.state))
    job = slurm.Job(number=1, steps=[slurm.Step(1, 0, "openmpi", 2, 1, {}, ["a"])], job_id="7", state="PENDING")
    progress = Quiet()
    slurm._follow(None, [job], [Follow(job)], 0.01, progress)
    assert finished == ["COMPLETED"]
    assert any("did not answer" in n and "asking again" in n for n in progress.notes)


def test_script_quotes_input_and_holds_every_setting(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[mpi.openmpi]\nmpirun = "/opt/ompi/bin/mpirun"\nargs = ["--bind-to", "core"]\n'
                 'bench = "/opt/ck bench/collkit-bench"\nenv = { OMPI_MCA_btl = "^openib" }\n'
                 '[slurm]\npartition = "p"\naccount = "a"\nqos = "q"\ntime_limit = "10"\n'
                 'setup = ["module load x"]\nlauncher = ["srun", "--mpi=pmix"]\ntasks_per_node = 2\ngpus = 1\n'
                 'sbatch_flags = ["--constraint=a b"]\n')
    p = platforms.load(f)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "raw").mkdir()
    (tmp_path / "c" / "resolved.json").write_text('{"requested": {"name": "n; rm -rf /"}}')
    camp = Campaign(tmp_path / "c")
    job = slurm.Job(number=7, steps=[slurm.Step(7, 0, "openmpi", 4, 2, {"FORCE": "x'y"}, ["a", "b"]),
                                     slurm.Step(8, 1, "openmpi", 2, 1, {}, ["a"])])
    text = slurm.script(camp, p.slurm, p, job, rounds=2)
    lines = [line.strip() for line in text.splitlines()]
    assert lines[0] == "#!/bin/bash"
    for d in ("--nodes=2", "--ntasks=4", "--ntasks-per-node=2", "--partition=p", "--account=a", "--qos=q",
              "--time=10", "--gpus-per-node=1", "'--constraint=a b'", "--job-name=collkit-n__rm_-rf__-0007"):
        assert f"#SBATCH {d}" in lines, d
    assert "module load x" in lines
    assert "export FORCE='x'\"'\"'y'" in lines and "export OMPI_MCA_btl='^openib'" in lines
    out = tmp_path.resolve() / "c" / "raw"
    # each launch a job step on the nodes its ranks need, its output in its own file
    assert (f"srun -n 4 -N 2 --mpi=pmix '/opt/ck bench/collkit-bench' --points {out}/launch-0007.points "
            f"--out {out}/launch-0007.jsonl") in lines
    assert (f"srun -n 2 -N 1 --mpi=pmix '/opt/ck bench/collkit-bench' --points {out}/launch-0008.points "
            f"--out {out}/launch-0008.jsonl") in lines
    assert f") > {out}/launch-0008.out 2>&1" in lines
    assert "# launch 0008: round 2 of 2, openmpi, 2 ranks on 1 node(s), 1 points" in lines
    mp = platforms.SlurmSettings(launcher=("mpirun", "--map-by", "node"))
    assert slurm.launch_command(mp, p.mpi("openmpi"), 4, ["--x"]) == [
        "/opt/ompi/bin/mpirun", "-n", "4", "--bind-to", "core", "--map-by", "node", "/opt/ck bench/collkit-bench",
        "--x"]


@needs.openmpi
def test_dry_run_writes_scripts_and_submits_nothing(tmp_path):
    (tmp_path / "s.toml").write_text(SPEC)
    (tmp_path / "p.toml").write_text(platform_text())
    out = collkit("run", "s.toml", "--platform", "p.toml", "--out", "c", "--dry-run",
                  env={"PATH": "/nonexistent:" + os.environ["PATH"], "SLURM_CONF": "/nonexistent"}, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    c = tmp_path / "c"
    assert sorted(p.name for p in (c / "jobs").iterdir()) == ["job-0001.sbatch"]
    (job,) = json.loads((c / "jobs.json").read_text())["jobs"]
    assert job["state"] == "UNSUBMITTED" and not job["job_id"]
    # every launch of the campaign a step of the one allocation: the launch group twice
    assert [(st["launch"], st["repeat"], len(st["points"])) for st in job["steps"]] == [(1, 0, TOTAL), (2, 1, TOTAL)]
    # the second round runs the group's points in reverse order (launch/schedule.py)
    first, second = ((c / "raw" / f"launch-000{n}.points").read_text().splitlines() for n in (1, 2))
    assert first[0] == "# collkit repeat=0" and second[0] == "# collkit repeat=1"
    assert first[1:] == second[1:][::-1] and len(first) == TOTAL + 1
    assert json.loads((c / "state.json").read_text())["status"] == "dry-run"
    assert not (c / "records.jsonl").exists()
    script = (c / "jobs" / "job-0001.sbatch").read_text()
    assert "OMPI_MCA_coll_tuned_use_dynamic_rules" in script and "set=coll_tuned_allreduce_algorithm:4" in first[-1] + \
        "".join(first)


# ------------------------------------------------------------------ a real Slurm
@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    needs.check("slurm", "openmpi")
    c = slurm_fixture.start(tmp_path_factory.mktemp("slurm"))
    yield c
    c.stop()


@pytest.fixture
def work(tmp_path, cluster):
    (tmp_path / "s.toml").write_text(SPEC)
    (tmp_path / "p.toml").write_text(platform_text())
    (tmp_path / "hold.toml").write_text(platform_text('sbatch_flags = ["--hold"]\n'))
    return tmp_path


def test_campaign_through_slurm_equals_a_local_run(work, cluster):
    out = collkit("run", "s.toml", "--platform", "p.toml", "--out", "s", env=cluster.env(), cwd=work)
    assert out.returncode == 0, out.stderr
    local = collkit("run", "s.toml", "--out", "l", cwd=work)
    assert local.returncode == 0, local.stderr
    got = {(r["id"], r["repeat"]): r["status"] for r in records(work / "s")}
    assert got == {(r["id"], r["repeat"]): r["status"] for r in records(work / "l")}
    assert len(got) == TOTAL * LAUNCHES and set(got.values()) == {"ok"}
    # the repetitions of the campaign ran inside one allocation, as its job steps
    (job,) = json.loads((work / "s" / "jobs.json").read_text())["jobs"]
    assert job["state"] == "COMPLETED" and job["job_id"] and job["hosts"] == [cluster.node]
    assert [st["repeat"] for st in job["steps"]] == list(range(LAUNCHES))
    launches = {r["launch"] for r in records(work / "s")}
    assert launches == {st["launch"] for st in job["steps"]}
    steps = [json.loads(line) for line in (work / "s" / "launches.jsonl").read_text().splitlines()]
    assert {(x["launch"], x["slurm_job_id"]) for x in steps} == {(n, job["job_id"]) for n in launches}
    meta = json.loads((work / "s" / "metadata.json").read_text())
    assert [j["job_id"] for j in meta["slurm"]["jobs"]] == [job["job_id"]]
    assert "one allocation" in meta["slurm"]["repetitions"]
    assert meta["placement"][0]["rank_to_host"] == [cluster.node] * 2
    assert "#SBATCH --ntasks=2" in (work / "s" / "jobs" / "job-0001.sbatch").read_text()
    st = collkit("status", "s", env=cluster.env(), cwd=work)
    assert "COMPLETED" in st.stdout and "8 ok" in st.stdout and "campaign complete" in st.stdout


def test_cancelled_campaign_resumes_without_losing_or_doubling(work, cluster):
    run = start("run", "s.toml", "--platform", "hold.toml", "--out", "c", cwd=work, env=cluster.env(),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    jobs_file = work / "c" / "jobs.json"
    # Wait for the submissions as long as the run is alive: how long its start
    # takes depends on the machine's load, not on anything under test.
    deadline = time.monotonic() + HANG_GUARD_S
    while True:
        try:
            jobs = json.loads(jobs_file.read_text())["jobs"]
        except (OSError, json.JSONDecodeError):
            jobs = []
        if len(jobs) == 1 and all(j["job_id"] for j in jobs):
            break
        if run.poll() is not None:
            pytest.fail(f"the run ended ({run.returncode}) before submitting the held jobs: {run.stderr.read()}")
        if time.monotonic() > deadline:
            run.kill()
            pytest.fail("the held jobs were never submitted (hang guard)")
        time.sleep(0.1)
    st = collkit("status", "c", env=cluster.env(), cwd=work)
    assert "PENDING" in st.stdout and "8 not recorded" in st.stdout
    cancel = collkit("cancel", "c", env=cluster.env(), cwd=work)
    assert cancel.returncode == 0 and "cancelled 1 active jobs" in cancel.stdout
    stdout, stderr = run.communicate(timeout=HANG_GUARD_S)
    assert run.returncode == 0, stderr
    recs = records(work / "c")
    assert len(recs) == TOTAL * LAUNCHES and all(r["status"] == "failed" and "CANCELLED" in r["reason"] for r in recs)
    assert sorted({(r["repeat"], r["launch"]) for r in recs}) == [(0, 1), (1, 2)]
    assert json.loads((work / "c" / "state.json").read_text())["status"] == "cancelled"

    resumed = collkit("run", "--resume", "c", "--platform", "p.toml", env=cluster.env(), cwd=work)
    assert resumed.returncode == 0, resumed.stderr
    recs = records(work / "c")
    keys = [(r["id"], r["repeat"]) for r in recs]
    assert len(keys) == len(set(keys)) == TOTAL * LAUNCHES and all(r["status"] == "ok" for r in recs)
    jobs = json.loads(jobs_file.read_text())["jobs"]
    assert [j["state"] for j in jobs] == ["CANCELLED", "COMPLETED"]
    assert json.loads((work / "c" / "state.json").read_text())["status"] == "complete"
    # a second resume has nothing left to submit
    again = collkit("run", "--resume", "c", "--platform", "p.toml", env=cluster.env(), cwd=work)
    assert again.returncode == 0 and len(json.loads(jobs_file.read_text())["jobs"]) == 2


# ------------------------------------------------------------------ [mpi.NAME] built from modules / mpicc
MODULES_PLATFORM = """name = "local-slurm-built"
[mpi.openmpi]
mpicc = "/usr/bin/mpicc.openmpi"
modules = ["export COLLKIT_TEST_MODULES=loaded", "echo collkit-modules-ran"]
[slurm]
launcher = ["mpirun"]
time_limit = "5"
poll_s = 0.3
"""
MPICC = Path("/usr/bin/mpicc.openmpi")
SMALL_SPEC = """
name = "slurm-built"
collectives = ["allreduce"]
sizes = ["8B"]
ranks = [2]
mpi = ["openmpi"]
[backends]
mpi = ["default"]
collkit = ["ring"]
[measure]
min_iterations = 3
time_budget_s = 0
launches = 1
"""


def test_modules_table_is_parsed_and_builds_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLKIT_CACHE", str(tmp_path / "cache"))
    known.clear()
    (tmp_path / "p.toml").write_text(MODULES_PLATFORM + 'setup = ["module purge"]\n')
    p = platforms.load(tmp_path / "p.toml")
    assert "openmpi" not in p.mpis and not (tmp_path / "cache").exists()
    req = p.unbuilt["openmpi"].request
    assert req.modules == ("export COLLKIT_TEST_MODULES=loaded", "echo collkit-modules-ran")
    assert req.mpicc == str(MPICC) and req.setup == ("module purge",) and req.name == "openmpi"
    # bench stays an override: nothing to build, and the modules lines still go into the jobs
    (tmp_path / "b.toml").write_text(MODULES_PLATFORM.replace("[slurm]", 'bench = "/opt/ck/collkit-bench"\n'
                                                              'mpirun = "/opt/ompi/bin/mpirun"\n[slurm]'))
    b = platforms.load(tmp_path / "b.toml")
    assert not b.unbuilt and b.mpi("openmpi").bench == Path("/opt/ck/collkit-bench")
    assert b.mpi("openmpi").modules == req.modules
    with pytest.raises(UserError, match=r"MPI 'mpich' is not on platform local-slurm-built; it has: openmpi"):
        p.mpi("mpich")


@pytest.mark.parametrize("table, message", [
    ('modules = "module load openmpi"', "[mpi.openmpi] modules must be a list of strings"),
    ('modules = ["module load a", 3]', "[mpi.openmpi] modules must be a list of strings"),
    ('modules = ["module load a\\nrm -rf x"]', "mpi.openmpi.modules[0] contains a control character (\\n)"),
    ('modlues = ["module load a"]', "unknown key 'modlues' in [mpi.openmpi] (did you mean 'modules'?); "
                                    "allowed: mpirun, args, env, bench, modules, mpicc"),
    ('mpicc = ""', "[mpi.openmpi] mpicc must be the MPI's compiler wrapper"),
    ('mpicc = ["mpicc"]', "[mpi.openmpi] mpicc must be the MPI's compiler wrapper"),
])
def test_bad_modules_tables_are_one_line_errors(tmp_path, table, message):
    (tmp_path / "c.toml").write_text(f'[mpi.openmpi]\n{table}\n[slurm]\nlauncher = ["mpirun"]\n')
    with pytest.raises(UserError, match=re.escape(message)):
        platforms.load(tmp_path / "c.toml")
    (tmp_path / "s.toml").write_text(SPEC)
    one_line_error(collkit("run", "s.toml", "--platform", "c.toml", "--dry-run", cwd=tmp_path), message.split(" (")[0])


@pytest.mark.parametrize("key", ['modules = ["module load openmpi"]', 'mpicc = "mpicc"'])
def test_modules_and_mpicc_are_refused_on_a_local_platform(tmp_path, key):
    (tmp_path / "c.toml").write_text(f'[mpi.openmpi]\n{key}\n')
    with pytest.raises(UserError, match=r"is for Slurm platforms \(a \[slurm\] table\): here, load the MPI in "
                                        r"your shell and run collkit build --mpi openmpi"):
        platforms.load(tmp_path / "c.toml")


def test_check_lines_refuses_what_cannot_be_one_shell_line():
    assert remote.check_lines(["module load a", ""], "x") == ("module load a", "")
    for bad in (["a\nb"], ["a\rb"], ["a\x00"]):
        with pytest.raises(UserError, match="x lines must be single lines without control characters"):
            remote.check_lines(bad, "x")
    with pytest.raises(UserError, match="x must be a list of strings"):
        remote.check_lines("module load a", "x")


def test_module_lines_give_the_environment_and_the_mpicc_to_build_with(tmp_path, capfd):
    bindir = tmp_path / "mpi bin"
    bindir.mkdir()
    fake = bindir / "mpicc"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    lines = (f"export PATH={shlex.quote(str(bindir))}:$PATH", "export COLLKIT_T='a b'", "echo noise on stdout",
             "echo noise on stderr >&2")
    env = remote.environment(lines, "p.toml: [mpi.x] modules")
    assert env["COLLKIT_T"] == "a b" and env["PATH"].startswith(f"{bindir}:")
    err = capfd.readouterr().err
    assert "p.toml: [mpi.x] modules: noise on stdout" in err and "noise on stderr" in err
    req = remote.ClusterBuild(name="x", source=str(tmp_path / "p.toml"), modules=lines)
    assert remote.find_mpicc(req, env) == fake
    with pytest.raises(UserError, match=r"\[mpi.x\]: no mpicc on PATH after its modules lines"):
        remote.find_mpicc(req, dict(env, PATH="/nonexistent"))
    with pytest.raises(UserError, match=r"mpicc 'nope' is not an executable program"):
        remote.find_mpicc(remote.ClusterBuild(name="x", source="p.toml", mpicc="nope"), env)
    with pytest.raises(UserError, match=r"modules fail in bash \(exit status 3: gone\)"):
        remote.environment(("echo gone >&2; exit 3",), "modules")


def test_a_name_known_for_another_mpi_is_refused_before_building(tmp_path, monkeypatch):
    other = known.KnownMPI(name="openmpi", origin="x.json", mpicc="/opt/other/bin/mpicc", mpirun="",
                           library_version="Open MPI v5", build=None)
    monkeypatch.setattr(known, "known", lambda: {"openmpi": other})
    monkeypatch.setattr(remote.builder, "build", lambda *a, **k: pytest.fail("built"))
    req = remote.ClusterBuild(name="openmpi", source="p.toml", mpicc=str(MPICC))
    with pytest.raises(UserError, match=r"an MPI named 'openmpi' is known here already, built with "
                                        r"/opt/other/bin/mpicc: rename the table"):
        remote.ready(req)


@pytest.mark.parametrize("launcher", ["srun", "mpirun"])
def test_a_build_without_mpirun_launches_with_srun_only(tmp_path, monkeypatch, launcher):
    from types import SimpleNamespace
    fake = SimpleNamespace(kind="openmpi", family="openmpi", mpirun="", mpicc="/opt/mpi/bin/mpicc",
                           part=lambda name: Path("/cache/builds/x/prefix/bin/collkit-bench"))
    monkeypatch.setattr(remote, "ready", lambda req: fake)
    (tmp_path / "p.toml").write_text(f'[mpi.ompi]\nmodules = ["true"]\n[slurm]\nlauncher = ["{launcher}"]\n')
    p = platforms.load(tmp_path / "p.toml")
    if launcher == "mpirun":
        with pytest.raises(UserError, match=r"\[mpi.ompi\] needs mpirun: \[slurm\] launcher is mpirun and there is "
                                            r"none beside /opt/mpi/bin/mpicc"):
            p.mpi("ompi")
        return
    pm = p.mpi("ompi")
    assert pm.bench == Path("/cache/builds/x/prefix/bin/collkit-bench") and pm.modules == ("true",)
    # the family's tools (ompi_info) are looked for beside the wrapper; the launch is srun's
    assert pm.install.mpirun == Path("/opt/mpi/bin/mpirun") and pm.install.family == "openmpi"
    assert pm.install.env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and p.mpi("ompi") is pm


def test_cache_on_a_node_local_filesystem_is_warned_about(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLLKIT_CACHE", str(tmp_path / "cache"))
    bench = tmp_path / "cache" / "builds" / "openmpi-1" / "prefix" / "bin" / "collkit-bench"
    for kind in ("ext4", "tmpfs", "xfs", "overlay"):
        monkeypatch.setattr(remote, "fs_type", lambda p, kind=kind: kind)
        line = remote.node_local_warning(bench)
        assert line.startswith(f"collkit: warning: the build cache {tmp_path / 'cache'} is on {kind}, ")
        assert "set COLLKIT_CACHE to a directory on a filesystem they share" in line
    other = remote.node_local_warning(Path("/opt/venv/lib/collkit/native/bin/collkit-bench"))
    assert "install collkit on a filesystem they share" in other
    for kind in ("nfs", "nfs4", "lustre", "gpfs", "beegfs", "ceph", "fuse.sshfs", ""):
        monkeypatch.setattr(remote, "fs_type", lambda p, kind=kind: kind)
        assert remote.node_local_warning(bench) == ""
    monkeypatch.setattr(remote, "fs_type", lambda p: "ext4")
    remote.warn_if_node_local(bench)
    remote.warn_if_node_local(bench)
    assert capsys.readouterr().err.count("collkit: warning:") == 1


def test_fs_type_reads_the_mount_table():
    if not Path("/proc/mounts").exists():
        pytest.skip("no /proc/mounts here")
    assert remote.fs_type(Path("/proc/self")) == "proc"
    assert remote.fs_type(Path("/nonexistent/deeper/still")) == remote.fs_type(Path("/"))
    assert remote.fs_type(Path("/")) != ""


@pytest.fixture(scope="module")
def built(cluster):
    """One campaign through the local Slurm whose platform names no bench: the
    build into a fresh COLLKIT_CACHE happens here, once for the module. The
    cache lies under the checkout's build/: the build tree is then as far from
    the sources in every clone, and a second clone's compile hits ccache
    (scripts/ccache.sh; in a temp dir every clone compiled everything again,
    37-58 s, against 8 s)."""
    needs.check("debian-openmpi")
    (REPO / "build").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="test-slurm-built-", dir=REPO / "build"))
    try:
        yield _campaign_into_fresh_cache(work, cluster)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _campaign_into_fresh_cache(work: Path, cluster):
    cache = work / "cache"
    # Specs need libcollkit's registry, which any build exports: the fresh cache
    # knows the other MPIs of this machine (their registrations point at their
    # builds), as a cluster user's has the MPI pip install built against.
    (cache / "mpis").mkdir(parents=True)
    mine = sorted(known.registrations_dir().glob("*.json"))
    for reg in [r for r in mine if r.stem != "openmpi"] or mine:
        shutil.copy(reg, cache / "mpis" / reg.name)
    (work / "s.toml").write_text(SMALL_SPEC)
    (work / "p.toml").write_text(MODULES_PLATFORM)
    env = dict(cluster.env(), COLLKIT_CACHE=str(cache))
    out = collkit("run", "s.toml", "--platform", "p.toml", "--out", "c", env=env, cwd=work)
    return work, cache, env, out


def test_campaign_through_slurm_builds_the_bench_once_into_the_cache(built):
    work, cache, env, out = built
    assert out.returncode == 0, out.stderr
    recs = records(work / "c")
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs), recs
    reg = json.loads((cache / "mpis" / "openmpi.json").read_text())
    assert reg["mpicc"] == str(MPICC) and Path(reg["prefix"]).parent.parent == cache / "builds"
    bench = Path(reg["prefix"]) / "bin" / "collkit-bench"
    assert bench.is_file()
    assert "'openmpi' is ready" in out.stderr and "modules: collkit-modules-ran" in out.stderr
    if remote.fs_type(cache) in remote.NODE_LOCAL_FS:
        assert f"collkit: warning: the build cache {cache} is on" in out.stderr
    script = [line.strip() for line in (work / "c" / "jobs" / "job-0001.sbatch").read_text().splitlines()]
    assert "export COLLKIT_TEST_MODULES=loaded" in script
    launch = next(line for line in script if " --points " in line)
    assert launch.startswith("/usr/bin/mpirun.openmpi -n 2") or launch.startswith("/usr/bin/mpiexec.openmpi -n 2")
    assert f" {bench} --points " in launch
    assert script.index("export COLLKIT_TEST_MODULES=loaded") < script.index(launch)
    assert "collkit-modules-ran" in (work / "c" / "raw" / "launch-0001.out").read_text()
    meta = json.loads((work / "c" / "metadata.json").read_text())
    assert meta["slurm"]["mpi_modules"] == {"openmpi": ["export COLLKIT_TEST_MODULES=loaded",
                                                         "echo collkit-modules-ran"]}
    resolved = json.loads((work / "c" / "resolved.json").read_text())
    assert resolved["platform"]["mpis"]["openmpi"]["bench"] == str(bench)

    # a second campaign finds the build up to date
    again = collkit("run", "s.toml", "--platform", "p.toml", "--out", "d", env=env, cwd=work)
    assert again.returncode == 0, again.stderr
    assert "'openmpi' is up to date" in again.stderr and "compiling" not in again.stderr
    assert all(r["status"] == "ok" for r in records(work / "d"))


def test_a_bench_the_node_cannot_see_fails_the_job_with_a_clear_reason(work, cluster):
    (work / "p.toml").write_text(platform_text().replace(f'bench = "{BENCH}"', 'bench = "/nonexistent/collkit-bench"'))
    (work / "s.toml").write_text(SMALL_SPEC)
    out = collkit("run", "s.toml", "--platform", "p.toml", "--out", "c", env=cluster.env(), cwd=work)
    # nothing succeeded: the run says so, with the first failure's reason
    assert out.returncode == 1 and "is not visible on" in out.stderr, out.stderr
    recs = records(work / "c")
    assert len(recs) == 2 and all(r["status"] == "failed" and r["job_failure"] for r in recs)
    assert all(r["reason"].endswith(f"before collkit-bench reported this point: /nonexistent/collkit-bench is not "
                                    f"visible on {cluster.node}: the compute nodes need it on a shared filesystem "
                                    "(COLLKIT_CACHE for the builds collkit makes, or [mpi.openmpi] bench)")
               for r in recs), recs[0]["reason"]
    assert "FAILED" in recs[0]["reason"] and "exit code 2:0" in recs[0]["reason"]
