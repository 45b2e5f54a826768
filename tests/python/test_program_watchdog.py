"""The user's program under the watchdog (issue #44; docs/application-loop.md,
"Timeouts and interrupts"): `collkit profile` and `collkit trial` start the
launcher in a session of its own, and --timeout, SIGINT or SIGTERM stop it
with every process it started, ranks in process groups or sessions of their
own included (Open MPI's ranks take groups of their own, MPICH's hydra
sessions), then end with one line and exit status 2.

"Gone" is checked in /proc and counts a zombie as gone: a killed rank whose
launcher died first waits there for PID 1 to reap it, which in a container
may never happen (and os.killpg(pgid, 0) still finds zombies)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import mpi_programs
import needs
from cli_runner import in_process, one_line_error, start
from collkit.launch import watch
from collkit.mpis import known

HANG = Path(__file__).parent / "fixtures" / "hang.c"
FAKE = Path(__file__).parent / "fakes" / "fake_hang_launcher"
RANKS = 2
TIMEOUT_S = 6      # past MPI's start-up on a busy 2-core machine, so that every rank is up first
PIPES = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}


# ------------------------------------------------------------------ processes, from /proc
def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state first), None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def _alive(pid: int, started: str | None = None) -> bool:
    """Running (not a zombie), and the same process when `started` (its start time) is given."""
    f = _stat(pid)
    return f is not None and f[0] not in ("Z", "X") and (started is None or f[19] == started)


def _members(pgid_or_sid: int) -> list[int]:
    """Live processes in that process group or session."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            f = _stat(int(name))
            if f is not None and f[0] not in ("Z", "X") and pgid_or_sid in (int(f[2]), int(f[3])):
                out.append(int(name))
    return out


def _ranks(folder: Path, n: int, within: float = 120.0) -> dict[int, str]:
    """pid -> start time of the n ranks once each has written its pid file."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        files = sorted(folder.glob("rank-*.pid"))
        if len(files) == n:
            pids = [int(p.read_text()) for p in files]
            return {pid: _stat(pid)[19] for pid in pids if _stat(pid) is not None}
        time.sleep(0.05)
    raise AssertionError(f"{n} ranks did not start within {within:g} s: {sorted(folder.iterdir())}")


def _launcher_of(collkit: subprocess.Popen, launcher: str) -> int:
    """The pid of collkit's child that runs `launcher`."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            f = _stat(int(name))
            try:
                argv0 = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")[0].decode()
            except OSError:
                continue
            if f is not None and int(f[1]) == collkit.pid and argv0 == launcher:
                return int(name)
    raise AssertionError(f"collkit runs no {launcher}")


def _all_gone(launcher: int, ranks: dict[int, str]) -> None:
    left = [pid for pid, t in ranks.items() if _alive(pid, t)]
    group = _members(launcher)
    for pid in {*left, *group}:     # a failing check leaves nothing running behind it
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"ranks still running: {left}"
    assert not group, f"the launcher's process group or session still has {group}"


# ------------------------------------------------------------------ the watchdog alone (no MPI)
def _fake_run(tmp_path: Path, ranks: int, *extra: str) -> tuple[list[str], Path]:
    folder = tmp_path / "pids"
    folder.mkdir()
    return [sys.executable, str(FAKE), str(folder), str(ranks), *extra], folder


def _find_launcher(argv: list[str]) -> int:
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmd = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if [c.decode() for c in cmd if c] == argv and _alive(int(name)):
                return int(name)
    raise AssertionError(f"no process runs {argv}")


def _placements(ranks: dict[int, str], launcher: int) -> list[str]:
    """Where each rank sits: the launcher's group, a group of its own, a session of its own."""
    out = []
    for pid in ranks:
        f = _stat(pid)
        pgid, sid = int(f[2]), int(f[3])
        out.append("launcher's group" if pgid == launcher else "own session" if sid == pid else
                   "own group" if pgid == pid else f"group {pgid}, session {sid}")
    return sorted(out)


