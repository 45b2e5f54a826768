"""Campaigns end to end with a stand-in collkit-bench (tests/python/fakes): the
watchdog, resume after a kill, export columns, the index, and metadata redaction.
The real program runs in test_run_real.py."""

import json
from collections import Counter
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cli_runner import collkit, one_line_error, start
FAKES = Path(__file__).parent / "fakes"

SPEC = """
name = "fake"
collectives = ["allreduce", "bcast"]
sizes = "8B..2KiB x4"
ranks = [4, 6]
[backends]
collkit = ["ring", "bine_latency", "binomial_halving", "bine"]
[measure]
timeout_s = 2
launches = 1
"""
# 2 rank counts x (2 allreduce + 2 bcast algorithms) x 5 sizes, one launch each (the
# repeated launches of a campaign: the tests at the end)
TOTAL = 40


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "spec.toml").write_text(SPEC)
    (tmp_path / "platform.toml").write_text(
        f'name = "fake"\n[mpi.openmpi]\nmpirun = "{FAKES / "fake_mpirun"}"\nargs = []\nenv = {{}}\n'
        f'bench = "{FAKES / "fake_bench"}"\n')
    return tmp_path


def records(campaign: Path) -> list[dict]:
    return [json.loads(line) for line in (campaign / "records.jsonl").read_text().splitlines()]


def test_hang_and_crash_are_recorded_and_the_campaign_goes_on(workdir):
    out = collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c",
                  env={"FAKE_HANG": "bcast/collkit/openmpi/bine/p4/32B", "FAKE_STATE": str(workdir / "state"),
                       "FAKE_CRASH": "allreduce/collkit/openmpi/ring/p6/128B"}, cwd=workdir)
    assert out.returncode == 0, out.stderr
    recs = {r["id"]: r for r in records(workdir / "c")}
    assert len(recs) == TOTAL
    hung = recs["bcast/collkit/openmpi/bine/p4/32B/int32/sum/r0/outofplace"]
    assert hung["status"] == "failed" and "2 s point timeout" in hung["reason"]
    assert "fake: hanging on" in hung["stderr_tail"]
    crashed = recs["allreduce/collkit/openmpi/ring/p6/128B/int32/sum/r0/outofplace"]
    assert crashed["status"] == "failed" and "SIGSEGV" in crashed["reason"]
    assert sum(r["status"] == "ok" for r in recs.values()) == TOTAL - 2
    assert "failed  bcast" in out.stdout and "38 ok, 0 invalid, 2 failed" in out.stdout


def test_invalid_points_never_win_and_fail_the_run(workdir):
    out = collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c",
                  env={"FAKE_INVALID": "bine_latency"}, cwd=workdir)
    assert out.returncode == 1
    assert "collkit:bine_latency" not in out.stdout.split("Points that did not")[0]
    assert "invalid  allreduce" in out.stdout


