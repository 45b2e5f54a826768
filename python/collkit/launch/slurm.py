"""Run a campaign's launches as job steps of one Slurm allocation, and follow them.

A campaign repeats every launch group (launch/schedule.py), and a comparison of two
launches is fair only if they ran on the same nodes (issue #54): one batch job holds
every launch of the campaign's fixed rounds, in the schedule's interleaved order,
each a job step (srun, or the MPI's mpirun inside the allocation) on as many of the
allocation's nodes as its rank count needs. The allocation is as large as the
largest launch. The metadata says so (`repetitions`). Adaptive rounds, which wait
for the earlier rounds' results, do not run on Slurm (`SlurmLauncher.adaptive`).
For job NNNN and each of its launches LLLL the campaign holds

    DIR/jobs/job-NNNN.sbatch     the script, readable and resubmittable by hand
    DIR/jobs/job-NNNN.out        the job's own output (Slurm's --output): the setup lines
    DIR/jobs/job-NNNN.nodelist   SLURM_JOB_NODELIST, written by the script
    DIR/raw/launch-LLLL.points   what collkit-bench runs in that step
    DIR/raw/launch-LLLL.jsonl    what it wrote (copied into records.jsonl as it appears)
    DIR/raw/launch-LLLL.out      the step's output (its MPI's modules lines, the launcher)
    DIR/jobs.json                every job: Slurm id, state, reason, steps, nodes

Launch files share the numbering of raw/, so `--resume` takes in records a job
wrote while collkit was not watching, exactly as for local launches.

A job that ends without reporting some of its points (failed, cancelled, timed
out) gets those points recorded `failed` with the Slurm state and reason and the
tail of the step's output, marked ``job_failure``: that says nothing about the
algorithm, so `--resume` retries exactly those points (and the ones never run)."""

from __future__ import annotations

import json
import re
from shlex import quote as q
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from collkit.campaign.secrets import redact
from collkit.campaign.platform import Platform, PlatformMPI, SlurmSettings
from collkit.campaign.points import Point
from collkit.campaign.spec import Measure
from collkit.campaign.record import Record
from collkit.campaign.store import Campaign, now, points_text
from collkit.common import atomic
from collkit.common.errors import UserError
from collkit.common.hostlist import expand
from collkit.common.progress import Progress
from collkit.common.safe import ENV_NAME, control_character
from collkit.common.table import render
from collkit.launch.protocol import Launcher, LaunchStatus, Outcome
from collkit.launch.schedule import Schedule
from collkit.launch.watch import Copier, stderr_tail

JOBS = "jobs.json"
# How a batch script's own checks begin the line that says why it stopped;
# _finish makes that line the failure reason of the job's points.
SCRIPT_FAILURE = "collkit job: "
ACTIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING",
          "REQUEUE_HOLD", "REQUEUE_FED", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD")
UNSUBMITTED = "UNSUBMITTED"


@dataclass
class Step:
    """One launch inside a job: a launch group's round (launch/schedule.py)."""
    launch: int                  # raw/launch-LLLL
    repeat: int
    mpi: str
    ranks: int
    nodes: int
    env: dict[str, str]
    points: list[str]

    def files(self, campaign: Campaign) -> dict[str, Path]:
        base = campaign.raw.resolve() / f"launch-{self.launch:04d}"
        return {"points": base.with_suffix(".points"), "out": base.with_suffix(".jsonl"),
                "log": base.with_suffix(".out")}

    def to_json(self) -> dict:
        return {"launch": self.launch, "repeat": self.repeat, "mpi": self.mpi, "ranks": self.ranks,
                "nodes": self.nodes, "env": redact(self.env), "points": self.points}

    @classmethod
    def from_json(cls, d: dict) -> "Step":
        return cls(launch=d["launch"], repeat=d.get("repeat", 0), mpi=d["mpi"], ranks=d["ranks"],
                   nodes=d["nodes"], env=d.get("env", {}), points=list(d.get("points", [])))


