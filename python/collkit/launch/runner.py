"""`collkit run`, `collkit report`, `collkit export`: a campaign from spec to summary."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import signal
import sys
from pathlib import Path

from collkit.analysis import results
from collkit.campaign import metadata, plan as planner
from collkit.campaign import platform as platforms
from collkit.campaign import spec as specs
from collkit.campaign.points import Plan, Point
from collkit.campaign.store import Campaign, harness_record, now, update_index
from collkit.common import atomic
from collkit.common.errors import UserError
from collkit.common.progress import Progress
from collkit.launch import simgrid as sim_launch
from collkit.launch import slurm as slurm_launch
from collkit.launch.local import run_group
from collkit.library import registry


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: stop the launch, keep every record."""


def _on_sigterm(signum, frame):  # noqa: ARG001
    raise _Terminated()


def _plan_from_resolved(res: dict) -> Plan:
    def point(d: dict) -> Point:
        return Point(collective=d["collective"], backend=d["backend"], mpi=d["mpi"], algorithm=d["algorithm"],
                     ranks=d["ranks"], count=d["count"], bytes=d["bytes"], dtype=d["dtype"], op=d["op"],
                     root=d["root"], in_place=d["in_place"], native=d.get("native", ""),
                     env=tuple(sorted(d.get("env", {}).items())), readback=tuple(d.get("readback", ())),
                     cvars=tuple(sorted(d.get("cvars", {}).items())),
                     skip_reason=d.get("skip_reason", ""))
    return Plan(points=[point(d) for d in res["points"]], skipped=[point(d) for d in res["skipped"]])


def default_out(spec: specs.Spec) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("results") / f"{spec.name}-{stamp}"


def _run_each(spec: specs.Spec, spec_path: Path, out: Path | None, argv: list[str], dry_run: bool,
              instrument: bool) -> int:
    """A spec that names its platforms (`platforms = [...]`) and no --platform:
    one campaign per platform, one after the other, each with its summary."""
    worst = 0
    stamp = default_out(spec)
    for name in spec.platforms:
        label = name.removeprefix("sim:") if name.startswith("sim:") else Path(name).stem
        where = Path(name) if name.startswith("sim:") or Path(name).is_absolute() else spec_path.parent / name
        print(f"\n== platform {name}", flush=True)
        rc = run(spec_path, (out / label) if out else stamp.with_name(f"{stamp.name}-{label}"), None, where,
                 argv, dry_run, instrument)
        if rc == 130:
            return rc
        worst = max(worst, rc)
    return worst