@pytest.mark.parametrize("extra", [(), ("--ignore-term",)])
def test_a_timeout_stops_ranks_in_other_groups_and_sessions(tmp_path, extra):
    """--ignore-term: the launcher and its ranks outlive SIGTERM, SIGKILL must follow."""
    argv, folder = _fake_run(tmp_path, 3, *extra)
    found: dict = {}

    def spy():
        found["ranks"] = _ranks(folder, 3, within=30)
        found["launcher"] = _find_launcher(argv)
        found["placements"] = _placements(found["ranks"], found["launcher"])
    seen = threading.Thread(target=spy)
    seen.start()
    t0 = time.monotonic()
    with pytest.raises(watch.TimedOut) as stop:
        watch.run_watched(argv, None, 3.0, stdout=subprocess.PIPE)
    seen.join()
    assert stop.value.seconds == 3.0 and time.monotonic() - t0 < 3.0 + watch.TERM_GRACE_S + watch.KILL_WAIT_S
    assert found["placements"] == ["launcher's group", "own group", "own session"]
    _all_gone(found["launcher"], found["ranks"])


def test_an_interrupt_stops_the_program_and_is_raised_again(tmp_path):
    argv, folder = _fake_run(tmp_path, 3)
    found: dict = {}
    before = signal.getsignal(signal.SIGTERM)

    def interrupt():
        try:
            found["ranks"] = _ranks(folder, 3, within=30)
            found["launcher"] = _find_launcher(argv)
        finally:   # never leave the test waiting on a program that hangs
            os.kill(os.getpid(), signal.SIGTERM)
    spy = threading.Thread(target=interrupt)
    with watch.interrupts(), pytest.raises(watch.Interrupted) as stop:
        spy.start()
        watch.run_watched(argv, None, None, stdout=subprocess.PIPE)
    spy.join()
    assert stop.value.name == "SIGTERM"
    _all_gone(found["launcher"], found["ranks"])
    assert signal.getsignal(signal.SIGTERM) == before     # the handlers are back


def test_an_interrupt_during_the_stop_is_raised_once_the_stop_is_complete(tmp_path):
    """A Ctrl-C while kill_group waits out a launcher that ignores SIGTERM must
    not leave the ranks running: the stop finishes, then the interrupt comes."""
    argv, folder = _fake_run(tmp_path, 3, "--ignore-term")
    proc = subprocess.Popen(argv, start_new_session=True)
    ranks = _ranks(folder, 3, within=30)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            watch.kill_group(proc)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
        _all_gone(proc.pid, ranks)
    assert proc.returncode is not None


def test_a_program_that_ends_gives_its_status_and_output():
    done = watch.run_watched([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], None, 30,
                             stdout=subprocess.PIPE)
    assert (done.code, done.stdout, done.timed_out) == (3, "out\n", False)


def test_signal_names_have_one_home():
    assert watch.signal_name(11) == "SIGSEGV" and watch.signal_name(77) == "signal 77"
    assert watch.exit_reason(-9) == "killed by signal SIGKILL" and watch.exit_reason(-77) == "killed by signal 77"
    assert watch.exit_reason(3) == "exited with status 3"
    from collkit.program import profile
    assert profile._status(-11) == (139, "the launcher was killed by signal SIGSEGV")
    assert profile._status(4) == (4, "the launcher exited with status 4") and profile._status(0) == (0, "")


# ------------------------------------------------------------------ --timeout where it enters
@pytest.mark.parametrize("command", ["profile", "trial"])
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e9", "soon"])
def test_a_bad_timeout_is_one_line_exit_2_before_anything_runs(command, value, capsys):
    extra = ["--runs", "4", "--algorithm", "allreduce=ring"] if command == "trial" else []
    one_line_error(in_process(capsys, command, *extra, "--timeout", value, "--", "/no/such/mpirun", "./app"),
                   "--timeout")


# ------------------------------------------------------------------ collkit profile and trial on MPI
MPIS = needs.each_mpi()     # the preload is a part of each MPI's build


@pytest.fixture(scope="module")
def hang(tmp_path_factory):
    """hang.c built with each MPI's own mpicc, once."""
    return mpi_programs.builder(tmp_path_factory, HANG)