def test_killed_campaign_resumes_without_losing_or_doubling_points(workdir):
    proc = start("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir,
                 env={"FAKE_DELAY": "0.05"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    rec_file = workdir / "c" / "records.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if rec_file.exists() and len(rec_file.read_text().splitlines()) >= 8:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)  # no chance to clean up: the hardest case
    proc.wait()
    before = len(records(workdir / "c"))
    assert 8 <= before < TOTAL
    out = collkit("run", "--resume", "c", "--platform", "platform.toml", cwd=workdir)
    assert out.returncode == 0, out.stderr
    ids = [r["id"] for r in records(workdir / "c")]
    assert len(ids) == TOTAL and len(set(ids)) == TOTAL
    assert json.loads((workdir / "c" / "state.json").read_text())["status"] == "complete"
    # Nothing left to do: a second resume runs nothing and changes nothing.
    again = collkit("run", "--resume", "c", "--platform", "platform.toml", cwd=workdir)
    assert again.returncode == 0 and len(records(workdir / "c")) == TOTAL


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_campaign_says_how_to_resume(workdir, sig):
    # SIGINT ignored on entry, as a shell leaves it for background jobs: the
    # campaign must stop on it all the same.
    proc = start("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir,
                 env={"FAKE_DELAY": "0.1"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    rec_file = workdir / "c" / "records.jsonl"
    while not rec_file.exists() or len(rec_file.read_text().splitlines()) < 3:
        time.sleep(0.02)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "continue with: collkit run --resume c" in err and "Traceback" not in err
    assert json.loads((workdir / "c" / "state.json").read_text())["status"] == "interrupted"
    assert json.loads((workdir / "index.json").read_text())[0]["status"] == "interrupted"


def test_export_has_the_promised_columns(workdir):
    assert collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir).returncode == 0
    out = collkit("export", "c", cwd=workdir)
    header = out.stdout.splitlines()[0].split(",")
    for col in ("collective", "backend", "mpi", "algorithm", "ranks", "count", "bytes", "dtype", "op", "status",
                "reason", "iterations", "time_min_us", "time_median_us", "time_max_us", "algbw_GBps",
                "busbw_GBps"):
        assert col in header
    assert len(out.stdout.splitlines()) == TOTAL + 1
    rows = json.loads(collkit("export", "c", "--format", "json", cwd=workdir).stdout)
    assert len(rows) == TOTAL and {r["status"] for r in rows} == {"ok"}
    assert (workdir / "c" / "results.csv").read_text() == out.stdout
    report = collkit("report", "c", cwd=workdir)
    assert report.returncode == 0 and "best" in report.stdout and "40 ok" in report.stdout


def test_metadata_never_records_secrets(workdir):
    env = {"MY_API_TOKEN": "tok-123-abc", "OMPI_MCA_secret_password": "hunter2",
           "UCX_PROXY": "http://alice:s3cr3t@proxy:3128", "OMPI_MCA_btl": "self,vader"}
    assert collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c",
                   env=env, cwd=workdir).returncode == 0
    text = "".join(p.read_text() for p in (workdir / "c").rglob("*") if p.is_file())
    for secret in ("tok-123-abc", "hunter2", "s3cr3t", "MY_API_TOKEN"):
        assert secret not in text
    meta = json.loads((workdir / "c" / "metadata.json").read_text())
    assert meta["environment"]["OMPI_MCA_btl"] == "self,vader"
    assert meta["environment"]["OMPI_MCA_secret_password"] == "<redacted>"
    assert meta["environment"]["UCX_PROXY"] == "http://<redacted>@proxy:3128"
    assert meta["mpis"]["openmpi"]["library_version"] == "fake MPI 1.0"
    assert sorted(len(p["rank_to_host"]) for p in meta["placement"]) == [4, 6]
    assert all(set(p["rank_to_host"]) == {"fakehost"} for p in meta["placement"])


def test_typo_in_algorithm_fails_before_launch_with_a_suggestion(workdir):
    (workdir / "spec.toml").write_text(SPEC.replace('"bine_latency"', '"bine_latncy"'))
    out = collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir)
    assert one_line_error(out) == \
        "collkit: error: spec.toml: unknown libcollkit algorithm 'bine_latncy' (did you mean 'bine_latency'?); see `collkit list`"
    assert not (workdir / "c").exists()


def test_user_errors_are_one_line(workdir):
    cases = [
        ("run", "missing.toml"),
        ("run", "spec.toml", "--platform", "nope.toml"),
        ("run",),
        ("report", "nowhere"),
        ("export", "spec.toml"),
    ]
    for args in cases:
        one_line_error(collkit(*args, cwd=workdir))


def test_out_dir_that_exists_is_refused(workdir):
    assert collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir).returncode == 0
    one_line_error(collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir), "--resume c")


# ------------------------------------------------------------------ repeated launches
def test_every_point_runs_in_each_round_and_a_hung_point_is_not_launched_again(workdir):
    (workdir / "spec.toml").write_text(SPEC.replace("launches = 1", "launches = 3"))
    out = collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir,
                  env={"FAKE_HANG": "bcast/collkit/openmpi/bine/p4/32B", "FAKE_STATE": str(workdir / "state")})
    assert out.returncode == 0, out.stderr
    recs = records(workdir / "c")
    hung = "bcast/collkit/openmpi/bine/p4/32B/int32/sum/r0/outofplace"
    per = Counter(r["id"] for r in recs)
    # the hang failed its point in round 0: not launched again (it would cost a timeout a round)
    assert per[hung] == 1 and all(n == 3 for i, n in per.items() if i != hung) and len(per) == TOTAL
    assert {(r["repeat"]) for r in recs if r["id"] != hung} == {0, 1, 2}
    # each round runs each launch group once, in an order drawn from the seed: the two
    # rank counts' launches interleave, and each round's launches are later than the last's
    launches = [json.loads(line) for line in (workdir / "c" / "launches.jsonl").read_text().splitlines()]
    rounds = [[x["ranks"] for x in launches if x["repeat"] == k] for k in range(3)]
    assert all(sorted(r) == [4, 6] for r in rounds[1:]) and sorted(rounds[0])[-1] == 6
    # the point's record: its launches merged (the median of their medians)
    rows = {r["id"]: r for r in json.loads(collkit("export", "c", "--format", "json", cwd=workdir).stdout)}
    ok = next(r for i, r in rows.items() if i != hung)
    assert ok["status"] == "ok" and rows[hung]["status"] == "failed"
    assert "3 launches" in out.stdout or "launches)" in out.stdout


def test_killed_campaign_with_rounds_resumes_every_round_once(workdir):
    (workdir / "spec.toml").write_text(SPEC.replace("launches = 1", "launches = 2"))
    proc = start("run", "spec.toml", "--platform", "platform.toml", "--out", "c", cwd=workdir,
                 env={"FAKE_DELAY": "0.05"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    rec_file = workdir / "c" / "records.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if rec_file.exists() and len(rec_file.read_text().splitlines()) >= 50:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 50 <= len(records(workdir / "c")) < 2 * TOTAL
    out = collkit("run", "--resume", "c", "--platform", "platform.toml", cwd=workdir)
    assert out.returncode == 0, out.stderr
    keys = [(r["id"], r["repeat"]) for r in records(workdir / "c")]
    assert len(keys) == len(set(keys)) == 2 * TOTAL
    assert json.loads((workdir / "c" / "state.json").read_text())["status"] == "complete"
