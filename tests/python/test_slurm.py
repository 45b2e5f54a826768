"""The Slurm launcher: the platform's [slurm] table, the batch scripts, and whole
campaigns through a real one-node Slurm on localhost (slurm_fixture.py), compared
with a local run of the same spec. The Slurm tests skip, saying why, where root or
the slurm-wlm/munge packages are missing; CI installs them."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import slurm_fixture
from collkit.campaign import platform as platforms
from collkit.campaign.store import Campaign
from collkit.common.errors import UserError
from collkit.launch import slurm

BENCH = platforms.bench_path("openmpi")
OPENMPI = platforms.detect().mpis.get("openmpi")

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
"""
# 2 sizes x (default, forced ring, 2 libcollkit algorithms); the forced ring is its own job
TOTAL = 8


def platform_text(extra: str = "") -> str:
    return (f'name = "local-slurm"\n[mpi.openmpi]\nbench = "{BENCH}"\n'
            f'[slurm]\nlauncher = ["mpirun"]\ntime_limit = "5"\npoll_s = 0.3\n{extra}')


def collkit(cwd, *args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "collkit", *args], cwd=cwd, env=env or dict(os.environ),
                          capture_output=True, text=True, timeout=timeout)


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
    out = collkit(tmp_path, "run", "s.toml", "--platform", "c.toml", "--dry-run")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and message.split(" (")[0] in out.stderr


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
    job = slurm.Job(number=7, mpi="openmpi", ranks=4, nodes=2, env={"FORCE": "x'y"}, points=["a", "b"])
    text = slurm.script(camp, p.slurm, p.mpi("openmpi"), job)
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    for d in ("--nodes=2", "--ntasks=4", "--ntasks-per-node=2", "--partition=p", "--account=a", "--qos=q",
              "--time=10", "--gpus-per-node=1", "'--constraint=a b'", "--job-name=collkit-n__rm_-rf__-0007"):
        assert f"#SBATCH {d}" in lines, d
    assert "module load x" in lines
    assert "export FORCE='x'\"'\"'y'" in lines and "export OMPI_MCA_btl='^openib'" in lines
    out = tmp_path.resolve() / "c" / "raw"
    assert lines[-1] == (f"srun -n 4 --mpi=pmix '/opt/ck bench/collkit-bench' --points {out}/launch-0007.points "
                         f"--out {out}/launch-0007.jsonl")
    mp = platforms.SlurmSettings(launcher=("mpirun", "--map-by", "node"))
    assert slurm.launch_command(mp, p.mpi("openmpi"), 4, ["--x"]) == [
        "/opt/ompi/bin/mpirun", "-n", "4", "--bind-to", "core", "--map-by", "node", "/opt/ck bench/collkit-bench",
        "--x"]


@pytest.mark.skipif(OPENMPI is None, reason="Open MPI with collkit-bench is not built here")
def test_dry_run_writes_scripts_and_submits_nothing(tmp_path):
    (tmp_path / "s.toml").write_text(SPEC)
    (tmp_path / "p.toml").write_text(platform_text())
    out = collkit(tmp_path, "run", "s.toml", "--platform", "p.toml", "--out", "c", "--dry-run",
                  env=dict(os.environ, PATH="/nonexistent:" + os.environ["PATH"], SLURM_CONF="/nonexistent"))
    assert out.returncode == 0, out.stderr
    c = tmp_path / "c"
    assert sorted(p.name for p in (c / "jobs").iterdir()) == ["job-0001.sbatch", "job-0002.sbatch"]
    jobs = json.loads((c / "jobs.json").read_text())["jobs"]
    assert [j["state"] for j in jobs] == ["UNSUBMITTED"] * 2 and all(not j["job_id"] for j in jobs)
    assert sum(len(j["points"]) for j in jobs) == TOTAL
    assert len((c / "raw" / "launch-0001.points").read_text().splitlines()) == 6
    assert json.loads((c / "state.json").read_text())["status"] == "dry-run"
    assert not (c / "records.jsonl").exists()
    assert "OMPI_MCA_coll_tuned_allreduce_algorithm" in (c / "jobs" / "job-0002.sbatch").read_text()


