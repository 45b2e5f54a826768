"""``collkit spec --from-profile``: a campaign of exactly the calls a program makes.

Which classes: those whose share of the profile's time in collectives (the sum of
the classes' time_max_s) is at least --min-share percent. The share of the time in
collectives, not of wall time: the campaign chooses among collective algorithms,
and what the chosen ones are worth against the program's wall time is what
`collkit predict` reports; a wall-time threshold would leave a program that spends
little time in collectives with an empty campaign and nothing to predict from.

Each kept class becomes a point of the campaign: its collective, exactly its bytes,
ranks = its communicator's size, its datatype and op (a reduction), its root (a
rooted collective) and its in-place flag; `point_of` is that mapping's one home
(`collkit predict` finds a class's points through it). The campaign measures on a
world of comm_size ranks: a class on a sub-communicator is measured on
MPI_COMM_WORLD of the same size (same size, other processes: on one node alike, on
several the placement may differ).

Classes the campaign cannot measure are listed, with the reason, at the top of the
spec and on the terminal: barrier and the v-collectives (collkit-bench has no such
point), a user op or a predefined op collkit-bench does not run, a datatype it
cannot fill, an intercommunicator, 0 bytes.

Conditions (--conditions; campaign/conditions.py): with "program" (the default when
a kept class has a split of its time into waiting and working), each kept class
with a split becomes a [[case]] of its own, measured under its program's
conditions: gap_us the smallest of its ranks' gap medians (the part of the time
between calls that every rank spends; what is above it on a rank is that rank's
lateness, which the skew carries), skew_us each rank's arrival quantiles, both in
microseconds. Per case and not one distribution for the whole spec: skew_us has
one list per rank, and the classes differ in rank count, and in who arrives late
(a class after a rank's own work, another after everyone's). Classes without a
split keep the synchronised conditions, grouped as before. "synchronised" writes
every class that way (the campaign of before the split existed). Two classes on
different communicators of one size with the same bytes make the same campaign
point; the busier one's case is written first, and its conditions are measured."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from collkit.campaign import conditions as conds
from collkit.campaign import spec as specs
from collkit.campaign.sizes import format_size
from collkit.campaign.spec import LAUNCH_LIMIT, LAUNCHES
from collkit.common import atomic
from collkit.common.argtypes import int_range
from collkit.common.errors import UserError
from collkit.library import registry
from collkit.library.registry import COLLECTIVES
from collkit.program import profile_file
from collkit.program.profile_file import CallClass, Profile

DEFAULT_MIN_SHARE = 1.0
# Data-movement collectives move bytes; collkit-bench fills them as int8 so that
# count = bytes exactly (any block size is a whole number of int8 elements).
MOVEMENT_DTYPE = "int8"
# Measurement settings for re-measuring a program's few sizes: at least 10
# iterations (a median interval needs 6, results.py's check asks 10), 20 ms per point
# so that a spec of a dozen classes x ~20 algorithms stays a matter of seconds per
# launch, and a per-point timeout far above any of these points' times.
MEASURE = specs.Measure(warmup=2, min_iterations=10, max_iterations=1000, time_budget_s=0.02, timeout_s=60.0)
CONDITIONS = conds.MODES


@dataclass(frozen=True)
class PointOf:
    """The fields of the campaign points that measure one call class."""
    collective: str
    ranks: int
    bytes: int
    dtype: str
    op: str
    root: int
    in_place: bool

    @property
    def case_key(self) -> tuple:
        return (self.collective, self.ranks, self.dtype, self.op, self.root, self.in_place)


def point_of(c: CallClass) -> PointOf | str:
    """The campaign point of class c, or why the campaign cannot measure it."""
    if c.collective not in COLLECTIVES:
        if c.collective == "barrier":
            return "a barrier: collkit-bench has no barrier point"
        if c.collective.endswith("v"):
            return f"{c.collective}: blocks per rank; collkit-bench measures equal blocks only"
        return f"{c.collective}: collkit-bench has no {c.collective} point"
    if c.comm == "inter":
        return "an intercommunicator: collkit-bench measures one group of ranks"
    if c.bytes == 0:
        return "0 bytes: nothing to measure"
    reduction = profile_file.reduction(c.collective)
    dtype = c.dtype if reduction else MOVEMENT_DTYPE
    op = c.op if reduction else "sum"   # the spec's default op: data movement has none
    if reduction and c.op not in specs.OPS:
        return (f"op {c.op}: a user op, which collkit-bench cannot run" if c.op == "user"
                else f"op {c.op}: collkit-bench runs {', '.join(specs.OPS)}")
    if dtype is None:
        return f"datatype {c.datatype}: collkit-bench fills {', '.join(profile_file.dtypes())} in reductions"
    esize = registry.datatype_size(dtype)
    if c.bytes % esize:
        return f"{c.bytes} B is not a whole number of {dtype} elements (a damaged class)"
    if c.bytes // esize > specs.MAX_COUNT:
        return f"{c.bytes // esize} {dtype} elements: above MPI's int count limit"
    root = 0
    if profile_file.rooted(c.collective):
        if c.root is None:
            return "a rooted collective without its root in the profile"
        root = c.root
    # As plan.py's points: in place only where the collective's MPI form has an in-place variant
    in_place = c.in_place and registry.collective(c.collective).in_place != "none"
    return PointOf(c.collective, c.comm_size, c.bytes, dtype, op, root, in_place)


@dataclass(frozen=True)
class Selection:
    kept: tuple[tuple[CallClass, PointOf], ...]
    unmeasurable: tuple[tuple[CallClass, str], ...]
    below: tuple[CallClass, ...]       # measurable, under the share threshold
    total_s: float                     # the profile's time in collectives


def select(profile: Profile, min_share_pct: float) -> Selection:
    total = profile.class_time_sum_s
    kept, unmeasurable, below = [], [], []
    for c in profile.classes:
        target = point_of(c)
        if isinstance(target, str):
            unmeasurable.append((c, target))
        elif 100.0 * c.share(total) >= min_share_pct:
            kept.append((c, target))
        else:
            below.append(c)
    return Selection(tuple(kept), tuple(unmeasurable), tuple(below), total)


def describe(c: CallClass) -> str:
    """'allreduce comm world 4 ranks 8B double sum' and so on: a class in one line."""
    parts = [c.collective, f"comm {c.comm}", f"{c.comm_size} ranks", format_size(c.bytes)]
    if c.dtype or c.datatype:
        parts.append(c.dtype or c.datatype)
    if c.op:
        parts.append(c.op)
    if c.root is not None:
        parts.append(f"root {c.root}")
    if c.in_place:
        parts.append("in place")
    return " ".join(parts)


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _comment(text: str) -> str:
    """Text safe in a TOML comment (no control characters but tab)."""
    return _CONTROL.sub("?", text)


def _q(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, and json.dumps writes no '\\/')."""
    return json.dumps(text)


