"""Faults and concurrency with the stand-in collkit-bench (tests/python/fakes):
kill -9 of the runner while its launch keeps running, a second runner on the
same campaign, `collkit status` telling a dead runner from a live one,
campaigns where nothing succeeded, damaged campaign files, unusable --out."""

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from cli_runner import collkit, one_line_error, start
FAKES = Path(__file__).parent / "fakes"

SPEC = """
name = "faults"
collectives = ["allreduce"]
sizes = "8B..512B x4"
ranks = [4]
[backends]
collkit = ["ring", "recursive_doubling", "bine_latency"]
[measure]
timeout_s = 20
launches = 1
"""
TOTAL = 12  # 4 sizes x 3 algorithms, one launch


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "spec.toml").write_text(SPEC)
    (tmp_path / "platform.toml").write_text(
        f'name = "fake"\n[mpi.openmpi]\nmpirun = "{FAKES / "fake_mpirun"}"\nargs = []\nenv = {{}}\n'
        f'bench = "{FAKES / "fake_bench"}"\n')
    return tmp_path


def start_run(workdir, env):
    return start("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir, env=env,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for_records(path: Path, n: int, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} records in {path}")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def test_resume_stops_the_orphan_and_runs_no_point_twice(workdir):
    log = workdir / "completed.log"
    env = {"FAKE_DELAY": "3", "FAKE_LOG": str(log)}
    runner = start_run(workdir, env)
    wait_for_records(workdir / "c" / "records.jsonl", 2)
    runner.send_signal(signal.SIGKILL)        # the runner dies; its launch runs on in its own session
    runner.wait()
    running = json.loads((workdir / "c" / "raw" / "running.json").read_text())
    assert group_alive(running["pgid"])
    index = json.loads((workdir / "index.json").read_text())
    assert [e["dir"] for e in index] == ["c"] and index[0]["status"] == "running"
    status = collkit("status", "c", cwd=workdir)
    assert status.returncode == 0 and "its runner" in status.stdout and "is gone" in status.stdout

    # the orphan keeps its 3 s per point; the resumed launch runs the rest quickly
    out = collkit("run", "--resume", "c", "--platform", "platform.toml",
                  env={**env, "FAKE_DELAY": "0.2"}, cwd=workdir)
    assert out.returncode == 0, out.stderr
    assert "stopped launch 1" in out.stderr
    assert not group_alive(running["pgid"])
    ids = [json.loads(line)["id"] for line in (workdir / "c" / "records.jsonl").read_text().splitlines()]
    assert len(ids) == TOTAL and len(set(ids)) == TOTAL         # none lost, none recorded twice
    completed = Counter(line.split()[0] for line in log.read_text().splitlines())
    assert set(completed) == set(ids) and max(completed.values()) == 1   # none ran to the end twice
    assert "complete" in collkit("status", "c", cwd=workdir).stdout


def test_a_second_runner_on_the_same_campaign_is_refused(workdir):
    runner = start_run(workdir, {"FAKE_DELAY": "0.5"})
    try:
        wait_for_records(workdir / "c" / "records.jsonl", 1)
        live = collkit("status", "c", cwd=workdir)
        assert "running (pid" in live.stdout
        for args in (("run", "--resume", "c", "--platform", "platform.toml"),
                     ("run", "spec.toml", "--platform", "platform.toml", "--out", "c")):
            line = one_line_error(collkit(*args, cwd=workdir))
            assert "being run by another collkit" in line or "not empty" in line
    finally:
        runner.send_signal(signal.SIGTERM)
        runner.wait(timeout=60)


def test_a_campaign_where_nothing_succeeded_exits_nonzero_with_the_error(workdir):
    out = collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c",
                  env={"FAKE_CRASH": "/"}, cwd=workdir)
    assert out.returncode == 1, out.stderr
    assert "no point succeeded" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("name, content", [("resolved.json", "{not json"), ("resolved.json", "[1, 2]"),
                                           ("metadata.json", "\x00\x01")])
def test_damaged_campaign_files_are_one_line_errors(workdir, name, content):
    assert collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir).returncode == 0
    (workdir / "c" / name).write_text(content)
    for args in (("status", "c"), ("run", "--resume", "c", "--platform", "platform.toml")):
        res = collkit(*args, cwd=workdir)
        if name == "metadata.json" and args[0] == "status":
            continue   # status does not read the metadata
        one_line_error(res, name)


def test_an_out_that_cannot_be_created_is_refused_before_anything_runs(workdir):
    (workdir / "file").write_text("")
    one_line_error(collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "file/c", cwd=workdir),
                   "cannot create the campaign directory")
    one_line_error(collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "", cwd=workdir), "--out")
