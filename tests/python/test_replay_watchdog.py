"""`collkit replay` under the watchdog of `collkit profile` and `trial` (issue #52,
item 6; launch/watch.py): smpirun starts in a session of its own, and --timeout,
SIGINT or SIGTERM stop it with every process it started, then collkit ends with
one line and exit status 2. And the MPI shared-memory files of a stopped launch:
MPICH's ranks killed by a signal leave /dev/shm/mpich_shm_* behind, which the
watchdog removes (only those the launch held).

The replay tests put a stand-in in SimGrid's place (COLLKIT_SIMGRID_PREFIX, and
COLLKIT_BUILD_ROOT with a collkit-bench so that nothing is built): its smpirun
is fakes/fake_hang_launcher, whose ranks hang in the launcher's process group,
a group of their own and a session of their own, as real launchers place them.
They need neither SimGrid nor an MPI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

import mpi_programs
import needs
from cli_runner import one_line_error, start
from collkit.launch import watch
from collkit.mpis import known
from test_program_watchdog import _all_gone, _launcher_of, _ranks, _shared_memory
from test_replay import profile

FAKE = Path(__file__).parent / "fakes" / "fake_hang_launcher"
HANG = Path(__file__).parent / "fixtures" / "hang.c"
RANKS = 3          # one per placement of fake_hang_launcher's ranks
PIPES = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}


def _fake_simgrid(tmp_path: Path, *extra: str) -> tuple[dict[str, str], Path]:
    """The environment that makes `collkit replay` launch the stand-in smpirun,
    and the folder its ranks write their pids to."""
    prefix, build, pids, tmp = (tmp_path / d for d in ("simgrid", "build", "pids", "tmp"))
    for d in (prefix / "bin", build / "simgrid" / "bench", pids, tmp):
        d.mkdir(parents=True)
    smpirun = prefix / "bin" / "smpirun"
    # --version: what collkit asks a SimGrid given by COLLKIT_SIMGRID_PREFIX
    smpirun.write_text(f'#!/bin/sh\n[ "$1" = --version ] && {{ echo "SimGrid version 3.36.0"; exit 0; }}\n'
                       f'exec {sys.executable} {FAKE} {pids} {RANKS} {" ".join(extra)}\n')
    smpirun.chmod(0o755)
    (prefix / "bin" / "smpicc").write_text("#!/bin/sh\nexit 1\n")
    (prefix / "bin" / "smpicc").chmod(0o755)
    (build / "simgrid" / "bench" / "collkit-bench").write_text("")
    env = {"COLLKIT_SIMGRID_PREFIX": str(prefix), "COLLKIT_BUILD_ROOT": str(build), "TMPDIR": str(tmp)}
    return env, pids


def _replay(tmp_path: Path, sig: int | None, *extra_args: str, fake: tuple[str, ...] = ()):
    """Start `collkit replay` on the stand-in, wait for its ranks, send `sig` to
    collkit (None: let --timeout fire); collkit's result, the launcher, the ranks."""
    env, pids = _fake_simgrid(tmp_path, *fake)
    prof = profile(tmp_path / "p.json")
    proc = start("replay", prof, "--platform", "sim:fattree-2to1", *extra_args, env=env, **PIPES)
    try:
        ranks = _ranks(pids, RANKS, within=60)
        launcher = _launcher_of(proc, sys.executable)
        if sig is not None:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), launcher, ranks


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_stops_the_replay_with_every_process_it_started(sig, tmp_path):
    done, launcher, ranks = _replay(tmp_path, sig)
    _all_gone(launcher, ranks)      # first: it also kills what a failing replay left running
    one_line_error(done, "stopped with every process it started", "nothing replayed",
                   prefix=f"collkit: error: {sig.name} arrived: the simulated replay")
    assert done.stdout == ""
    assert list((tmp_path / "tmp").iterdir()) == []    # the replay's work folder went too


# 12 s (the grace before SIGKILL, then the kill), in `make test-full` only: the same
# run_watched path is timed out under both MPIs in test_program_watchdog.py.
@pytest.mark.full
def test_a_timeout_stops_a_launcher_that_ignores_sigterm(tmp_path):
    """--ignore-term: the stand-in outlives SIGTERM, so the stop must go on to SIGKILL."""
    done, launcher, ranks = _replay(tmp_path, None, "--timeout", "8", fake=("--ignore-term",))
    _all_gone(launcher, ranks)
    one_line_error(done, "ran past --timeout 8 s", "stopped with every process it started", "longer --timeout",
                   prefix="collkit: error: the simulated replay")
    assert list((tmp_path / "tmp").iterdir()) == []