def _pct(part: float, total: float) -> str:
    return f"{100.0 * part / total:.1f} %" if total > 0 else "-"


def _field(obj: object, key: str, default=None):
    """A field of the profile's split, an object or (a file's) mapping alike."""
    return obj.get(key, default) if isinstance(obj, dict) else getattr(obj, key, default)


def program_conditions(c: CallClass) -> conds.Conditions | str:
    """The program conditions of class c from its split, or why it has none."""
    split = getattr(c, "split", None)
    if split is None:
        return _field(c, "split_reason", "") or "no split of its time in the profile"
    rows: dict[int, tuple[float, ...]] = {}
    gaps = []
    for r in _field(split, "ranks", ()) or ():
        q = [float(v) * 1e6 for v in (_field(r, "skew_quantiles_s", ()) or ())]
        if len(q) != registry.skew_quantiles() or not all(math.isfinite(v) for v in q):
            return f"rank {_field(r, 'rank')}: no {registry.skew_quantiles()} arrival quantiles"
        # within the campaign's bounds; non-decreasing as the profile measured them
        q = [min(max(v, 0.0), conds.MAX_US) for v in q]
        rows[int(_field(r, "rank", -1))] = tuple(round(max(q[:k + 1]), 3) for k in range(len(q)))
        gap = _field(r, "gap_median_s")
        if gap is not None and math.isfinite(float(gap)):
            gaps.append(float(gap) * 1e6)
    if sorted(rows) != list(range(c.comm_size)):
        return f"the split covers {len(rows)} of its {c.comm_size} ranks"
    gap_us = round(min(max(min(gaps), 0.0), conds.MAX_US), 3) if gaps else 0.0
    return conds.Conditions("program", gap_us, tuple(rows[r] for r in range(c.comm_size)))


