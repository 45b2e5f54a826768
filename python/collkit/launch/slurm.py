"""Run a campaign's points as Slurm batch jobs, and follow them.

One job per launch group (MPI library, rank count, forcing environment), as the
local launcher has one mpirun per group: one allocation runs many points. For job
NNNN the campaign holds

    DIR/jobs/job-NNNN.sbatch     the script, readable and resubmittable by hand
    DIR/raw/launch-NNNN.points   what collkit-bench runs
    DIR/raw/launch-NNNN.jsonl    what it wrote (copied into records.jsonl as it appears)
    DIR/raw/launch-NNNN.out      the job's stdout and stderr (Slurm's --output)
    DIR/raw/launch-NNNN.nodelist SLURM_JOB_NODELIST, written by the script
    DIR/jobs.json                every job: Slurm id, state, reason, points, nodes

Job files share the launch numbering of raw/, so `--resume` takes in records a
job wrote while collkit was not watching, exactly as for local launches.

A job that ends without reporting some of its points (failed, cancelled, timed
out) gets those points recorded `failed` with the Slurm state and reason and the
tail of its output, marked ``job_failure``: that says nothing about the
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
from collkit.campaign.store import Campaign, now
from collkit.common import atomic
from collkit.common.errors import UserError
from collkit.common.hostlist import expand
from collkit.common.progress import Progress
from collkit.common.safe import ENV_NAME, control_character
from collkit.common.table import render
from collkit.launch.protocol import Groups, Launcher, LaunchStatus, Outcome
from collkit.launch.watch import Copier, stderr_tail

JOBS = "jobs.json"
# How a batch script's own checks begin the line that says why it stopped;
# _finish makes that line the failure reason of the job's points.
SCRIPT_FAILURE = "collkit job: "
ACTIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING",
          "REQUEUE_HOLD", "REQUEUE_FED", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD")
UNSUBMITTED = "UNSUBMITTED"


@dataclass
class Job:
    number: int
    mpi: str
    ranks: int
    nodes: int
    env: dict[str, str]
    points: list[str]
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

    def files(self, campaign: Campaign) -> dict[str, Path]:
        base = campaign.raw.resolve() / f"launch-{self.number:04d}"
        return {"script": campaign.path.resolve() / "jobs" / f"job-{self.number:04d}.sbatch",
                "points": base.with_suffix(".points"), "out": base.with_suffix(".jsonl"),
                "log": base.with_suffix(".out"), "nodelist": base.with_suffix(".nodelist")}

    def to_json(self) -> dict:
        return {"job": self.number, "job_id": self.job_id, "state": self.state, "reason": self.reason,
                "exit_code": self.exit_code, "mpi": self.mpi, "ranks": self.ranks, "nodes": self.nodes,
                "env": redact(self.env), "nodelist": self.nodelist, "hosts": self.hosts,
                "submitted": self.submitted, "ended": self.ended,
                "script": f"jobs/job-{self.number:04d}.sbatch", "points": self.points}

    @classmethod
    def from_json(cls, d: dict) -> "Job":
        return cls(number=d["job"], mpi=d["mpi"], ranks=d["ranks"], nodes=d["nodes"], env=d.get("env", {}),
                   points=list(d.get("points", [])), job_id=d.get("job_id", ""), state=d.get("state", ""),
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
    return [Job.from_json(d) for d in data.get("jobs", [])]


def save_jobs(campaign: Campaign, jobs: list[Job]) -> None:
    atomic.write_json(campaign.path / JOBS, {"jobs": [j.to_json() for j in jobs]})


# ------------------------------------------------------------------ scripts
def _job_name(campaign: Campaign, number: int) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", campaign.resolved()["requested"]["name"])[:40]
    return f"collkit-{name}-{number:04d}"


def launch_command(s: SlurmSettings, pm: PlatformMPI, ranks: int, args: list[str]) -> list[str]:
    """The line that starts collkit-bench inside the allocation."""
    program, *extra = s.launcher
    if program == "srun":
        return ["srun", "-n", str(ranks), *extra, str(pm.bench), *args]
    return [str(pm.install.mpirun), "-n", str(ranks), *pm.install.flags, *extra, str(pm.bench), *args]


def _one_line(text: str, what: str) -> str:
    """Text that lands on one line of the script (a comment, an #SBATCH
    directive, a shell word): a control character would end the line and start
    a command of its own, which no quoting prevents in a comment or directive."""
    bad = control_character(text)
    if bad:
        raise UserError(f"{what} contains a control character ({bad}): {text!r}; it cannot go into a batch script")
    return text


def script(campaign: Campaign, s: SlurmSettings, pm: PlatformMPI, job: Job) -> str:
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
             f"# collkit campaign {home}, job {job.number:04d}: "
             f"{len(job.points)} points, {job.mpi}, {job.ranks} ranks",
             *(f"#SBATCH {q(d)}" for d in directives),
             *(f"#SBATCH {q(flag)}" for flag in flags), ""]
    if s.setup:
        lines += ["# platform setup", *(_one_line(line, "[slurm] setup") for line in s.setup), ""]
    if pm.modules:
        lines += [f"# the environment of MPI {pm.name} ([mpi.{pm.name}] modules)",
                  *(_one_line(line, f"[mpi.{pm.name}] modules") for line in pm.modules), ""]
    lines += ["# the allocation's nodes, for the campaign's metadata",
              f"printf '%s\\n' \"$SLURM_JOB_NODELIST\" > {q(str(f['nodelist']))}", ""]
    bench = q(_one_line(str(pm.bench), "the path of collkit-bench"))
    lines += ["# collkit-bench must be visible here: a build on the login node needs a shared filesystem",
              f"[ -f {bench} ] && [ -x {bench} ] || {{ printf '{SCRIPT_FAILURE}%s is not visible on %s: the "
              "compute nodes need it on a shared filesystem (COLLKIT_CACHE for the builds collkit makes, or "
              f"[mpi.{pm.name}] bench)\\n' {bench} \"$(hostname)\" >&2; exit 2; }}", ""]
    env = {**pm.install.env, **job.env}
    if env:
        lines.append("# launch environment of the MPI library, then the forcing environment of this group")
        for k, v in env.items():
            if not ENV_NAME.fullmatch(k):
                raise UserError(f"environment variable name {k!r} cannot go into a batch script "
                                "(letters, digits and '_', not starting with a digit)")
            lines.append(f"export {k}={q(_one_line(v, f'the value of {k}'))}")
        lines.append("")
    cmd = launch_command(s, pm, job.ranks, ["--points", str(f["points"]), "--out", str(f["out"])])
    lines += [" ".join(q(_one_line(c, "the launch command")) for c in cmd), ""]
    return "\n".join(lines)


def write_job(campaign: Campaign, platform: Platform, points: list[Point], m: Measure) -> Job:
    s = platform.slurm
    assert s is not None
    first = points[0]
    job = Job(number=campaign.next_launch_number(), mpi=first.mpi, ranks=first.ranks,
              nodes=s.nodes(first.ranks), env=dict(first.env), points=[p.id for p in points])
    f = job.files(campaign)
    f["script"].parent.mkdir(exist_ok=True)
    # the points file is written first: next_launch_number counts them
    f["points"].write_text("".join(p.to_line(m) + "\n" for p in points))
    atomic.write_text(f["script"], script(campaign, s, platform.mpi(first.mpi), job))
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
        self.points = {i: planned[i] for i in job.points if i in planned}
        self.copier = Copier(campaign, job.files(campaign)["out"], job.number, job.mpi, self.points, progress,
                             {"env": job.env, "slurm_job_id": job.job_id})


def run_jobs(campaign: Campaign, platform: Platform, groups: Groups, m: Measure,
             progress: Progress, dry_run: bool = False) -> list[Job]:
    """Submit a job per group for the points not yet recorded (and not already in a
    job that is still queued or running), then follow every job to its end."""
    s = platform.slurm
    assert s is not None
    jobs = load_jobs(campaign)
    planned = {p.id: p for members in groups.values() for p in members}
    recorded = campaign.recorded_ids()
    follows: list[_Follow] = []
    if not dry_run:
        # jobs of an earlier `collkit run` that are still in Slurm: follow them, do not resubmit their points
        for job in jobs:
            if job.active:
                job.state, job.reason, job.exit_code = query(job.job_id)
                if job.active:
                    follows.append(_Follow(campaign, job, planned, progress))
    taken = {i for f in follows for i in f.points}
    new: list[Job] = []
    for members in groups.values():
        todo = [p for p in members if p.id not in recorded and p.id not in taken]
        if todo:
            new.append(write_job(campaign, platform, todo, m))
    jobs += new
    save_jobs(campaign, jobs)
    if dry_run:
        return new
    try:
        for job in new:
            submit(campaign, job)
            save_jobs(campaign, jobs)
            progress.note(f"  job {job.number:04d}: Slurm job {job.job_id}, {len(job.points)} points, "
                          f"{job.mpi}, {job.ranks} ranks on {job.nodes} node(s)")
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
            f.copier.poll()
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
    missing = [p for i, p in f.points.items() if i not in campaign.recorded_ids()]
    if not missing:
        return
    why = f"Slurm job {job.job_id} {job.state}"
    if job.reason:
        why += f" ({job.reason})"
    if job.exit_code and job.exit_code != "0:0":
        why += f", exit code {job.exit_code}"
    why += " before collkit-bench reported this point"
    stopped = _script_failure(files["log"])
    if stopped:
        why += f": {stopped}"
    tail = stderr_tail(files["log"])
    for p in missing:
        campaign.add(Record.failed(p, why, job.number, tail, job_failure=True, slurm_job_id=job.job_id))
        progress.advance()
    progress.count("failed", f"  failed: job {job.number:04d}: {len(missing)} points: {why}", points=len(missing))


# On a shared file system the job's last records can become visible on the login
# node after Slurm reports the job's end (NFS attribute caching holds a size for
# up to ~3 s by default). While points are missing, keep reading until the file
# has stopped growing for SETTLE_QUIET_S, and at most SETTLE_MAX_S: a job that
# died early costs one quiet interval, a late flush is still copied.
SETTLE_QUIET_S = 1.0
SETTLE_MAX_S = 30.0


def _settle(campaign: Campaign, f: _Follow) -> None:
    f.copier.poll()
    give_up = time.monotonic() + SETTLE_MAX_S
    quiet_since, last = time.monotonic(), f.copier.tail.offset
    while any(i not in campaign.recorded_ids() for i in f.points) and time.monotonic() < give_up:
        time.sleep(0.2)
        f.copier.poll()
        if f.copier.tail.offset != last:
            quiet_since, last = time.monotonic(), f.copier.tail.offset
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
    out: dict = {"jobs": [{k: v for k, v in j.to_json().items() if k != "points"} | {"points": len(j.points)}
                          for j in jobs]}
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
    rows = [[f"{j.number:04d}", j.job_id or "-", j.state, j.reason or "-", j.mpi, str(j.ranks), str(j.nodes),
             str(len(j.points)), ",".join(sorted(set(j.hosts))) or "-"] for j in jobs]
    return render(["job", "slurm id", "state", "reason", "mpi", "ranks", "nodes", "points", "hosts"], rows)


# ------------------------------------------------------------------ the launcher
class SlurmLauncher(Launcher):
    """One sbatch job per launch group, followed to its end; status and cancel."""

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

    def run(self, campaign: Campaign, groups: Groups, measure: Measure, progress: Progress,
            dry_run: bool = False) -> Outcome:
        new = run_jobs(campaign, self.platform, groups, measure, progress, dry_run)
        if not dry_run:
            return Outcome()
        notes = [f"collkit: wrote {job.files(campaign)['script']} ({len(job.points)} points)" for job in new]
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