def run(spec_path: Path | None, out: Path | None, resume: Path | None, platform_file: Path | None,
        argv: list[str], dry_run: bool = False, instrument: bool = False) -> int:
    if spec_path is not None and resume is None and platform_file is None:
        named = specs.load(spec_path)
        if named.platforms:
            return _run_each(named, spec_path, out, argv, dry_run, instrument)
    if resume and platform_file is None:
        # a simulated campaign knows its machine: resume it there
        source = Campaign.open(resume).resolved().get("platform", {}).get("source", "")
        if source.startswith("sim:"):
            platform_file = Path(source)
    platform = platforms.load(platform_file) if platform_file else platforms.detect()
    if dry_run and platform.slurm is None:
        raise UserError("--dry-run writes Slurm batch scripts: give a platform file with a [slurm] table")
    if resume:
        campaign = Campaign.open(resume)
        if platform.slurm is not None:
            # points a job never ran (cancelled, failed, timed out) say nothing about
            # their algorithm: a resume on a cluster runs them again
            retried = slurm_launch.retry_job_failures(campaign)
            if retried:
                print(f"collkit: {retried} points that Slurm jobs did not run will be submitted again",
                      file=sys.stderr)
        spec = specs.parse((resume / "spec.toml").read_text(), source=str(resume / "spec.toml"))
        if spec_path is not None and spec_path.read_text() != spec.text:
            raise UserError(f"{spec_path} differs from the spec of campaign {resume}; "
                            "resume without a spec argument, or start a new campaign")
        # `run --instrument` is not in spec.toml: resolved.json says what the campaign was.
        was_instrumented = bool(campaign.resolved()["requested"].get("instrument", False))
        if instrument and not was_instrumented:
            raise UserError(f"campaign {resume} was not instrumented; --instrument cannot change that "
                            "on resume: start a new campaign")
        spec = dataclasses.replace(spec, instrument=was_instrumented)
        if spec.instrument:
            platform = platforms.instrumented(platform, spec.mpis)
        plan = _plan_from_resolved(campaign.resolved())
        for mpi in spec.mpis:
            platform.mpi(mpi)
        meta = json.loads((resume / "metadata.json").read_text()) if (resume / "metadata.json").exists() \
            else metadata.collect(spec, platform, argv)
        planned = {p.id: p for p in plan.points}
        taken = campaign.ingest_raw(planned, sim_launch.resume_fields(campaign, platform.simgrid)
                                    if platform.simgrid is not None else None)
        if taken:
            print(f"collkit: took in {taken} records that the interrupted run had not copied", file=sys.stderr)
    else:
        if spec_path is None:
            raise UserError("give a spec file (collkit run SPEC.toml) or --resume DIR")
        spec = specs.load(spec_path)
        if instrument:
            spec = dataclasses.replace(spec, instrument=True)
        if spec.instrument:
            platform = platforms.instrumented(platform, spec.mpis)
        plan = planner.build(spec, platform, registry.load())
        if not plan.points and not plan.skipped:
            raise UserError(f"{spec_path}: the spec selects no test point")
        campaign = Campaign.create(out or default_out(spec), spec, plan, platform)
        meta = metadata.collect(spec, platform, argv)
        atomic.write_json(campaign.path / "metadata.json", meta)
        if spec.metadata == "full":
            for name in spec.mpis:
                atomic.write_text(campaign.path / f"library-{name}.txt",
                                  metadata.library_listing(platform.mpi(name)))
        for p in plan.skipped:
            campaign.add(harness_record(p, "skipped", p.skip_reason))

    total = len(plan.points) + len(plan.skipped)
    todo = len({p.id for p in plan.points} - campaign.recorded_ids())
    print(f"collkit: campaign {campaign.path} — {todo} of {len(plan.points)} points to run"
          f"{f', {len(plan.skipped)} skipped' if plan.skipped else ''}", file=sys.stderr)
    progress = Progress(total, done=len(campaign.recorded_ids() & (plan.all_ids())))
    groups: dict[tuple, list[Point]] = {}
    for p in plan.points:
        groups.setdefault(p.launch_key(), []).append(p)

    # Ctrl-C and SIGTERM both stop the campaign cleanly. SIGINT's handler is set
    # explicitly: a shell starts background jobs with SIGINT ignored, and a
    # campaign must still stop on it.
    previous = {sig: signal.signal(sig, handler) for sig, handler in
                ((signal.SIGTERM, _on_sigterm), (signal.SIGINT, signal.default_int_handler))}
    try:
        campaign.set_state("running")
        if platform.slurm is not None:
            new = slurm_launch.run_jobs(campaign, platform, groups, spec.measure, progress, dry_run)
            if dry_run:
                _close(campaign, meta, plan, "dry-run", platform)
                for job in new:
                    print(f"collkit: wrote {job.files(campaign)['script']} ({len(job.points)} points)",
                          file=sys.stderr)
                print(f"collkit: dry run, nothing submitted; submit with: collkit run --resume {campaign.path} "
                      f"--platform {platform.source}", file=sys.stderr)
                return 0
        elif platform.simgrid is not None:
            launcher = sim_launch.SimLauncher(campaign, platform, spec.measure)
            for members in groups.values():
                launcher.run_group(platform.mpi(members[0].mpi), members, progress)
        else:
            for members in groups.values():
                run_group(campaign, platform.mpi(members[0].mpi), members, spec.measure, progress)
    except KeyboardInterrupt:
        progress.note("")
        _close(campaign, meta, plan, "interrupted", platform)
        done = len(campaign.recorded_ids() & plan.all_ids())
        print(f"collkit: interrupted with {done} of {total} points recorded; "
              f"continue with: collkit run --resume {campaign.path}", file=sys.stderr)
        if platform.slurm is not None:
            print(f"collkit: submitted jobs keep running; stop them with: collkit cancel {campaign.path}",
                  file=sys.stderr)
        return 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    progress.finish()
    missing = plan.all_ids() - campaign.recorded_ids()
    failed_jobs = any(r.get("job_failure") for r in campaign.records())
    status = "complete" if not missing and not failed_jobs else "incomplete"
    if campaign.state().get("status") == "cancelled":
        status = "cancelled"   # `collkit cancel` said so while we followed the jobs
    _close(campaign, meta, plan, status, platform)
    return print_report(campaign)