def _toml_conditions(c: conds.Conditions) -> list[str]:
    rows = [f"[{', '.join(f'{v:.10g}' for v in row)}]" for row in c.skew_us]
    return ['conditions = "program"',
            f"gap_us = {c.gap_us:.10g}                 # the smallest of its ranks' gap medians",
            "skew_us = [                     # per rank: arrival after the first, 0, 10, ..., 100 % (us)",
            *(f"  {row}," for row in rows), "]"]


def write_spec(profile: Profile, sel: Selection, mpi: str, name: str, min_share_pct: float,
               conditions: str = "synchronised", launches: int = 3) -> str:
    total = sel.total_s
    kept_s = sum(c.time_max_s for c, _ in sel.kept)
    source = str(profile.path) if profile.path is not None else "a profile"
    version = (profile.mpi_library_version.splitlines() or ["?"])[0]
    lines = [
        f"# written by: collkit spec --from-profile {_comment(source)} --min-share {min_share_pct:g}",
        f"# program: {_comment(' '.join(profile.command))}",
        f"# MPI {_comment(profile.mpi_name)} ({_comment(version)}), "
        f"{profile.ranks} ranks on {profile.nodes} node(s), wall {profile.wall_s:.3g} s, "
        f"in collectives {total:.3g} s ({_pct(total, profile.wall_s)} of wall)",
        f"# kept: the {len(sel.kept)} classes with at least {min_share_pct:g} % of the time in collectives "
        f"({_pct(kept_s, total)} of it); {len(sel.below)} measurable classes below that are left out",
        "# One [[case]] per collective, rank count, datatype, op, root and in-place flag, with exactly the",
        "# classes' bytes (one rank's block, as the preload's rules count them). Every case runs on a world",
        "# of the class's communicator size: a class on a sub-communicator (its profile 'comm' label) is",
        "# measured on MPI_COMM_WORLD of that size. Data-movement collectives run as int8 (count = bytes).",
    ]
    if conditions == "program":
        lines += ["# Conditions: a class whose profile splits its time into waiting and working is a [[case]] of its",
                  "# own, measured under the program's conditions (calls back to back, each rank paced by the gap",
                  "# between calls and its own arrival skew: docs/campaigns.md); the others synchronised."]
    if sel.unmeasurable:
        lost = sum(c.time_max_s for c, _ in sel.unmeasurable)
        lines.append(f"# not measured: {len(sel.unmeasurable)} classes, {_pct(lost, total)} of the time in collectives")
        for c, why in sel.unmeasurable:
            lines.append(f"#   {_comment(describe(c))}, {c.calls} calls, {c.time_max_s:.3g} s: {_comment(why)}")
    lines += [
        "",
        f"name = {_q(name)}",
        f"description = {_q('the collective calls of ' + ' '.join(profile.command))}",
        f"mpi = [{_q(mpi)}]",
        "",
        "[backends]",
        'mpi = ["default", "all"]        # the library\'s choice and every algorithm it can be forced to run',
        'collkit = "all"                 # every libcollkit algorithm; what does not apply is a skipped point',
        "",
        "[measure]                       # moderate: a few sizes measured again, seconds per launch",
        f"warmup = {MEASURE.warmup}",
        f"min_iterations = {MEASURE.min_iterations}",
        f"max_iterations = {MEASURE.max_iterations}",
        f"time_budget_s = {MEASURE.time_budget_s:g}",
        f"timeout_s = {MEASURE.timeout_s:g}",
        f"launches = {launches:<22d}# each launch group this many times, interleaved; verdicts on",
        "                                # launches (docs/bench-protocol.md, \"Launches\"); more: more certainty",
    ]
    if profile.path is not None:
        path = Path(profile.path).resolve()
        lines += ["",
                  "[from_profile]                  # `collkit trial --campaign` predicts from this profile by default",
                  f"path = {_q(str(path))}",
                  f"sha256 = {_q(_digest(path))}"]
    # program conditions: a case per class with a split (its own conditions); the rest grouped
    groups: dict[tuple, list[tuple[CallClass, PointOf]]] = {}
    own: dict[tuple, conds.Conditions] = {}
    for c, p in sel.kept:
        cond = program_conditions(c) if conditions == "program" else None
        key = (p.case_key, c.key) if isinstance(cond, conds.Conditions) else p.case_key
        if isinstance(cond, conds.Conditions):
            own[key] = cond
        groups.setdefault(key, []).append((c, p))
    for key, members in sorted(groups.items(), key=lambda kv: -sum(c.time_max_s for c, _ in kv[1])):
        p = members[0][1]
        sizes = sorted({q.bytes for _, q in members})
        share = sum(c.time_max_s for c, _ in members)
        lines += [
            "",
            f"[[case]]   # {len(members)} class(es), {sum(c.calls for c, _ in members)} calls, "
            f"{_pct(share, total)} of the time in collectives",
            f"collectives = {_q(p.collective)}",
            f"ranks = {p.ranks}",
            f"sizes = [{', '.join(str(s) for s in sizes)}]   # bytes",
            f"dtype = {_q(p.dtype)}",
            f"op = {_q(p.op)}",
            f"root = {p.root}",
            f"in_place = {'true' if p.in_place else 'false'}",
        ]
        if key in own:
            c = members[0][0]
            lines += [f"# under the program's conditions of the class on comm {_comment(c.comm)} "
                      f"({_comment(str(_field(c.split, 'source', '')))}: {_field(c.split, 'matched_calls', 0)} "
                      "calls on one clock)", *_toml_conditions(own[key])]
        elif conditions == "program":
            why = program_conditions(members[0][0])
            lines.append(f"# synchronised: {_comment(why if isinstance(why, str) else 'grouped')}")
    return "\n".join(lines) + "\n"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def written_from(campaign: Path) -> Path | None:
    """The profile CAMPAIGN's spec was written from (its [from_profile]), checked
    to be the same bytes; None for a spec written otherwise."""
    spec_file = campaign / "spec.toml"
    if not spec_file.is_file():
        raise UserError(f"{campaign}: no spec.toml; give a campaign directory written by `collkit run`")
    source = specs.parse(spec_file.read_text(), source=str(spec_file)).from_profile
    if source is None:
        return None
    path = Path(source.path)
    if not path.is_file():
        raise UserError(f"{campaign} measured the calls of the profile {source.path} (its spec.toml's "
                        "[from_profile]), which is not there: give --profile with that profile")
    if _digest(path) != source.sha256:
        raise UserError(f"{source.path} has changed since {campaign}'s spec was written from it (its SHA-256 "
                        "is not [from_profile]'s): give --profile with the profile the spec was written from")
    return path