@dataclass
class Job:
    number: int
    steps: list[Step]
    job_id: str = ""
    state: str = UNSUBMITTED
    reason: str = ""
    exit_code: str = ""
    nodelist: str = ""
    hosts: list[str] = field(default_factory=list)
    submitted: str = ""
    ended: str = ""

    @property
    def active(self) -> bool:
        return bool(self.job_id) and self.state in ACTIVE

    @property
    def nodes(self) -> int:
        return max((s.nodes for s in self.steps), default=1)

    @property
    def ranks(self) -> int:
        return max((s.ranks for s in self.steps), default=1)

    @property
    def points(self) -> list[str]:
        return [i for s in self.steps for i in s.points]

    def files(self, campaign: Campaign) -> dict[str, Path]:
        base = campaign.path.resolve() / "jobs" / f"job-{self.number:04d}"
        return {"script": base.with_suffix(".sbatch"), "log": base.with_suffix(".out"),
                "nodelist": base.with_suffix(".nodelist")}

    def to_json(self) -> dict:
        return {"job": self.number, "job_id": self.job_id, "state": self.state, "reason": self.reason,
                "exit_code": self.exit_code, "nodes": self.nodes, "ranks": self.ranks,
                "nodelist": self.nodelist, "hosts": self.hosts, "submitted": self.submitted, "ended": self.ended,
                "script": f"jobs/job-{self.number:04d}.sbatch", "steps": [s.to_json() for s in self.steps]}

    @classmethod
    def from_json(cls, d: dict) -> "Job":
        if "steps" in d:
            steps = [Step.from_json(x) for x in d["steps"]]
        else:   # a job of a campaign made before steps: one launch, its number the job's
            steps = [Step(d["job"], 0, d["mpi"], d["ranks"], d["nodes"], d.get("env", {}), list(d.get("points", [])))]
        return cls(number=d["job"], steps=steps, job_id=d.get("job_id", ""), state=d.get("state", ""),
                   reason=d.get("reason", ""), exit_code=d.get("exit_code", ""),
                   nodelist=d.get("nodelist", ""), hosts=list(d.get("hosts", [])),
                   submitted=d.get("submitted", ""), ended=d.get("ended", ""))


def load_jobs(campaign: Campaign) -> list[Job]:
    try:
        data = json.loads((campaign.path / JOBS).read_text())
    except FileNotFoundError:
        return []
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{campaign.path / JOBS} is unreadable: {exc}") from None
    try:
        return [Job.from_json(d) for d in data.get("jobs", [])]
    except (KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"{campaign.path / JOBS} holds a job collkit cannot read ({exc!r}); restore the file") \
            from None


def save_jobs(campaign: Campaign, jobs: list[Job]) -> None:
    atomic.write_json(campaign.path / JOBS, {"jobs": [j.to_json() for j in jobs]})


# ------------------------------------------------------------------ scripts
def _job_name(campaign: Campaign, number: int) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", campaign.resolved()["requested"]["name"])[:40]
    return f"collkit-{name}-{number:04d}"


def launch_command(s: SlurmSettings, pm: PlatformMPI, ranks: int, args: list[str], nodes: int | None = None) -> list[str]:
    """The line that starts collkit-bench inside the allocation (on `nodes` of its nodes)."""
    program, *extra = s.launcher
    if program == "srun":
        spread = ["-N", str(nodes)] if nodes else []
        return ["srun", "-n", str(ranks), *spread, *extra, str(pm.bench), *args]
    return [str(pm.install.mpirun), "-n", str(ranks), *pm.install.flags, *extra, str(pm.bench), *args]


def _one_line(text: str, what: str) -> str:
    """Text that lands on one line of the script (a comment, an #SBATCH
    directive, a shell word): a control character would end the line and start
    a command of its own, which no quoting prevents in a comment or directive."""
    bad = control_character(text)
    if bad:
        raise UserError(f"{what} contains a control character ({bad}): {text!r}; it cannot go into a batch script")
    return text


def _step_lines(campaign: Campaign, s: SlurmSettings, pm: PlatformMPI, step: Step, rounds: int) -> list[str]:
    """One launch: a subshell (its MPI's modules and environment stay in it) whose
    output goes to the launch's own file."""
    f = step.files(campaign)
    lines = [f"# launch {step.launch:04d}: round {step.repeat + 1} of {rounds}, {step.mpi}, {step.ranks} ranks on "
             f"{step.nodes} node(s), {len(step.points)} points", "("]
    if pm.modules:
        lines += [f"    # the environment of MPI {pm.name} ([mpi.{pm.name}] modules)",
                  *(f"    {_one_line(line, f'[mpi.{pm.name}] modules')}" for line in pm.modules)]
    bench = q(_one_line(str(pm.bench), "the path of collkit-bench"))
    lines += [f"    [ -f {bench} ] && [ -x {bench} ] || {{ printf '{SCRIPT_FAILURE}%s is not visible on %s: the "
              "compute nodes need it on a shared filesystem (COLLKIT_CACHE for the builds collkit makes, or "
              f"[mpi.{pm.name}] bench)\\n' {bench} \"$(hostname)\" | tee -a \"$COLLKIT_JOB_LOG\" >&2; exit 2; }}"]
    env = {**pm.install.env, **step.env}
    for k, v in env.items():
        if not ENV_NAME.fullmatch(k):
            raise UserError(f"environment variable name {k!r} cannot go into a batch script "
                            "(letters, digits and '_', not starting with a digit)")
        lines.append(f"    export {k}={q(_one_line(v, f'the value of {k}'))}")
    cmd = launch_command(s, pm, step.ranks, ["--points", str(f["points"]), "--out", str(f["out"])], step.nodes)
    lines += ["    " + " ".join(q(_one_line(c, "the launch command")) for c in cmd),
              f") > {q(_one_line(str(f['log']), 'the campaign directory'))} 2>&1", ""]
    return lines


