"""Starting, watching and stopping launched programs: one place for all launchers.

Every program collkit launches (mpirun, smpirun, ck_matrix under mpirun) starts
in a session of its own, so that `kill_group` ends it together with everything
it started (daemons, ranks). A Slurm job is not started here, but its output
file is read the same way.

For collkit-bench launches:

* `Tail` reads the complete lines appended to the launch's output file;
* `Copier` copies its records into the campaign as they appear (append +
  fsync in the store) with the fields only the CLI knows;
* `run_group` is the per-point watchdog: a point that produces nothing within
  its timeout is a hang, the whole launch is killed, the point is recorded
  `failed` with the tail of the launch's output, and a new launch takes the
  remaining points. A crash is handled the same way, with the exit status as
  the reason. Launchers supply only how a launch starts (`start`), how to read
  a failure the exit status hides (`diagnose`), and fields of their own for a
  point's record (`annotate`)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Callable, Iterator, Mapping, Sequence

from collkit.campaign.points import Point
from collkit.campaign.sizes import format_size
from collkit.campaign.spec import Measure
from collkit.campaign.record import Record
from collkit.campaign import launch_info, ownership
from collkit.campaign.store import Campaign, points_text
from collkit.common.progress import Progress

# Starting an MPI job (daemons, wire-up) is not the point's time.
STARTUP_GRACE_S = 30.0
POLL_S = 0.01   # also the resolution of the points' costs the ETA is estimated from (eta.py)

# fields a launcher adds to a point's record: annotate(point, launch number)
Annotate = Callable[[Point, int], dict]


# ------------------------------------------------------------------ processes
TERM_GRACE_S = 3.0   # from SIGTERM to SIGKILL: a launcher's time to stop its ranks itself
KILL_WAIT_S = 5.0    # after SIGKILL: what has not gone by then is stuck in the kernel


def start(argv: Sequence[str], env: Mapping[str, str] | None = None, log: Path | None = None) -> subprocess.Popen:
    """Start a program in a session of its own (its own process group). With
    `log`, its stdout and stderr go to that file; without, both are text pipes."""
    if log is not None:
        with open(log, "wb") as logf:
            return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                    env=None if env is None else dict(env), start_new_session=True)
    return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=None if env is None else dict(env), start_new_session=True)


def _processes() -> dict[int, tuple[int, int, int]]:
    """pid -> (parent pid, session, start time) of every process not yet ended,
    from /proc; empty where there is no /proc (then only the group is known)."""
    out: dict[int, tuple[int, int, int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) < 20 or fields[0] in ("Z", "X"):   # a zombie has ended: only its parent's wait is left
            continue
        out[int(name)] = (int(fields[1]), int(fields[3]), int(fields[19]))
    return out


def started_by(leader: int) -> dict[int, int]:
    """pid -> start time of every live process a launch started: the leader's
    descendants, whatever group or session they moved to (Open MPI's ranks
    take process groups of their own, MPICH's hydra proxies and ranks sessions
    of their own), and whatever is left in the leader's session (a daemon
    whose parent exited). The start time tells a reused pid apart."""
    procs = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = [leader]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    found |= {pid for pid, (_, session, _) in procs.items() if session == leader and pid != leader}
    return {pid: procs[pid][2] for pid in found}


def still_running(started: Mapping[int, int]) -> list[int]:
    """The processes of `started` (started_by's) that have not ended."""
    procs = _processes()
    return sorted(pid for pid, t in started.items() if pid in procs and procs[pid][2] == t)


def _wait_gone(started: Mapping[int, int], until: float) -> None:
    while still_running(started) and time.monotonic() < until:
        time.sleep(0.05)


def kill_group(proc: subprocess.Popen) -> None:
    """Stop a launch and everything it started (mpirun, its daemons, the ranks):
    SIGTERM to the process group, so that the launcher stops its ranks itself;
    then SIGKILL to the group and to every process the launch started
    (started_by: ranks in groups or sessions of their own outlive a launcher
    killed before them) that has not gone within TERM_GRACE_S. Returns once
    they have gone, or KILL_WAIT_S later, with the MPI shared-memory files
    the launch held removed (_held_shared_memory). An interrupt
    (KeyboardInterrupt) arriving meanwhile is raised once the stop is
    complete: cut short, it would leave ranks that nothing can find."""
    started = started_by(proc.pid)   # before any signal: an orphan has no parent to be found by
    shm = _held_shared_memory([proc.pid, *started])   # before any signal: a killed rank holds nothing
    pending: KeyboardInterrupt | None = None
    while True:
        try:
            _stop(proc, started)
            _remove_shared_memory(shm)
            break
        except KeyboardInterrupt as exc:
            pending = exc
    if pending is not None:
        raise pending


# MPICH's ch4 shared memory: one file per node and job, which MPL names
# /dev/shm/mpich_shm_%x_%d (the format string in the PyPI wheel's libmpi). Only
# its ranks unlink it, at MPI_Finalize: hydra answers SIGTERM by SIGKILLing them,
# so every stopped MPICH launch left about 4 MB of memory in /dev/shm (tmpfs)
# until a reboot. Open MPI's launcher removes its own segments.
SHM_DIR = "/dev/shm"
MPI_SHM_NAMES = (re.compile(r"mpich_shm_[0-9a-f]+_[0-9]+"),)


def _held_shared_memory(pids) -> dict[str, tuple[int, int]]:
    """path -> (device, inode) of the MPI shared-memory files (MPI_SHM_NAMES,
    in SHM_DIR, this user's) that the processes map or hold open. Held by the
    launch's own processes is what makes a file this launch's: another job's
    segment of the same name pattern, this user's or not, is never touched."""
    paths: set[str] = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps", "rb") as f:
                maps = f.read().decode(errors="replace")
        except OSError:
            maps = ""
        for line in maps.splitlines():
            fields = line.split(None, 5)
            if len(fields) == 6:
                paths.add(fields[5])
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            fds = []
        for fd in fds:   # a rank between creating the file and mapping it holds it open only
            try:
                paths.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                pass
    found: dict[str, tuple[int, int]] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        if folder != SHM_DIR or not any(p.fullmatch(name) for p in MPI_SHM_NAMES):
            continue      # also " (deleted)": already unlinked
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid == os.geteuid() and S_ISREG(st.st_mode):
            found[path] = (st.st_dev, st.st_ino)
    return found


def _remove_shared_memory(files: Mapping[str, tuple[int, int]]) -> None:
    """Unlink each file that is still the one the launch held (the same inode:
    not a later job's file that took the name)."""
    for path, ident in files.items():
        try:
            st = os.lstat(path)
            if (st.st_dev, st.st_ino) == ident:
                os.unlink(path)
        except OSError:
            pass


def _stop(proc: subprocess.Popen, started: Mapping[int, int]) -> None:
    grace = time.monotonic() + TERM_GRACE_S
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        _wait_gone(started, grace)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in still_running(started):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.wait(timeout=KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        pass
    _wait_gone(started, time.monotonic() + KILL_WAIT_S)


def signal_name(number: int) -> str:
    """A signal as people read it: SIGSEGV for 11, "signal 77" for a number without a name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_reason(code: int) -> str:
    """A return code in words; a negative one is the signal that killed the program."""
    if code < 0:
        name = signal_name(-code)
        return f"killed by {name}" if name.startswith("signal ") else f"killed by signal {name}"
    return f"exited with status {code}"


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived inside `interrupts()`."""

    def __init__(self, signum: int):
        super().__init__(signal_name(signum))
        self.signum = signum

    @property
    def name(self) -> str:
        return signal_name(self.signum)


class TimedOut(Exception):
    """A program ran past its time and was stopped with everything it started."""

    def __init__(self, seconds: float):
        super().__init__(f"ran past {seconds:g} s")
        self.seconds = seconds


@contextmanager
def interrupts() -> Iterator[None]:
    """Inside, SIGINT and SIGTERM raise Interrupted in the main thread, so that
    the code waiting for a program stops it (kill_group) before collkit exits.
    Only the first raises: the one line that tells what happened is said once.
    SIGINT is set explicitly, since a shell starts background jobs with it
    ignored. The previous handlers come back on the way out."""
    raised: list[int] = []

    def handler(signum, frame):  # noqa: ARG001
        if not raised:
            raised.append(signum)
            raise Interrupted(signum)
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@dataclass(frozen=True)
class Finished:
    """A program run to its end (or killed at its timeout) with its output in pipes."""
    code: int
    stdout: str
    timed_out: bool


def run_captured(argv: Sequence[str], env: Mapping[str, str] | None, timeout: float,
                 on_stderr: Callable[[str], None]) -> Finished:
    """Run a program in its own process group, collect its stdout, hand each
    stderr line to `on_stderr` as it comes, and kill the whole group at `timeout`."""
    proc = start(argv, env)
    chunks: list[str] = []

    def read_stdout() -> None:
        chunks.append(proc.stdout.read())

    def read_stderr() -> None:
        for raw in proc.stderr:
            on_stderr(raw.rstrip("\n"))

    readers = [threading.Thread(target=read_stdout, daemon=True), threading.Thread(target=read_stderr, daemon=True)]
    for t in readers:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
    except BaseException:
        kill_group(proc)
        raise
    code = proc.wait()
    readers[0].join()
    readers[1].join(timeout=5)
    proc.stdout.close()
    return Finished(code=code, stdout="".join(chunks), timed_out=timed_out)


def run_watched(argv: Sequence[str], env: Mapping[str, str] | None, timeout: float | None, *,
                stdout=None, stderr=None) -> Finished:
    """Run a user's program (its launcher) in a session of its own, with
    collkit's standard input, its output where the caller says (inherited by
    default, as a program run from a shell; subprocess.PIPE collects stdout as
    text), and stop it with everything it started (kill_group) at `timeout`
    seconds (TimedOut) or on any exception while it runs (an interrupt, which
    is raised again). OSError when the launcher cannot be started."""
    proc = subprocess.Popen(list(argv), stdout=stdout, stderr=stderr, text=True, errors="replace",
                            env=None if env is None else dict(env), start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)     # an interrupt meanwhile is raised after it, instead of TimedOut
        _close_pipes(proc)
        raise TimedOut(timeout) from None
    except BaseException:
        kill_group(proc)
        _close_pipes(proc)
        raise
    return Finished(code=proc.returncode, stdout=out or "", timed_out=False)


def _close_pipes(proc: subprocess.Popen) -> None:
    """Close the pipes of a stopped program (what it wrote last is not wanted)."""
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


def stderr_tail(path: Path, lines: int = 15, chars: int = 2000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])[-chars:]


# ------------------------------------------------------------------ collkit-bench's output
class Tail:
    """Complete lines appended to a file since the last call."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.partial = b""

    def lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self.partial + data
        *complete, self.partial = data.split(b"\n")
        return [line.decode(errors="replace") for line in complete if line.strip()]


def parse(line: str) -> dict | None:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def describe(p: Point) -> str:
    return f"{p.collective} {p.label} {format_size(p.bytes)} p={p.ranks}"


class Copier:
    """Copies one launch's records into the campaign as they appear in its output
    file: the launch record (with `launch_fields` after collkit-bench's own) and
    every point record of `points` (enriched, plus `annotate`'s fields)."""

    def __init__(self, campaign: Campaign, out: Path, number: int, mpi: str, points: Mapping[str, Point],
                 progress: Progress, launch_fields: Mapping[str, object], annotate: Annotate | None = None,
                 repeat: int = 0):
        self.campaign = campaign
        self.repeat = repeat        # the round of launch/schedule.py: every record says it
        self.marks: dict[str, object] = {}   # what the launch record says of every point (oversubscribed)
        self.tail = Tail(out)
        self.number = number
        self.mpi = mpi
        self.points = points
        self.progress = progress
        self.launch_fields = dict(launch_fields)
        self.annotate = annotate
        self.started = False        # the launch record arrived: MPI came up
        self.copied: set[str] = set()   # ids of the points this launch reported
        self.added: set[str] = set()    # those of them whose record the campaign took

    def extra(self, point: Point) -> dict:
        own = self.annotate(point, self.number) if self.annotate is not None else {}
        return {"repeat": self.repeat, **self.marks, **own}

    def poll(self) -> bool:
        """Copy what was appended; True when a point record of this launch arrived."""
        seen = False
        lines = self.tail.lines()
        # the points these lines finish, told to the progress clock before they are counted
        self.progress.points_done([r["id"] for r in map(parse, lines)
                                   if r is not None and r.get("type") == "point" and r.get("id") in self.points])
        for line in lines:
            rec = parse(line)
            if rec is None:
                continue
            if rec.get("type") == "launch":
                self.started = True
                if launch_info.oversubscribed(rec):
                    self.marks["oversubscribed"] = True   # on every point record of this launch
                self.progress.launch_up()
                self.campaign.add_launch({"launch": self.number, "mpi": self.mpi, "repeat": self.repeat, **rec,
                                          **self.launch_fields})
            elif rec.get("type") == "point" and rec.get("id") in self.points:
                point = self.points[rec["id"]]
                seen = True
                self.copied.add(point.id)
                again = point.id in self.campaign.recorded_in(self.repeat)   # a re-measure: counted once already
                if self.campaign.add(Record.from_bench(rec, point, self.number, **self.extra(point))):
                    self.added.add(point.id)
                    if not again:
                        self.progress.advance()
                    status = str(rec.get("status"))
                    if status != "ok":
                        self.progress.count(status, f"  {status}: {describe(point)}: {rec.get('reason', '')}")
                    elif rec.get("unstable"):
                        self.progress.count("unstable", f"  unstable: {describe(point)}: {rec['unstable']}")
        return seen


# ------------------------------------------------------------------ the per-point watchdog
@dataclass
class Launch:
    """One started launch of collkit-bench and its files under DIR/raw/."""
    number: int
    proc: subprocess.Popen
    out: Path       # collkit-bench's --out: the records
    err: Path       # the program's stdout and stderr


@dataclass(frozen=True)
class LaunchFiles:
    number: int
    points: Path
    out: Path
    err: Path


def launch_files(campaign: Campaign, points: list[Point], m: Measure, repeat: int = 0) -> LaunchFiles:
    """The next launch's files in DIR/raw/, with its points file written."""
    n = campaign.next_launch_number()
    base = campaign.raw / f"launch-{n:04d}"
    files = LaunchFiles(n, base.with_suffix(".points"), base.with_suffix(".jsonl"), base.with_suffix(".stderr"))
    files.points.write_text(points_text(points, m, repeat))
    return files


def run_group(campaign: Campaign, mpi: str, points: list[Point], m: Measure, progress: Progress,
              start: Callable[[list[Point]], Launch], diagnose: Callable[[Path], str | None] | None = None,
              annotate: Annotate | None = None, repeat: int = 0) -> None:
    """Run points that share one launch key until each has a record of round `repeat`
    that stands (an unstable one is measured again by a later launch, store.py).

    `start(remaining)` starts a launch of those points (its points file says the
    round: launch_files), `diagnose(output_path)` names a failure the exit status
    hides (SMPI exits 0 after a deadlock), and `annotate(point, launch)` gives fields
    added to that point's record."""
    def extra(point: Point, number: int) -> dict:
        return {"repeat": repeat, **(annotate(point, number) if annotate is not None else {})}

    def todo(pts: list[Point]) -> list[Point]:
        """Points without a record of this round, and unstable ones with re-measures left (store.py)."""
        again = campaign.remeasure_ids(repeat)
        return [p for p in pts if p.id not in campaign.recorded_in(repeat) or p.id in again]
    remaining = todo(points)
    while remaining:
        by_id = {p.id: p for p in remaining}
        launch = start(remaining)
        progress.launch_started(remaining, repeat)
        # a runner killed with -9 leaves this launch running; the next one stops it
        ownership.note_running(campaign.raw, launch.number, launch.proc.pid, str(launch.out))
        copier = Copier(campaign, launch.out, launch.number, mpi, by_id, progress,
                        {"env": dict(remaining[0].env)}, annotate, repeat)
        progress.working_on(describe(remaining[0]))
        deadline = time.monotonic() + STARTUP_GRACE_S + m.timeout_s
        timed_out = False
        try:
            while True:
                exited = launch.proc.poll() is not None
                if copier.poll():
                    nxt = _next(remaining, campaign, repeat)
                    if nxt:
                        progress.working_on(describe(nxt))
                    deadline = time.monotonic() + m.timeout_s
                if exited:
                    break
                if time.monotonic() > deadline:
                    timed_out = True
                    kill_group(launch.proc)
                    continue  # read what it wrote before dying, then leave
                time.sleep(POLL_S)
        except BaseException:
            kill_group(launch.proc)
            ownership.clear_running(campaign.raw)
            raise
        code = launch.proc.wait()
        ownership.clear_running(campaign.raw)
        # Recorded unstable by this launch: measured again by the next one, after the rest
        # (only what this launch added: a re-measure the campaign refused ends there).
        again = [p for p in todo(remaining) if p.id in copier.added]
        remaining = [p for p in todo(remaining) if p.id not in copier.copied]
        if not remaining:
            remaining = again
            continue
        tail_text = stderr_tail(launch.err)
        culprit = remaining[0]
        if timed_out:
            reason = f"no result within the {m.timeout_s:g} s point timeout (hung or too slow); launch killed"
        elif code == 2 and not copier.started:
            reason = "collkit-bench rejected its input: " + (tail_text.splitlines() or ["?"])[-1]
        else:
            reason = f"collkit-bench {exit_reason(code)} while running this point"
        found = diagnose(launch.err) if diagnose is not None else None
        if found:
            reason = f"{reason}: {found}"
        if not copier.started and not timed_out:
            # MPI never came up: every remaining point of this launch would fail
            # the same way; record them all rather than relaunching one by one.
            for p in remaining:
                if campaign.add(Record.failed(p, f"launch failed before the first point: {reason}",
                                              launch.number, tail_text, **extra(p, launch.number))):
                    progress.advance()   # not for a re-measure: its timed record stands (store.py)
            progress.count("failed", f"  failed: launch {launch.number} ({mpi}, {culprit.ranks} ranks, "
                                     f"{len(remaining)} points): {reason}", points=len(remaining))
            break
        if campaign.add(Record.failed(culprit, reason, launch.number, tail_text, **extra(culprit, launch.number))):
            progress.advance()   # not for a re-measure: its timed record stands (store.py)
        progress.count("failed", f"  failed: {describe(culprit)}: {reason}")
        remaining = remaining[1:] + again


def _next(points: list[Point], campaign: Campaign, repeat: int = 0) -> Point | None:
    ids, again = campaign.recorded_in(repeat), campaign.remeasure_ids(repeat)
    return next((p for p in points if p.id not in ids or p.id in again), None)
