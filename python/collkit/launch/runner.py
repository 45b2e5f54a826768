"""`collkit run`, `status`, `cancel`, `report`, `export`: a campaign from spec to summary.

The runner drives launches only through the launcher protocol
(collkit.launch.protocol); which launcher serves the platform, or ran a
campaign directory, is decided in collkit.launch.launchers."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import signal
import sys
from pathlib import Path

from collkit.analysis import per_rank, results
from collkit.campaign import metadata, ownership, plan as planner
from collkit.campaign import platform as platforms
from collkit.campaign import spec as specs
from collkit.campaign.points import Plan, Point
from collkit.campaign.record import Record
from collkit.campaign.store import Campaign, now, update_index
from collkit.common import atomic
from collkit.common.errors import UserError
from collkit.common.progress import Progress
from collkit.launch.eta import CampaignClock
from collkit.launch.launchers import launched_by, launcher_for
from collkit.launch.protocol import Launcher
from collkit.launch.schedule import Schedule
from collkit.library import registry


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: stop the launch, keep every record."""


def _on_sigterm(signum, frame):  # noqa: ARG001
    raise _Terminated()


def default_out(spec: specs.Spec) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("results") / f"{spec.name}-{stamp}"


def _run_each(spec: specs.Spec, spec_path: Path, out: Path | None, argv: list[str], dry_run: bool,
              instrument: bool, verbose: bool) -> int:
    """A spec that names its platforms (`platforms = [...]`) and no --platform:
    one campaign per platform, one after the other, each with its summary."""
    worst = 0
    stamp = default_out(spec)
    for name in spec.platforms:
        label, where = platforms.spec_entry(name, spec_path.parent)
        print(f"\n== platform {name}", flush=True)
        rc = run(spec_path, (out / label) if out else stamp.with_name(f"{stamp.name}-{label}"), None, where,
                 argv, dry_run, instrument, verbose)
        if rc == 130:
            return rc
        worst = max(worst, rc)
    return worst