def script(campaign: Campaign, s: SlurmSettings, platform: Platform, job: Job, rounds: int = 1) -> str:
    """A readable batch script. Every value that comes from input is checked for
    the line it lands on (no control characters anywhere; environment names to
    the shell's set) and shell-quoted where it is a shell word; only the
    platform's setup lines and the MPI's modules lines are shell by intent
    (module load ...)."""
    f = job.files(campaign)
    home = _one_line(str(campaign.path.resolve()), "the campaign directory")
    directives = [f"--job-name={_job_name(campaign, job.number)}", f"--nodes={job.nodes}",
                  f"--ntasks={job.ranks}"]
    if s.tasks_per_node:
        directives.append(f"--ntasks-per-node={s.tasks_per_node}")
    for key, flag in (("partition", "--partition"), ("account", "--account"), ("qos", "--qos"),
                      ("time_limit", "--time")):
        if getattr(s, key):
            directives.append(f"{flag}={_one_line(getattr(s, key), f'[slurm] {key}')}")
    if s.gpus:
        directives.append(f"--gpus-per-node={s.gpus}")
    directives += [f"--output={f['log']}", f"--chdir={home}"]
    flags = [_one_line(flag, "[slurm] sbatch_flags") for flag in s.sbatch_flags]
    lines = ["#!/bin/bash",
             f"# collkit campaign {home}, job {job.number:04d}: {len(job.steps)} launches of "
             f"{len(set(job.points))} points, every one on this allocation's nodes",
             *(f"#SBATCH {q(d)}" for d in directives),
             *(f"#SBATCH {q(flag)}" for flag in flags), "",
             f"COLLKIT_JOB_LOG={q(str(f['log']))}", ""]
    if s.setup:
        lines += ["# platform setup", *(_one_line(line, "[slurm] setup") for line in s.setup), ""]
    lines += ["# the allocation's nodes, for the campaign's metadata",
              f"printf '%s\\n' \"$SLURM_JOB_NODELIST\" > {q(str(f['nodelist']))}", ""]
    for step in job.steps:
        lines += _step_lines(campaign, s, platform.mpi(step.mpi), step, rounds)
    return "\n".join(lines)


def write_job(campaign: Campaign, platform: Platform, slots: list[tuple[int, list[Point]]], m: Measure,
              rounds: int) -> Job:
    """A job of the launches `slots` ((round, points) each, in the schedule's order)."""
    s = platform.slurm
    assert s is not None
    steps = []
    for repeat, points in slots:
        first = points[0]
        step = Step(launch=campaign.next_launch_number(), repeat=repeat, mpi=first.mpi, ranks=first.ranks,
                    nodes=s.nodes(first.ranks), env=dict(first.env), points=[p.id for p in points])
        # the points file is written at once: next_launch_number counts them
        step.files(campaign)["points"].write_text(points_text(points, m, repeat))
        steps.append(step)
    job = Job(number=len(load_jobs(campaign)) + 1, steps=steps)
    f = job.files(campaign)
    f["script"].parent.mkdir(exist_ok=True)
    atomic.write_text(f["script"], script(campaign, s, platform, job, rounds))
    return job


# ------------------------------------------------------------------ Slurm commands
class SlurmSlow(UserError):
    """A Slurm command did not answer in time: fatal for a one-off command,
    retried by the loop that follows jobs."""


def _slurm(args: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise UserError(f"{args[0]} not found: is this a Slurm login node (or module load slurm)?") from None
    except subprocess.TimeoutExpired:
        raise SlurmSlow(f"{args[0]} did not answer within {timeout:g} s") from None


def submit(campaign: Campaign, job: Job) -> None:
    r = _slurm(["sbatch", "--parsable", str(job.files(campaign)["script"])])
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"sbatch refused job {job.number:04d}: {last}")
    job.job_id = r.stdout.strip().split(";")[0]
    job.state, job.submitted = "PENDING", now()