def _hanging(mpi: str, hang, tmp_path: Path) -> tuple[list[str], Path]:
    folder = tmp_path / "pids"
    folder.mkdir()
    install = known.find_install(mpi)
    return [str(install.mpirun), "-n", str(RANKS), *install.flags, str(hang(mpi)), str(folder)], folder


def _shared_memory(ranks: dict[int, str]) -> set[Path]:
    """The /dev/shm files the ranks have mapped."""
    found = set()
    for pid in ranks:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        found |= {Path(ln.split(None, 5)[5]) for ln in maps.splitlines()
                  if len(ln.split(None, 5)) == 6 and ln.split(None, 5)[5].startswith("/dev/shm/")}
    return found


def _stop(proc: subprocess.Popen, launch: list[str], folder: Path, sig: int | None):
    """Wait for the ranks, send `sig` to collkit (None: let --timeout fire), and
    return collkit's result once it has exited, with the launcher and ranks seen.
    MPICH's ranks killed by a signal leave their shared memory file behind
    (Open MPI's launcher removes its own): removed here, not to fill /dev/shm."""
    shm: set[Path] = set()
    try:
        ranks = _ranks(folder, RANKS)
        shm = _shared_memory(ranks)
        launcher = _launcher_of(proc, launch[0])
        if sig is not None:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        for path in shm:
            path.unlink(missing_ok=True)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), launcher, ranks


@pytest.mark.parametrize("mpi", MPIS)
def test_profile_timeout_stops_every_rank(mpi, hang, tmp_path):
    launch, folder = _hanging(mpi, hang, tmp_path)
    out_file = tmp_path / "p.json"
    proc = start("profile", "--mpi", mpi, "--out", out_file, "--timeout", TIMEOUT_S, "--", *launch, **PIPES)
    done, launcher, ranks = _stop(proc, launch, folder, None)
    one_line_error(done, f"ran past --timeout {TIMEOUT_S} s", "every process", "longer --timeout", shared=True)
    assert "hang: 2 ranks waiting for ever" in done.stdout     # the program's output still reaches the user
    _all_gone(launcher, ranks)
    assert not out_file.exists()


@pytest.mark.parametrize("mpi", MPIS)
def test_profile_sigint_stops_every_rank(mpi, hang, tmp_path):
    launch, folder = _hanging(mpi, hang, tmp_path)
    proc = start("profile", "--mpi", mpi, "--out", tmp_path / "p.json", "--", *launch, **PIPES)
    done, launcher, ranks = _stop(proc, launch, folder, signal.SIGINT)
    one_line_error(done, "no profile written", shared=True, prefix="collkit: error: SIGINT arrived")
    _all_gone(launcher, ranks)


@pytest.mark.parametrize("mpi", MPIS)
def test_trial_timeout_stops_every_rank_and_writes_the_json(mpi, hang, tmp_path):
    launch, folder = _hanging(mpi, hang, tmp_path)
    doc = tmp_path / "trial.json"
    proc = start("trial", "--runs", "4", "--warmup", "0", "--mpi", mpi, "--algorithm", "allreduce=ring",
                 "--timeout", TIMEOUT_S, "--json", doc, "--", *launch, **PIPES)
    done, launcher, ranks = _stop(proc, launch, folder, None)
    one_line_error(done, shared=True, prefix=f"collkit: error: run 1 of 8 (default) ran past --timeout {TIMEOUT_S} s")
    assert done.stdout == ""
    _all_gone(launcher, ranks)
    saved = json.loads(doc.read_text())
    assert (saved["status"], saved["exit_status"], saved["timeout_s"], saved["runs"]) == ("timed out", 2,
                                                                                         TIMEOUT_S, [])


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_trial_interrupt_stops_every_rank(mpi, sig, hang, tmp_path):
    launch, folder = _hanging(mpi, hang, tmp_path)
    proc = start("trial", "--runs", "4", "--warmup", "0", "--mpi", mpi, "--algorithm", "allreduce=ring",
                 "--", *launch, **PIPES)
    done, launcher, ranks = _stop(proc, launch, folder, sig)
    one_line_error(done, shared=True, prefix=f"collkit: error: {sig.name} arrived during run 1 of 8 (default)")
    _all_gone(launcher, ranks)