def run(spec_path: Path | None, out: Path | None, resume: Path | None, platform_file: Path | None,
        argv: list[str], dry_run: bool = False, instrument: bool = False, verbose: bool = False) -> int:
    if spec_path is not None and resume is None and platform_file is None:
        named = specs.load(spec_path)
        if named.platforms:
            return _run_each(named, spec_path, out, argv, dry_run, instrument, verbose)
    # a resumed campaign runs where it ran unless told otherwise (platforms.for_campaign)
    recorded = Campaign.open(resume).resolved().get("platform", {}).get("source", "") \
        if resume and platform_file is None else ""
    platform = platforms.for_campaign(platform_file, recorded)
    launcher = launcher_for(platform)
    launcher.check_request(dry_run)
    if resume:
        campaign = Campaign.open(resume)
        campaign.take_ownership()   # one runner per campaign: a second is refused here
        stopped = ownership.stop_orphan(campaign.raw)
        if stopped:
            print(stopped, file=sys.stderr)
        for line in launcher.prepare_resume(campaign):
            print(line, file=sys.stderr)
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
        # The launches the campaign was made with (resolved.json): one for a campaign made
        # before launches were repeated, so a resume does not add rounds it never had.
        asked = campaign.resolved().get("measure") or {}
        try:
            rounds = int(asked.get("launches", 1)), int(asked.get("max_launches", asked.get("launches", 1)))
        except (TypeError, ValueError, AttributeError):
            raise UserError(f"{resume / 'resolved.json'} holds launches collkit cannot read; restore the file or "
                            "start a new campaign") from None
        spec = dataclasses.replace(spec, measure=dataclasses.replace(spec.measure, launches=rounds[0],
                                                                    max_launches=rounds[1]))
        if spec.instrument:
            platform = platforms.instrumented(platform, spec.mpis)
        platform = _device_platform(spec, platform)
        plan = campaign.plan()
        for mpi in spec.mpis:
            platform.mpi(mpi)
        meta = _read_metadata(resume / "metadata.json") or metadata.collect(spec, platform, argv)
        planned = {p.id: p for p in plan.points}
        taken = campaign.ingest_raw(planned, launcher.ingest_fields(campaign))
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
        platform = _device_platform(spec, platform)
        target = out or default_out(spec)
        try:
            plan = planner.build(spec, platform, registry.load(), campaign_dir=target)
        except UserError as exc:
            # planning errors (an unknown algorithm for this library, ...) name the spec they come from
            raise UserError(exc if str(exc).startswith(str(spec_path)) else f"{spec_path}: {exc}") from None
        if not plan.points and not plan.skipped:
            raise UserError(f"{spec_path}: the spec selects no test point")
        campaign = Campaign.create(target, spec, plan, platform)
        # listed at once, as running: a runner killed with -9 leaves it findable
        update_index(campaign.path.resolve().parent, campaign)
        meta = metadata.collect(spec, platform, argv)
        atomic.write_json(campaign.path / "metadata.json", meta)
        if spec.metadata == "full":
            for name in spec.mpis:
                atomic.write_text(campaign.path / f"library-{name}.txt",
                                  metadata.library_listing(platform.mpi(name)))
        for p in plan.skipped:
            campaign.add(Record.skipped(p))

    launcher = launcher_for(platform)   # the platform as it runs (instrumented: collkit-bench-instr)
    schedule = Schedule(interleaved(plan.points), spec.measure, simulated=launcher.deterministic,
                        adaptive=launcher.adaptive)
    fixed = schedule.planned()
    recorded = campaign.recorded_keys()
    total = len(plan.skipped) + sum(len(slot.points) for slot in fixed)
    done = len(plan.skipped) + sum((p.id, slot.repeat) in recorded for slot in fixed for p in slot.points)
    todo = len({p.id for p in plan.points} - campaign.recorded_ids())
    print(f"collkit: campaign {campaign.path} — {todo} of {len(plan.points)} points to run"
          f"{f', {len(plan.skipped)} skipped' if plan.skipped else ''}; {_launches_line(schedule)}",
          file=sys.stderr)
    progress = Progress(total, done=done, verbose=verbose, unit="point launches",
                        clock=CampaignClock.for_slots([(slot.repeat, list(slot.points)) for slot in fixed],
                                                      recorded))

    # Ctrl-C and SIGTERM both stop the campaign cleanly. SIGINT's handler is set
    # explicitly: a shell starts background jobs with SIGINT ignored, and a
    # campaign must still stop on it.
    previous = {sig: signal.signal(sig, handler) for sig, handler in
                ((signal.SIGTERM, _on_sigterm), (signal.SIGINT, signal.default_int_handler))}
    try:
        campaign.set_state("running")
        outcome = launcher.run(campaign, schedule, spec.measure, progress, dry_run)
        if outcome.held:   # a dry run: written down, nothing ran
            _close(campaign, meta, plan, outcome.held, launcher)
            for line in outcome.notes:
                print(line, file=sys.stderr)
            return 0
    except KeyboardInterrupt:
        progress.note("")
        _close(campaign, meta, plan, "interrupted", launcher)
        done = len(campaign.recorded_ids() & plan.all_ids())
        print(f"collkit: interrupted with {done} of {total} points recorded; "
              f"continue with: collkit run --resume {campaign.path}", file=sys.stderr)
        for line in launcher.interrupted_notes(campaign):
            print(line, file=sys.stderr)
        return 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    progress.finish()
    missing = schedule.unfinished(campaign)
    status = "complete" if not missing and not launcher.retry_pending(campaign) else "incomplete"
    if campaign.state().get("status") == "cancelled":
        status = "cancelled"   # `collkit cancel` said so while we followed the jobs
    _close(campaign, meta, plan, status, launcher)
    # the failed and invalid points are in the report's own table; the unstable ones
    # that a re-measure made steady are only in these notices
    return print_report(campaign, progress.notices("unstable"), verbose)