def _name(out: Path) -> str:
    """The campaign's name: the spec file's stem, made a safe name."""
    stem = re.sub(r"[^A-Za-z0-9._+-]", "-", out.stem)[:128].lstrip("._+-")
    return stem or "profile"


def run(ns: argparse.Namespace) -> int:
    if ns.min_share is not None and not 0.0 <= ns.min_share <= 100.0:
        raise UserError(f"--min-share {ns.min_share:g}: give a percentage from 0 to 100")
    min_share = DEFAULT_MIN_SHARE if ns.min_share is None else ns.min_share
    profile = profile_file.load(ns.from_profile, need_complete=True)
    mpi = profile.mpi_name
    if ns.mpi is not None:
        from collkit.mpis import known
        mpi = known.find(ns.mpi).name
    if not profile.classes or profile.class_time_sum_s <= 0:
        raise UserError(f"{ns.from_profile}: the profile records no time in collectives; there is nothing to "
                        "measure (profile a run that calls collectives)")
    sel = select(profile, min_share)
    with_split = [c for c, _ in sel.kept if isinstance(program_conditions(c), conds.Conditions)]
    conditions = getattr(ns, "conditions", None) or ("program" if with_split else "synchronised")
    if conditions == "program" and sel.kept and not with_split:
        raise UserError(f"--conditions program: no kept class of {ns.from_profile} has its time split into "
                        "waiting and working (profile the program again with this collkit, with a trace or the "
                        "default sampling), or use --conditions synchronised")
    for c, why in sel.unmeasurable:
        print(f"not measured: {describe(c)} ({c.calls} calls, {_pct(c.time_max_s, sel.total_s)}): {why}")
    if not sel.kept:
        raise UserError(f"{ns.from_profile}: no measurable class has {min_share:g} % of the time in collectives "
                        f"({len(sel.unmeasurable)} cannot be measured, {len(sel.below)} below); lower --min-share")
    out = Path(ns.out)
    text = write_spec(profile, sel, mpi, _name(out), min_share, conditions, getattr(ns, "launches", LAUNCHES))
    specs.parse(text, source=str(out))   # what `collkit run` will read: never write a spec it refuses
    try:
        atomic.write_text(out, text)
    except OSError as e:
        raise UserError(f"--out {out}: cannot write the spec ({e.strerror}); choose another path") from None
    cases = text.count("\n[[case]]")
    program = text.count('\nconditions = "program"')
    print(f"wrote {out}: {len(sel.kept)} classes in {cases} case(s), "
          f"{_pct(sum(c.time_max_s for c, _ in sel.kept), sel.total_s)} of the time in collectives"
          f"{f', {program} under the program conditions' if program else ''}; "
          f"measure them with `collkit run {out}`")
    return 0