# ------------------------------------------------------------------ shared memory of a stopped launch
# A rank of the stand-in below: maps (or only holds open) the files it is given,
# creating them, as an MPICH rank does its segment, then writes its pid and hangs.
RANK = """
import mmap, os, sys, time
rank, folder, how = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if rank % 2:
    os.setsid()                     # as MPICH's hydra places its ranks
keep = []
for path in sys.argv[4:]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, 4096)
    keep.append(mmap.mmap(fd, 4096) if how == "map" else fd)
    if how == "map":
        os.close(fd)                # mapped only: /proc/PID/maps tells, not /proc/PID/fd
with open(os.path.join(folder, f"rank-{rank}.pid.tmp"), "w") as f:
    f.write(f"{os.getpid()}\\n")
os.rename(os.path.join(folder, f"rank-{rank}.pid.tmp"), os.path.join(folder, f"rank-{rank}.pid"))
while True:
    time.sleep(60)
"""

LAUNCHER = """
import subprocess, sys, time
folder, ranks = sys.argv[1], sys.argv[2:]
children = [subprocess.Popen([sys.executable, "-c", RANK, str(r), folder, *spec.split(",")])
            for r, spec in enumerate(ranks)]
while True:
    time.sleep(60)
"""


def _shm(name: str) -> Path:
    return Path(watch.SHM_DIR) / name


def _run_until_up(argv: list[str], env, folder: Path, ranks: int) -> dict:
    """Run a launch under the watchdog, stop it with SIGTERM (to this process,
    as a user's to collkit) once its ranks are up; what was seen of it then."""
    seen: dict = {}

    def interrupt():
        try:
            seen["ranks"] = _ranks(folder, ranks)
            seen["shm"] = _shared_memory(seen["ranks"])
            seen["launcher"] = _launcher_of(SimpleNamespace(pid=os.getpid()), argv[0])
        finally:   # never leave the test waiting on a program that hangs
            os.kill(os.getpid(), signal.SIGTERM)
    spy = threading.Thread(target=interrupt)
    with watch.interrupts(), pytest.raises(watch.Interrupted):
        spy.start()
        watch.run_watched(argv, env, None, stdout=subprocess.PIPE)
    spy.join()
    return seen


def test_a_stopped_launch_leaves_no_mpi_shared_memory_and_touches_no_other_file(tmp_path):
    tag = uuid.uuid4().hex[:8]
    mapped, held_open = _shm(f"mpich_shm_{tag}_0"), _shm(f"mpich_shm_{tag}_1")
    not_mpi = _shm(f"collkit-test-{tag}")                # held by the launch, but not MPI's name
    others = _shm(f"mpich_shm_{tag}a_0")                 # MPI's name, but not held by the launch
    others.write_bytes(b"another job's")
    folder = tmp_path / "pids"
    folder.mkdir()
    argv = [sys.executable, "-c", f"RANK = {RANK!r}\n{LAUNCHER}", str(folder),
            f"map,{mapped},{not_mpi}", f"open,{held_open}"]
    try:
        seen = _run_until_up(argv, None, folder, 2)
        assert seen["shm"] == {mapped, not_mpi}          # the files were made and mapped before the stop
        assert not mapped.exists() and not held_open.exists()
        assert not_mpi.exists() and others.exists()
        _all_gone(seen["launcher"], seen["ranks"])
    finally:
        for path in (mapped, held_open, not_mpi, others):
            path.unlink(missing_ok=True)


def test_a_file_that_took_the_name_after_the_launch_is_kept(tmp_path):
    """Only the very file the launch held (its inode) is removed."""
    path = _shm(f"mpich_shm_{uuid.uuid4().hex[:8]}_0")
    path.write_bytes(b"the launch's")
    try:
        held = {str(path): (path.stat().st_dev, path.stat().st_ino)}
        replacement = path.with_name(path.name + ".new")
        replacement.write_bytes(b"a later job's")
        replacement.replace(path)     # a new inode under the same name
        watch._remove_shared_memory(held)
        assert path.read_bytes() == b"a later job's"
    finally:
        path.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def hang(tmp_path_factory):
    return mpi_programs.builder(tmp_path_factory, HANG)


@needs.mpich
def test_mpich_ranks_of_a_stopped_launch_leave_no_shared_memory(hang, tmp_path):
    folder = tmp_path / "pids"
    folder.mkdir()
    install = known.find_install("mpich")
    argv = [str(install.mpirun), "-n", "2", *install.flags, str(hang("mpich")), str(folder)]
    seen: dict = {}
    try:
        seen = _run_until_up(argv, install.environment(), folder, 2)
        mpich = [p for p in seen["shm"] if p.name.startswith("mpich_shm_")]
        assert mpich, f"MPICH's ranks mapped no mpich_shm_ file: {seen['shm']}"   # what the removal is for
        assert [p for p in mpich if p.exists()] == []
        _all_gone(seen["launcher"], seen["ranks"])
    finally:
        for p in seen.get("shm", ()):
            if p.name.startswith("mpich_shm_"):
                p.unlink(missing_ok=True)