def _launches_line(schedule: Schedule) -> str:
    """How often each launch group runs (docs/bench-protocol.md, "Launches")."""
    if schedule.max_rounds == 1:
        why = "simulated times are deterministic" if schedule.simulated else "launches = 1"
        return f"{len(schedule.groups)} launch groups, each launched once ({why})"
    more = (f", up to {schedule.max_rounds} while a point's interval from its launches is wider than "
            f"{schedule.measure.launch_tolerance:.0%} of it") if schedule.max_rounds > schedule.rounds else ""
    return (f"{len(schedule.groups)} launch groups, each launched {schedule.rounds} times{more}, "
            f"interleaved (seed {schedule.measure.launch_seed})")


def interleaved(points: list[Point]) -> dict[tuple, list[Point]]:
    """The launch groups (points sharing a launch key, in plan order), ordered so
    that their kinds (library, rank count) take turns: the first launch of each
    kind, then the second of each, ..., each kind's smallest launches first. A
    slow drift of the machine (heat, a neighbour's job) then falls on every
    library and rank count alike instead of on the last one planned, and the
    time left can be estimated from every kind after a few percent of the
    campaign (collkit.launch.eta)."""
    groups: dict[tuple, list[Point]] = {}
    for p in points:
        groups.setdefault(p.launch_key(), []).append(p)
    kinds: dict[tuple, list[tuple]] = {}
    for key, members in groups.items():
        kinds.setdefault((members[0].mpi, members[0].ranks), []).append(key)
    for keys in kinds.values():
        keys.sort(key=lambda k: len(groups[k]))     # stable: plan order among equals
    order = [keys[i] for i in range(max((len(k) for k in kinds.values()), default=0))
             for keys in kinds.values() if i < len(keys)]
    return {key: groups[key] for key in order}


def _device_platform(spec, platform):
    """A spec with a device backend's points launches that backend's benchmark program
    (backends/devices.py; collkit-bench-nccl runs every backend)."""
    from collkit.backends import devices
    for device in devices.chosen(spec.backends):
        platform = device.launch_platform(spec, platform)
    return platform


def _read_metadata(path: Path) -> dict | None:
    """A campaign's metadata.json, or None when it is missing; a damaged one is a
    user-facing error, not a traceback."""
    if not path.exists():
        return None
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{path} cannot be read ({exc.__class__.__name__}); restore it, or delete it to have "
                        "the metadata collected again") from None
    if not isinstance(meta, dict):
        raise UserError(f"{path} is not a metadata object; restore it, or delete it to collect it again")
    return meta


def _first_error(rows: list[Record]) -> str | None:
    """The first failed point's own error: collkit-bench's message from its stderr
    tail where there is one, else the reason; never the MPI launcher's banner."""
    failed = [r for r in rows if r.status == "failed"]
    if not failed:
        return None
    first = failed[0]
    tail = str(first.fields.get("stderr_tail", ""))
    own = [line.strip() for line in tail.splitlines() if "collkit-bench" in line and line.strip()]
    detail = f" ({own[0]})" if own and own[0] not in first.reason else ""
    return f"{first.label}: {first.reason}{detail}"


def _close(campaign: Campaign, meta: dict, plan: Plan, status: str, launcher: Launcher) -> None:
    meta = metadata.finish(meta, campaign.launches(), plan.points)
    meta.update(launcher.metadata(campaign))
    atomic.write_json(campaign.path / "metadata.json", meta)
    atomic.write_text(campaign.path / "results.csv", results.to_csv(campaign.records()))
    campaign.set_state(status)
    update_index(campaign.path.resolve().parent, campaign)


# Notices of this run listed at its end (collkit run -v: all of them)
NOTICES_SHOWN = 10