DESCRIPTION = """\
Write a campaign spec that measures exactly the collective calls a profiled program
makes (`collkit profile`): every class with at least --min-share percent of the
program's time in collectives, at its bytes, rank count, datatype, op, root and
in-place flag, under the library's default, every algorithm the MPI can be forced
to run and every libcollkit algorithm."""

EPILOG = """\
examples:
  collkit spec --from-profile app.profile.json --out app.toml
  collkit spec --from-profile app.profile.json --min-share 5 --out app.toml
  collkit spec --from-profile app.profile.json --conditions synchronised --out app.toml
Classes whose profile splits their time into waiting and working are measured
under the program's conditions (back to back, each rank's arrival skew and the gap
between calls) unless --conditions synchronised.
Classes the campaign cannot measure (barrier, v-collectives, user ops, 0 bytes,
intercommunicators) are listed at the top of the spec with the reason.
See docs/application-loop.md."""


def add_parser(sub) -> None:
    p = sub.add_parser("spec", help="write a campaign spec of a profiled program's collective calls",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from-profile", required=True, metavar="FILE", help="a profile of `collkit profile`")
    p.add_argument("--min-share", type=float, metavar="PCT",
                   help=f"keep classes with at least PCT %% of the time in collectives (default {DEFAULT_MIN_SHARE:g})")
    p.add_argument("--mpi", metavar="NAME", help="measure on this known MPI (default: the profile's)")
    p.add_argument("--out", required=True, metavar="SPEC.toml", help="where to write the spec")
    p.add_argument("--launches", type=int_range("--launches", 1, LAUNCH_LIMIT), default=LAUNCHES, metavar="N",
                   help=f"launches of each launch group (default {LAUNCHES}; docs/bench-protocol.md, \"Launches\")")
    p.add_argument("--conditions", choices=CONDITIONS,
                   help="measure under the program's conditions (its classes' arrival skew and gap between calls) "
                        "or synchronised calls (default: program when the profile splits a kept class's time)")
    p.set_defaults(func=run)