def query(job_id: str) -> tuple[str, str, str]:
    """(state, reason, exit code) of a job; UNKNOWN once Slurm forgot it."""
    r = _slurm(["scontrol", "show", "job", "--oneliner", job_id], timeout=30)
    if r.returncode == 0 and "JobState=" in r.stdout:
        def field_(name: str) -> str:
            m = re.search(rf"\b{name}=(\S+)", r.stdout)
            return m.group(1) if m else ""
        reason = field_("Reason")
        return field_("JobState"), "" if reason == "None" else reason, field_("ExitCode")
    # Past MinJobAge the controller forgets a job; accounting may still know it.
    r = _slurm(["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State,ExitCode"], timeout=30)
    if r.returncode == 0 and r.stdout.strip():
        state, _, code = r.stdout.strip().splitlines()[0].partition("|")
        return state.split()[0], "", code
    return "UNKNOWN", "Slurm no longer knows the job", ""


def cancel_jobs(jobs: list[Job]) -> list[Job]:
    active = [j for j in jobs if j.active]
    if active:
        r = _slurm(["scancel", *[j.job_id for j in active]])
        if r.returncode != 0:
            raise UserError(f"scancel failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return active


# ------------------------------------------------------------------ following
class _Follow:
    def __init__(self, campaign: Campaign, job: Job, planned: dict[str, Point], progress: Progress):
        self.job = job
        self.copiers = []
        for step in job.steps:
            points = {i: planned[i] for i in step.points if i in planned}
            self.copiers.append((step, points, Copier(campaign, step.files(campaign)["out"], step.launch, step.mpi,
                                                      points, progress,
                                                      {"env": step.env, "slurm_job_id": job.job_id},
                                                      repeat=step.repeat)))

    def poll(self) -> None:
        for _, _, copier in self.copiers:
            copier.poll()

    def missing(self, campaign: Campaign) -> list[tuple[Step, list[Point]]]:
        out = []
        for step, points, _ in self.copiers:
            done = campaign.recorded_in(step.repeat)
            left = [p for i, p in points.items() if i not in done]
            if left:
                out.append((step, left))
        return out

    def offset(self) -> int:
        return sum(c.tail.offset for _, _, c in self.copiers)


def run_jobs(campaign: Campaign, platform: Platform, schedule: Schedule, m: Measure,
             progress: Progress, dry_run: bool = False) -> list[Job]:
    """Submit one job holding every launch of the fixed rounds with points not yet
    recorded (and not in a job that is still queued or running), then follow every
    job to its end."""
    s = platform.slurm
    assert s is not None
    jobs = load_jobs(campaign)
    planned = {p.id: p for members in schedule.groups.values() for p in members}
    follows: list[_Follow] = []
    if not dry_run:
        # jobs of an earlier `collkit run` that are still in Slurm: follow them, do not resubmit their points
        for job in jobs:
            if job.active:
                job.state, job.reason, job.exit_code = query(job.job_id)
                if job.active:
                    follows.append(_Follow(campaign, job, planned, progress))
    taken = {(i, st.repeat) for f in follows for st in f.job.steps for i in st.points}
    slots = []
    for slot in schedule.planned():
        todo = [p for p in schedule.todo(campaign, slot.key, slot.repeat) if (p.id, slot.repeat) not in taken]
        if todo:
            slots.append((slot.repeat, todo))
    new: list[Job] = [write_job(campaign, platform, slots, m, schedule.rounds)] if slots else []
    jobs += new
    save_jobs(campaign, jobs)
    if dry_run:
        return new
    try:
        for job in new:
            submit(campaign, job)
            save_jobs(campaign, jobs)
            progress.note(f"  job {job.number:04d}: Slurm job {job.job_id}, {len(job.steps)} launches of "
                          f"{len(set(job.points))} points on {job.nodes} node(s)")
            follows.append(_Follow(campaign, job, planned, progress))
    except BaseException:
        save_jobs(campaign, jobs)
        raise
    _follow(campaign, jobs, follows, s.poll_s, progress)
    return new


def _status_line(follows: list[_Follow]) -> str:
    counts: dict[str, int] = {}
    for f in follows:
        key = f.job.state.lower() if f.job.active else "done"
        counts[key] = counts.get(key, 0) + 1
    return "jobs: " + ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))


