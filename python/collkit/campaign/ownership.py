"""Who runs a campaign: one runner at a time, and what a dead runner left running.

    DIR/.lock             flock'd exclusively by the runner for its whole run; the
                          kernel drops it when the runner dies, even by kill -9
    DIR/runner.json       pid, host and start of the runner that holds (or held) it
    DIR/raw/running.json  the launch in flight: number, process group, a marker argument

A second runner on the same directory (two `--resume`, or two runs racing on one
`--out`) cannot take the lock and is refused in one line. A runner killed with
kill -9 leaves its launch running in its own session (mpirun and its ranks);
the next runner finds it through running.json, stops its process group, and
takes in what it wrote, so no point runs twice and none is lost."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import time
from pathlib import Path

from collkit.common import atomic
from collkit.common.errors import UserError

LOCK = ".lock"
RUNNER = "runner.json"
RUNNING = "running.json"
STOP_GRACE_S = 5.0


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def acquire(directory: Path) -> int:
    """Take the campaign's lock for this process; returns the descriptor that
    holds it (kept open for the run). Refuses if another runner holds it."""
    fd = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        who = _read(directory / RUNNER)
        by = f" (pid {who.get('pid', '?')} on {who.get('host', '?')}, since {who.get('started', '?')})" if who else ""
        raise UserError(f"campaign {directory} is being run by another collkit{by}; wait for it to finish, "
                        f"or stop it (collkit status {directory} tells) before resuming") from None
    return fd


def record_runner(directory: Path) -> None:
    """Say who holds the lock, for the refusal of a second runner and for status."""
    atomic.write_json(directory / RUNNER, {"pid": os.getpid(), "host": socket.gethostname(),
                                           "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")})


def release(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)   # closing the descriptor drops the flock


def runner_alive(directory: Path) -> bool:
    """Whether a runner holds the campaign's lock now (a probe: takes and drops it)."""
    path = directory / LOCK
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def runner(directory: Path) -> dict:
    return _read(directory / RUNNER)


def note_running(raw: Path, launch: int, pgid: int, marker: str) -> None:
    """Record the launch in flight; `marker` is an argument only its processes
    carry (the launch's own output file), to recognise them later."""
    atomic.write_json(raw / RUNNING, {"launch": launch, "pgid": pgid, "marker": marker,
                                      "host": socket.gethostname()})


def clear_running(raw: Path) -> None:
    (raw / RUNNING).unlink(missing_ok=True)


def _group_members(pgid: int) -> list[int]:
    """Processes of this host in process group pgid (from /proc)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ')'
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[2] == str(pgid):
            members.append(int(entry.name))
    return members


def _ours(pids: list[int], marker: str) -> bool:
    """Guard against a recycled process group id: some member must carry the
    launch's marker (its output file) on its command line."""
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.decode(errors="replace") == marker for a in argv):
            return True
    return False


def stop_orphan(raw: Path) -> str | None:
    """Stop the launch a dead runner left in flight, if it still runs here.
    Returns a line saying what was done, or None when nothing was running."""
    info = _read(raw / RUNNING)
    if not info:
        return None
    pgid, marker = int(info.get("pgid", 0) or 0), str(info.get("marker", ""))
    if info.get("host") != socket.gethostname() or pgid <= 1:
        clear_running(raw)
        return None
    members = _group_members(pgid)
    if not members or not marker or not _ours(members, marker):
        clear_running(raw)
        return None
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline and _group_members(pgid):
            time.sleep(0.1)
        if not _group_members(pgid):
            break
    clear_running(raw)
    return (f"collkit: stopped launch {info.get('launch', '?')} (process group {pgid}) that a killed runner "
            "left running; its finished points are taken in, the rest run now")