# ------------------------------------------------------------------ a real Slurm
@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = slurm_fixture.unavailable()
    if why:
        pytest.skip(why)
    if OPENMPI is None:
        pytest.skip("Open MPI with collkit-bench is not built here (make setup)")
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
    out = collkit(work, "run", "s.toml", "--platform", "p.toml", "--out", "s", env=cluster.env())
    assert out.returncode == 0, out.stderr
    local = collkit(work, "run", "s.toml", "--out", "l")
    assert local.returncode == 0, local.stderr
    got = {r["id"]: r["status"] for r in records(work / "s")}
    assert got == {r["id"]: r["status"] for r in records(work / "l")}
    assert len(got) == TOTAL and set(got.values()) == {"ok"}
    jobs = json.loads((work / "s" / "jobs.json").read_text())["jobs"]
    assert len(jobs) == 2 and all(j["state"] == "COMPLETED" and j["job_id"] for j in jobs)
    assert all(j["hosts"] == [cluster.node] for j in jobs)
    meta = json.loads((work / "s" / "metadata.json").read_text())
    assert [j["job_id"] for j in meta["slurm"]["jobs"]] == [j["job_id"] for j in jobs]
    assert meta["placement"][0]["rank_to_host"] == [cluster.node] * 2
    assert "#SBATCH --ntasks=2" in (work / "s" / "jobs" / "job-0001.sbatch").read_text()
    st = collkit(work, "status", "s", env=cluster.env())
    assert "COMPLETED" in st.stdout and "8 ok" in st.stdout and "campaign complete" in st.stdout


def test_cancelled_campaign_resumes_without_losing_or_doubling(work, cluster):
    run = subprocess.Popen([sys.executable, "-m", "collkit", "run", "s.toml", "--platform", "hold.toml",
                            "--out", "c"], cwd=work, env=cluster.env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    jobs_file = work / "c" / "jobs.json"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            jobs = json.loads(jobs_file.read_text())["jobs"]
        except (OSError, json.JSONDecodeError):
            jobs = []
        if len(jobs) == 2 and all(j["job_id"] for j in jobs):
            break
        time.sleep(0.1)
    else:
        run.kill()
        pytest.fail("the held jobs were never submitted")
    st = collkit(work, "status", "c", env=cluster.env())
    assert "PENDING" in st.stdout and "8 not recorded" in st.stdout
    cancel = collkit(work, "cancel", "c", env=cluster.env())
    assert cancel.returncode == 0 and "cancelled 2 active jobs" in cancel.stdout
    stdout, stderr = run.communicate(timeout=60)
    assert run.returncode == 0, stderr
    recs = records(work / "c")
    assert len(recs) == TOTAL and all(r["status"] == "failed" and "CANCELLED" in r["reason"] for r in recs)
    assert json.loads((work / "c" / "state.json").read_text())["status"] == "cancelled"

    resumed = collkit(work, "run", "--resume", "c", "--platform", "p.toml", env=cluster.env())
    assert resumed.returncode == 0, resumed.stderr
    recs = records(work / "c")
    ids = [r["id"] for r in recs]
    assert len(ids) == len(set(ids)) == TOTAL and all(r["status"] == "ok" for r in recs)
    jobs = json.loads(jobs_file.read_text())["jobs"]
    assert [j["state"] for j in jobs] == ["CANCELLED", "CANCELLED", "COMPLETED", "COMPLETED"]
    assert json.loads((work / "c" / "state.json").read_text())["status"] == "complete"
    # a second resume has nothing left to submit
    again = collkit(work, "run", "--resume", "c", "--platform", "p.toml", env=cluster.env())
    assert again.returncode == 0 and len(json.loads(jobs_file.read_text())["jobs"]) == 4