def _follow(campaign: Campaign, jobs: list[Job], follows: list[_Follow], poll_s: float,
            progress: Progress) -> None:
    pending = list(follows)
    next_query = 0.0
    while pending:
        for f in pending:
            f.poll()
        if time.monotonic() >= next_query:
            changed = False
            for f in pending:
                old = f.job.state
                try:
                    f.job.state, f.job.reason, f.job.exit_code = query(f.job.job_id)
                except SlurmSlow as slow:
                    # A busy controller answers late: follow on and ask again at the
                    # next poll; only a job's own end state ends its following.
                    progress.note(f"  job {f.job.number:04d}: {slow}; asking again")
                    continue
                if f.job.state != old:
                    changed = True
                    progress.note(f"  job {f.job.number:04d} (Slurm {f.job.job_id}): {f.job.state}"
                                  f"{f' ({f.job.reason})' if f.job.reason else ''}")
            for f in [f for f in pending if not f.job.active]:
                _finish(campaign, f, progress)
                pending.remove(f)
            if changed:
                save_jobs(campaign, jobs)
            progress.working_on(_status_line(follows))
            next_query = time.monotonic() + poll_s
        if pending:
            time.sleep(min(poll_s, 0.2))
    save_jobs(campaign, jobs)


def _finish(campaign: Campaign, f: _Follow, progress: Progress) -> None:
    job = f.job
    files = job.files(campaign)
    _settle(campaign, f)
    job.ended = now()
    try:
        job.nodelist = files["nodelist"].read_text().strip()
        job.hosts = expand(job.nodelist) if job.nodelist else []
    except (OSError, UserError):
        job.hosts = []
    for step, missing in f.missing(campaign):
        why = f"Slurm job {job.job_id} {job.state}"
        if job.reason:
            why += f" ({job.reason})"
        if job.exit_code and job.exit_code != "0:0":
            why += f", exit code {job.exit_code}"
        why += " before collkit-bench reported this point"
        stopped = _script_failure(step.files(campaign)["log"]) or _script_failure(files["log"])
        if stopped:
            why += f": {stopped}"
        log = step.files(campaign)["log"]
        tail = stderr_tail(log if log.exists() else files["log"])
        for p in missing:
            campaign.add(Record.failed(p, why, step.launch, tail, job_failure=True, slurm_job_id=job.job_id,
                                       repeat=step.repeat))
            progress.advance()
        progress.count("failed", f"  failed: job {job.number:04d}, launch {step.launch:04d}: {len(missing)} points: "
                                 f"{why}", points=len(missing))


# On a shared file system the job's last records can become visible on the login
# node after Slurm reports the job's end (NFS attribute caching holds a size for
# up to ~3 s by default). While points are missing, keep reading until the file
# has stopped growing for SETTLE_QUIET_S, and at most SETTLE_MAX_S: a job that
# died early costs one quiet interval, a late flush is still copied.
SETTLE_QUIET_S = 1.0
SETTLE_MAX_S = 30.0


def _settle(campaign: Campaign, f: _Follow) -> None:
    f.poll()
    give_up = time.monotonic() + SETTLE_MAX_S
    quiet_since, last = time.monotonic(), f.offset()
    while f.missing(campaign) and time.monotonic() < give_up:
        time.sleep(0.2)
        f.poll()
        if f.offset() != last:
            quiet_since, last = time.monotonic(), f.offset()
        elif time.monotonic() - quiet_since >= SETTLE_QUIET_S:
            return