def _close(campaign: Campaign, meta: dict, plan: Plan, status: str, platform=None) -> None:
    meta = metadata.finish(meta, campaign.launches(), plan.points)
    if platform is not None and platform.slurm is not None:
        meta["slurm"] = slurm_launch.metadata(campaign, platform.slurm)
    if platform is not None and platform.simgrid is not None:
        meta["simgrid"] = sim_launch.metadata(campaign, platform.simgrid)
    atomic.write_json(campaign.path / "metadata.json", meta)
    rows = [results.row(r) for r in campaign.records()]
    atomic.write_text(campaign.path / "results.csv", results.to_csv(rows))
    campaign.set_state(status)
    update_index(campaign.path.resolve().parent, campaign)


def _rows(path: Path) -> list[results.Row]:
    return [results.row(r) for r in Campaign.open(path).records()]


def print_report(campaign: Campaign) -> int:
    rows = [results.row(r) for r in campaign.records()]
    counts = results.status_counts(rows)
    summary = results.summarise(rows)
    if summary:
        print(results.summary_table(summary))
    else:
        print("no point finished ok; nothing to compare")
    problems = results.problems_table(rows)
    if problems:
        print("\nPoints that did not finish ok:")
        print(problems)
    state = campaign.state().get("status", "?")
    print(f"\n{counts['ok']} ok, {counts['invalid']} invalid, {counts['failed']} failed, "
          f"{counts['skipped']} skipped — campaign {state}: {campaign.path}")
    # An invalid result means an algorithm computed a wrong answer: that is never a
    # success. Failed points (a library refusing a forced algorithm) are reported only.
    return 1 if counts["invalid"] else 0


def status(path: Path) -> int:
    campaign = Campaign.open(path)
    jobs = slurm_launch.refresh(campaign) if (path / slurm_launch.JOBS).exists() else []
    if jobs:
        slurm_launch.print_jobs(jobs)
        print()
    res = campaign.resolved()
    planned = {d["id"] for d in res["points"]} | {d["id"] for d in res["skipped"]}
    recs = [r for r in campaign.records() if r["id"] in planned]
    counts = {s: sum(r["status"] == s for r in recs) for s in ("ok", "invalid", "failed", "skipped")}
    active = sum(j.active for j in jobs)
    print(f"{len(planned)} points: {counts['ok']} ok, {counts['invalid']} invalid, {counts['failed']} failed, "
          f"{counts['skipped']} skipped, {len(planned) - len(recs)} not recorded"
          f"{f'; {active} jobs queued or running' if jobs else ''} — campaign "
          f"{campaign.state().get('status', '?')}: {path}")
    return 0


def cancel(path: Path) -> int:
    campaign = Campaign.open(path)
    if not (path / slurm_launch.JOBS).exists():
        raise UserError(f"{path} has no Slurm jobs (jobs.json); a local run stops with Ctrl-C")
    jobs = slurm_launch.refresh(campaign)
    stopped = slurm_launch.cancel_jobs(jobs)
    campaign.set_state("cancelled", cancelled=now())
    print(f"cancelled {len(stopped)} active jobs"
          f"{': ' + ', '.join(j.job_id for j in stopped) if stopped else ''}; campaign {path} marked cancelled; "
          f"continue later with: collkit run --resume {path} --platform FILE")
    return 0


def report(path: Path) -> int:
    return print_report(Campaign.open(path))


def export(path: Path, fmt: str) -> int:
    rows = _rows(path)
    sys.stdout.write(results.to_csv(rows) if fmt == "csv" else results.to_json(rows))
    return 0
