"""Launch collkit-bench with this machine's mpirun, and watch it.

One launch runs many points. collkit-bench writes a record per point as it
finishes; the watchdog copies each into the campaign at once and restarts the
per-point clock. A point that produces nothing within its timeout is a hang: the
whole launch (its process group) is killed, the point is recorded `failed` with
the tail of stderr, and a new launch takes the remaining points. A crash is
handled the same way, with the exit status as the reason."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from collkit.campaign.platform import PlatformMPI
from collkit.campaign.points import Point
from collkit.campaign.sizes import format_size
from collkit.campaign.spec import Measure
from collkit.campaign.store import Campaign, enrich, harness_record
from collkit.common.progress import Progress

# Starting an MPI job (daemons, wire-up) is not the point's time.
STARTUP_GRACE_S = 30.0
POLL_S = 0.05


def stderr_tail(path: Path, lines: int = 15, chars: int = 2000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])[-chars:]


def kill_group(proc: subprocess.Popen) -> None:
    """Stop a launch and everything it started (mpirun, its daemons, the ranks)."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _exit_reason(code: int) -> str:
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


class _Tail:
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


@dataclass
class _Launch:
    number: int
    proc: subprocess.Popen
    out: Path
    err: Path


def _start(campaign: Campaign, pm: PlatformMPI, points: list[Point], m: Measure) -> _Launch:
    n = campaign.next_launch_number()
    base = campaign.raw / f"launch-{n:04d}"
    points_file = base.with_suffix(".points")
    out, err = base.with_suffix(".jsonl"), base.with_suffix(".stderr")
    points_file.write_text("".join(p.to_line(m) + "\n" for p in points))
    env = pm.install.environment()
    env.update(dict(points[0].env))
    cmd = pm.install.launch(points[0].ranks, pm.bench, ["--points", str(points_file), "--out", str(out)])
    with open(err, "wb") as errf:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=errf, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)
    return _Launch(n, proc, out, err)


def run_group(campaign: Campaign, pm: PlatformMPI, points: list[Point], m: Measure,
              progress: Progress, start=None, diagnose=None, annotate=None) -> None:
    """Run points that share one launch key until each has a record.

    Other launchers reuse this watchdog (collkit.launch.simgrid): `start` starts
    a launch (default: mpirun here), `diagnose(stderr_path)` names a failure the
    exit status hides (SMPI exits 0 after a deadlock), and `annotate(point)`
    gives fields added to that point's record."""
    def extra(point: Point) -> dict:
        return annotate(point) if annotate is not None else {}
    remaining = [p for p in points if p.id not in campaign.recorded_ids()]
    while remaining:
        by_id = {p.id: p for p in remaining}
        launch = (start or _start)(campaign, pm, remaining, m)
        tail = _Tail(launch.out)
        started = False
        progress.working_on(_describe(remaining[0]))
        deadline = time.monotonic() + STARTUP_GRACE_S + m.timeout_s
        timed_out = False
        try:
            while True:
                exited = launch.proc.poll() is not None
                for line in tail.lines():
                    rec = _parse(line)
                    if rec is None:
                        continue
                    if rec.get("type") == "launch":
                        started = True
                        campaign.add_launch({"launch": launch.number, "mpi": pm.name, **rec,
                                             "env": dict(remaining[0].env)})
                    elif rec.get("type") == "point" and rec.get("id") in by_id:
                        point = by_id[rec["id"]]
                        if campaign.add(enrich(rec, point, launch.number) | extra(point)):
                            progress.advance()
                            if rec.get("status") != "ok":
                                progress.note(f"  {rec.get('status')}: {_describe(point)}: {rec.get('reason', '')}")
                        nxt = _next(remaining, campaign)
                        if nxt:
                            progress.working_on(_describe(nxt))
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
            raise
        code = launch.proc.wait()
        remaining = [p for p in remaining if p.id not in campaign.recorded_ids()]
        if not remaining:
            break
        tail_text = stderr_tail(launch.err)
        culprit = remaining[0]
        if timed_out:
            reason = f"no result within the {m.timeout_s:g} s point timeout (hung or too slow); launch killed"
        elif code == 2 and not started:
            reason = "collkit-bench rejected its input: " + (tail_text.splitlines() or ["?"])[-1]
        else:
            reason = f"collkit-bench {_exit_reason(code)} while running this point"
        found = diagnose(launch.err) if diagnose is not None else None
        if found:
            reason = f"{reason}: {found}"
        if not started and not timed_out:
            # MPI never came up: every remaining point of this launch would fail
            # the same way; record them all rather than relaunching one by one.
            for p in remaining:
                campaign.add(harness_record(p, "failed", f"launch failed before the first point: {reason}",
                                            launch.number, tail_text) | extra(p))
                progress.advance()
            progress.note(f"  failed: launch {launch.number} ({pm.name}, {culprit.ranks} ranks): {reason}")
            break
        campaign.add(harness_record(culprit, "failed", reason, launch.number, tail_text) | extra(culprit))
        progress.advance()
        progress.note(f"  failed: {_describe(culprit)}: {reason}")
        remaining = remaining[1:]


def _next(points: list[Point], campaign: Campaign) -> Point | None:
    ids = campaign.recorded_ids()
    return next((p for p in points if p.id not in ids), None)


def _describe(p: Point) -> str:
    return f"{p.collective} {p.label} {format_size(p.bytes)} p={p.ranks}"


def _parse(line: str) -> dict | None:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None