def _script_failure(log: Path) -> str:
    """Why the batch script stopped itself (its last SCRIPT_FAILURE line), or ""."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    found = [ln[len(SCRIPT_FAILURE):].strip() for ln in text.splitlines() if ln.startswith(SCRIPT_FAILURE)]
    return found[-1] if found else ""


# ------------------------------------------------------------------ resume, status, cancel
def retry_job_failures(campaign: Campaign) -> int:
    """Remove the records of points a job never ran (kept in records-retried.jsonl),
    so that --resume runs them again. Returns how many."""
    path = campaign.path / "records.jsonl"
    lines = path.read_text().splitlines(keepends=True) if path.exists() else []
    keep, drop = [], []
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            keep.append(line)
            continue
        (drop if isinstance(rec, dict) and rec.get("job_failure") else keep).append(line)
    if drop:
        with open(campaign.path / "records-retried.jsonl", "a") as out:
            out.writelines(drop)
        atomic.write_text(path, "".join(keep))
        campaign.forget()
    return len(drop)


def metadata(campaign: Campaign, s: SlurmSettings | None) -> dict:
    jobs = load_jobs(campaign)
    out: dict = {"jobs": [{k: v for k, v in j.to_json().items() if k != "steps"}
                          | {"launches": [st.launch for st in j.steps], "points": len(set(j.points))}
                          for j in jobs],
                 "repetitions": "every launch of a job (each launch group's rounds, interleaved: "
                                "launch/schedule.py) is a job step of one allocation, on its nodes"}
    if s is not None:
        out["settings"] = {"partition": s.partition, "account": s.account, "qos": s.qos,
                           "time_limit": s.time_limit, "launcher": list(s.launcher),
                           "tasks_per_node": s.tasks_per_node, "gpus": s.gpus,
                           "sbatch_flags": list(s.sbatch_flags), "setup": list(s.setup)}
    return out


def refresh(campaign: Campaign) -> list[Job]:
    """Jobs with their states asked of Slurm where they may still change."""
    jobs = load_jobs(campaign)
    live = [j for j in jobs if j.active]
    for j in live:
        j.state, j.reason, j.exit_code = query(j.job_id)
    if live:
        save_jobs(campaign, jobs)
    return jobs


def jobs_table(jobs: list[Job]) -> str:
    rows = [[f"{j.number:04d}", j.job_id or "-", j.state, j.reason or "-", ",".join(sorted({s.mpi for s in j.steps})),
             str(len(j.steps)), str(j.nodes), str(len(set(j.points))), ",".join(sorted(set(j.hosts))) or "-"]
            for j in jobs]
    return render(["job", "slurm id", "state", "reason", "mpi", "launches", "nodes", "points", "hosts"], rows)


# ------------------------------------------------------------------ the launcher
class SlurmLauncher(Launcher):
    """One sbatch job holding every launch as a job step, followed to its end; status
    and cancel. Its script holds the fixed rounds only: no adaptive rounds."""

    adaptive = False

    def __init__(self, platform: Platform):
        super().__init__(platform)
        if platform.slurm is None:
            raise ValueError("not a Slurm platform")
        self.settings: SlurmSettings = platform.slurm

    @classmethod
    def serves(cls, platform: Platform) -> bool:
        return platform.slurm is not None

    @classmethod
    def ran(cls, campaign: Campaign) -> bool:
        return (campaign.path / JOBS).exists()

    def check_request(self, dry_run: bool) -> None:
        pass    # a dry run writes the batch scripts

    def prepare_resume(self, campaign: Campaign) -> list[str]:
        # points a job never ran (cancelled, failed, timed out) say nothing about
        # their algorithm: a resume on a cluster runs them again
        retried = retry_job_failures(campaign)
        return [f"collkit: {retried} points that Slurm jobs did not run will be submitted again"] if retried else []

    def run(self, campaign: Campaign, schedule: Schedule, measure: Measure, progress: Progress,
            dry_run: bool = False) -> Outcome:
        new = run_jobs(campaign, self.platform, schedule, measure, progress, dry_run)
        if not dry_run:
            return Outcome()
        notes = [f"collkit: wrote {job.files(campaign)['script']} ({len(job.steps)} launches of "
                 f"{len(set(job.points))} points)" for job in new]
        notes.append(f"collkit: dry run, nothing submitted; submit with: collkit run --resume {campaign.path} "
                     f"--platform {self.platform.source}")
        return Outcome(held="dry-run", notes=tuple(notes))

    def metadata(self, campaign: Campaign) -> dict:
        out = metadata(campaign, self.settings)
        modules = {name: list(pm.modules) for name, pm in self.platform.mpis.items() if pm.modules}
        if modules:
            out["mpi_modules"] = modules
        return {"slurm": out}

    def interrupted_notes(self, campaign: Campaign) -> list[str]:
        return [f"collkit: submitted jobs keep running; stop them with: collkit cancel {campaign.path}"]

    def retry_pending(self, campaign: Campaign) -> bool:
        return any(r.job_failure for r in campaign.records())

    @classmethod
    def status(cls, campaign: Campaign) -> LaunchStatus:
        jobs = refresh(campaign)
        if not jobs:
            return LaunchStatus()
        return LaunchStatus(table=jobs_table(jobs), summary=f"{sum(j.active for j in jobs)} jobs queued or running")

    @classmethod
    def cancel(cls, campaign: Campaign) -> list[str]:
        return [j.job_id for j in cancel_jobs(refresh(campaign))]