def print_report(campaign: Campaign, unstable_notices: list[str] | None = None, verbose: bool = False) -> int:
    """The campaign's summary and tables; `unstable_notices`: the points this run
    measured before a steady state (the progress line counted them), listed once
    here, the ones a re-measure made steady included."""
    rows = campaign.records()
    counts = campaign.counts()
    limit = None if verbose else 20
    summary = results.summarise(rows)
    if summary:
        print(results.summary_table(summary))
    else:
        print("no point finished ok; nothing to compare")
    problems = results.problems_table(rows, limit)
    if problems:
        print("\nPoints that did not finish ok:")
        print(problems)
    if unstable_notices:
        shown = unstable_notices if verbose else unstable_notices[:NOTICES_SHOWN]
        more = "" if len(shown) == len(unstable_notices) else f"; the first {len(shown)}, `collkit run -v` lists all"
        print(f"\nMeasured before a steady state in this run, then measured again ({len(unstable_notices)}{more}):")
        print("\n".join(shown))
    unstable = results.unstable_table(rows, limit)
    if unstable:
        print("\nPoints measured before a steady state (left out of the summary; docs/bench-protocol.md):")
        print(unstable)
    ranks = per_rank.table(per_rank.collect(rows, campaign.path), 40 if limit else None)
    if ranks:
        print(f"\nPer-rank results (granularity = \"ranks\"; late: median above {per_rank.LATE_FACTOR:g} x "
              "the point's median rank; docs/bench-protocol.md):")
        print(ranks)
    skipped = results.skipped_table(rows)
    if skipped:
        print("\nSkipped points, by reason:")
        print(skipped)
    state = campaign.state().get("status", "?")
    print(f"\n{counts.line()} — campaign {state}: {campaign.path}")
    # An invalid result means an algorithm computed a wrong answer: that is never a
    # success. Failed points (a library refusing a forced algorithm) are reported
    # only, unless nothing at all succeeded: then the campaign measured nothing.
    if counts.invalid:
        return 1
    if counts.failed and not counts.ok and state != "cancelled":   # a cancel is the user's own stop
        print(f"collkit: no point succeeded; the first failure: {_first_error(rows)}", file=sys.stderr)
        return 1
    return 0


def status(path: Path) -> int:
    campaign = Campaign.open(path)
    launched = launched_by(campaign).status(campaign)
    if launched.table:
        print(launched.table)
        print()
    counts = campaign.counts()
    print(f"{counts.planned} points: {counts.line()}, {counts.unrecorded} not recorded"
          f"{f'; {launched.summary}' if launched.summary else ''} — campaign "
          f"{_liveness(campaign)}: {path}")
    return 0


def _liveness(campaign: Campaign) -> str:
    """The recorded state, told apart from the truth when they differ: a state
    "running" whose runner no longer holds the campaign's lock died (kill -9)."""
    state = campaign.state().get("status", "?")
    if state != "running":
        return state
    who = ownership.runner(campaign.path)
    pid = f"pid {who.get('pid', '?')} on {who.get('host', '?')}" if who else "no runner recorded"
    if ownership.runner_alive(campaign.path):
        return f"running ({pid})"
    return f"not running: its runner ({pid}) is gone; continue with collkit run --resume {campaign.path}"


def cancel(path: Path) -> int:
    campaign = Campaign.open(path)
    stopped = launched_by(campaign).cancel(campaign)
    campaign.set_state("cancelled", cancelled=now())
    print(f"cancelled {len(stopped)} active jobs"
          f"{': ' + ', '.join(stopped) if stopped else ''}; campaign {path} marked cancelled; "
          f"continue later with: collkit run --resume {path} --platform FILE")
    return 0


def report(path: Path) -> int:
    return print_report(Campaign.open(path))


def report_html(paths: list[Path], html: bool, out: Path | None, figures: Path | None) -> int:
    """`report --html` / `--figures`: the campaigns as one HTML file (report/html.py)."""
    from collkit.report import html as html_report
    return html_report.run(paths, html, out, figures)


def export(path: Path, fmt: str) -> int:
    campaign = Campaign.open(path)
    rows = campaign.records()
    if fmt == "ranks":
        sys.stdout.write(per_rank.to_csv(per_rank.collect(rows, campaign.path)))
        return 0
    sys.stdout.write(results.to_csv(rows) if fmt == "csv" else results.to_json(rows))
    return 0
