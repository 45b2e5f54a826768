"""`collkit tune --validate`: the tuning file run inside its library at rank counts and
sizes the tuning did not measure, against the default and every forced algorithm,
in repeated, interleaved launches.

Held out: the rank counts between the measured ones and one step beyond the largest
(2, 4, 6, 8 measured: 3, 5, 7 and 10), sizes at the geometric midpoints between the
measured ones and one beyond the largest. Three campaign specs (launch/runner.py) are
written to FILE.validation/specs/: `default`, `tuned` (`tuned:FILE`) and `forced`
(`all`). Each repeat runs all three as separate campaigns in FILE.validation/repeat-K/,
forward (default, tuned, forced) or reverse, in the pattern forward, reverse, reverse,
forward, ... so that tuned is always launched next to both of its comparisons and
neither order dominates. The analysis (tune/replicated.py) treats each launch's median
as one sample."""

from __future__ import annotations

import math
import sys
import tomllib
from pathlib import Path

from collkit import backends
from collkit.analysis import stats
from collkit.campaign.sizes import format_size
from collkit.common import atomic
from collkit.common.errors import UserError
from collkit.common.table import render
from collkit.tune import data, replicated
from collkit.tune.decide import DEFAULT
from collkit.tune.writers import sidecar

DTYPE_BYTES = {"int8": 1, "int32": 4, "int64": 8, "float": 4, "double": 8}
REPEATS = 6
MIN_REPEATS, MAX_REPEATS = 4, 20     # at least 2 launches a side after the split; at most a long night
VARIANTS = ("default", "tuned", "forced")
INTERRUPTED = 130      # launch/runner.py's return code after Ctrl-C or SIGTERM


def check_repeats(n: int) -> int:
    if not MIN_REPEATS <= n <= MAX_REPEATS:
        raise UserError(f"--repeats {n}: give {MIN_REPEATS} to {MAX_REPEATS} (half the repeats choose the best "
                        "forced algorithm, the other half compare; each repeat relaunches every variant)")
    return n


def order(k: int) -> tuple[str, ...]:
    return VARIANTS if replicated.forward(k) else VARIANTS[::-1]


def held_out(measured_ranks: list[int], measured_sizes: list[int], dtype_bytes: int) -> tuple[list[int], list[int]]:
    """Rank counts between the measured ones and one step beyond the largest (the
    smallest gap between measured counts), and sizes between and beyond."""
    m = sorted(set(measured_ranks))
    ranks = [p for p in range(m[0], m[-1] + 1) if p not in m] if m else []
    if m:
        step = min((b - a for a, b in zip(m, m[1:])), default=1)
        ranks.append(m[-1] + step)
    sizes = set()
    s = sorted(measured_sizes)
    for a, b in zip(s, s[1:]):
        mid = int(round(math.sqrt(a * b) / dtype_bytes)) * dtype_bytes
        if a < mid < b:
            sizes.add(mid)
    sizes.add(2 * s[-1] + 2 * dtype_bytes if s else 8)    # beyond the largest, not a power of two
    return ranks, sorted(sizes)


def spec_text(src: dict, collectives: list[str], mpi: str, ranks: list[int], sizes: list[int],
              backends: list[str], name: str, description: str) -> str:
    def q(v):
        return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
    lines = [f"name = {q(name)}",
             f"description = {q(description)}",
             f"collectives = [{', '.join(q(c) for c in collectives)}]",
             f"sizes = [{', '.join(q(f'{s}B') for s in sizes)}]",
             f"ranks = [{', '.join(str(p) for p in ranks)}]",
             f"mpi = [{q(mpi)}]"]
    for key in ("dtype", "op", "root", "in_place"):
        if key in src:
            v = src[key]
            lines.append(f"{key} = {str(v).lower() if isinstance(v, bool) else v if isinstance(v, int) else q(v)}")
    lines += ["", "[backends]", f"mpi = [{', '.join(q(b) for b in backends)}]"]
    # One launch per campaign: each repeat is a launch of its own, and the analysis
    # (tune/replicated.py) takes the launches as its samples.
    measure = {**(src.get("measure") or {}), "launches": 1, "max_launches": 1}
    if measure:
        lines += ["", "[measure]"]
        for k, v in measure.items():
            lines.append(f"{k} = {str(v).lower() if isinstance(v, bool) else v if isinstance(v, (int, float)) else q(v)}")
    return "\n".join(lines) + "\n"


def rule_lookup(rules) -> "callable":
    """(collective, ranks, bytes) -> the file's choice; the library's default outside its rules."""
    def f(coll: str, p: int, n: int) -> str:
        for r in rules:
            if r.collective == coll and r.ranks == p and r.bytes_lo <= n and (r.bytes_hi is None or n <= r.bytes_hi):
                return r.choice
        return DEFAULT
    return f


def validation_dir(tuned: Path) -> Path:
    """Where --validate keeps the campaigns of the tuning file `tuned`: FILE.validation/."""
    return tuned.with_name(tuned.name + ".validation")


def rules_from_provenance(path: Path) -> list:
    """The rules of a written tuning file, from its FILE.provenance.json."""
    import json
    from collkit.tune.decide import Rule
    try:
        side = json.loads(path.read_text())
        return [Rule(r["collective"], int(r["ranks"]), int(r["bytes_lo"]), r["bytes_hi"], r["choice"], r["source"])
                for r in side["rules"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: not a collkit tune provenance file ({exc.__class__.__name__})") from None


def repeat_dir(vdir: Path, k: int) -> Path:
    return vdir / f"repeat-{k + 1}"


def collect(vdir: Path, repeats: int, mpi: str) -> dict[tuple[str, int, int], dict[str, replicated.Launched]]:
    """Per point and variant, the launch median of each repeat found in `vdir`."""
    points: dict[tuple[str, int, int], dict[str, replicated.Launched]] = {}
    for k in range(repeats):
        dirs = [repeat_dir(vdir, k) / v for v in VARIANTS if (repeat_dir(vdir, k) / v / "spec.toml").is_file()]
        if not dirs:
            continue
        for m in data.load(dirs, refuse_failed=False).points:
            if m.mpi != mpi:
                continue
            one = points.setdefault((m.collective, m.ranks, m.bytes), {}).setdefault(
                m.algorithm, replicated.Launched(m.algorithm))
            one.medians[k] = m.median_us
            one.implausible = one.implausible or m.implausible
    return points


def _cmp(c: replicated.Comparison | None) -> str:
    if c is None:
        return "-"
    mark = {"tie": "tie", "slower": "slower*", "faster": "faster*"}[c.verdict]
    return f"{c.ratio:.2f} [{c.ci[0]:.2f}, {c.ci[1]:.2f}] {mark}"


def _yes(v: bool | None) -> str:
    return {True: "MET", False: "NOT MET", None: "NOT SHOWN"}[v]


def report(rows: list[replicated.Row], summary: replicated.Summary | None) -> str:
    body = [[r.collective, str(r.ranks), format_size(r.bytes), f"{r.tuned_us:.1f}", r.best, f"{r.best_us:.1f}",
             _cmp(r.vs_best), f"{r.default_us:.1f}", _cmp(r.vs_default), r.chosen or "-", _cmp(r.vs_chosen)]
            for r in rows]
    out = [render(["collective", "ranks", "size", "tuned_us", "best forced", "best_us", "tuned/best [95% CI]",
                   "default_us", "tuned/default [95% CI]", "file chose", "tuned/chosen [95% CI]"], body,
                  right={1, 2, 3, 5, 6, 7, 8, 10})]
    if summary is None:
        out.append("no point was measured with tuned, the default and a forced algorithm in both halves of the "
                   "repeats: nothing to compare")
        return "\n".join(out)
    s, n = summary, summary.repeats
    sel = ", ".join(str(k + 1) for k in replicated.selection_repeats(n))
    cmp_ = ", ".join(str(k + 1) for k in replicated.comparison_repeats(n))
    out += [
        f"{s.points} points, {n} repeats; one sample = one launch's median. Best forced: the lowest median over "
        f"repeats {sel}; tuned/best over repeats {cmp_}; tuned/default and tuned/chosen over all {n}.",
        f"criterion 1, median tuned/best forced <= {replicated.GOAL:g} or not significantly above 1: "
        f"{s.vs_best:.3f} [{s.vs_best_ci[0]:.3f}, {s.vs_best_ci[1]:.3f}] -> {_yes(s.meets_regret)}",
        f"  points significantly slower than the best forced: {s.worse_than_best} (the smallest Holm-adjusted p "
        f"these launches allow: {s.min_adjusted_p_best:.3g}); best chosen and compared on the same launches "
        f"would give {s.same_sample_vs_best:.3f} (winner's curse)",
        f"criterion 2, never significantly worse than the default: {s.worse_than_default} of {s.points} points "
        f"significantly slower; median tuned/default {s.vs_default:.3f} [{s.vs_default_ci[0]:.3f}, "
        f"{s.vs_default_ci[1]:.3f}] -> {_yes(s.meets_default)}",
        f"  points whose own interval lies above 1: {s.default_ci_above_1} (no adjustment; about "
        f"{0.025 * s.points:.1f} expected if all were ties)"]
    if not s.default_testable:
        out.append(f"  NOT SHOWN: with {n} launches a side the exact test's smallest p times {s.points} points "
                   f"is {s.min_adjusted_p_default:.3g} >= alpha {stats.ALPHA:g}, so no single point can be "
                   "significant; more --repeats (9 or more for 100 points) make it testable")
    if s.chosen_points:
        out.append(f"tuned against what the file chose, forced: median {s.chosen_ratio:.3f}, significantly "
                   f"different at {s.chosen_differs} of {s.chosen_points} points")
    out.append("intervals: 95 % percentile bootstrap over launches (overall: of the median over points); "
               "slower*/faster*: exact Mann-Whitney U on launch medians, Holm over the points of each column, "
               f"alpha {stats.ALPHA:g}; tie: not significant")
    return "\n".join(out)


def write_specs(vdir: Path, src: dict, collectives: list[str], mpi: str, ranks: list[int], sizes: list[int],
                tuned: Path) -> dict[str, Path]:
    backends = {"default": ["default"], "tuned": [f"tuned:{tuned.resolve()}"], "forced": ["all"]}
    paths = {}
    try:
        (vdir / "specs").mkdir(parents=True)
    except OSError as exc:
        raise UserError(f"cannot create {vdir / 'specs'}: {exc.strerror}; write the tuning file elsewhere") from None
    for v in VARIANTS:
        paths[v] = vdir / "specs" / f"{v}.toml"
        atomic.write_text(paths[v], spec_text(src, collectives, mpi, ranks, sizes, backends[v],
                                              f"validate-{tuned.name}-{v}".replace(".", "-"),
                                              f"held-out validation of {tuned.name}: {v}"))
    return paths


def run(dirs: list[Path], tuned: Path, target, rules, repeats: int = REPEATS) -> int:
    check_repeats(repeats)
    formats = backends.tuning_formats()
    if target.fmt not in formats:
        raise UserError(f"--validate runs a library with its tuning file loaded: --format {' or '.join(formats)}")
    vdir = validation_dir(tuned)
    if vdir.exists():
        raise UserError(f"{vdir} already exists; remove it or write the tuning file elsewhere")
    measured = [r for r in rules if r.source == "measured"]
    ranks_m = sorted({r.ranks for r in measured})
    sizes_m = sorted({b for r in measured for b in r.at_bytes})
    try:
        src = tomllib.loads((dirs[0] / "spec.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"{dirs[0] / 'spec.toml'} cannot be read ({exc}); the campaign directory is damaged") from None
    ranks, sizes = held_out(ranks_m, sizes_m, DTYPE_BYTES.get(str(src.get("dtype", "int32")), 8))
    if len(ranks) < 2:
        raise UserError("no rank count between the measured ones was left out, so nothing is held out: "
                        "measure e.g. 2, 4, 6, 8 ranks (validation then runs 3, 5, 7 and 10)")
    specs = write_specs(vdir, src, sorted({r.collective for r in rules}), target.mpi, ranks, sizes, tuned)
    print(f"validation: {vdir} ({repeats} repeats; ranks {', '.join(map(str, ranks))}; "
          f"sizes {', '.join(format_size(s) for s in sizes)})", flush=True)
    return _repeat(vdir, specs, 0, repeats, tuned, target, rules, ranks[0])


COMPLETE = "complete"     # written into repeat-K/ once all three variants of that repeat ran


def resume(tuned: Path, target, repeats: int = REPEATS) -> int:
    """Go on with an interrupted validation of `tuned` (its FILE.validation/ and
    provenance as the first run left them) up to `repeats` repeats. A repeat cut off
    half-way is moved aside (repeat-K.interrupted) and run again whole."""
    check_repeats(repeats)
    vdir = validation_dir(tuned)
    specs = {v: vdir / "specs" / f"{v}.toml" for v in VARIANTS}
    if not all(p.is_file() for p in specs.values()):
        raise UserError(f"{vdir}: no validation to resume (specs/default.toml, tuned.toml, forced.toml); "
                        "run --validate without --resume first")
    rules = rules_from_provenance(sidecar.path(tuned))
    done = 0
    while (repeat_dir(vdir, done) / COMPLETE).is_file():
        done += 1
    if done >= repeats:
        raise UserError(f"{vdir}: {done} repeats are already complete; give --repeats above {done} to add more")
    cut = repeat_dir(vdir, done)
    if cut.exists():
        aside = cut.with_name(cut.name + ".interrupted")
        k = 1
        while aside.exists():
            k += 1
            aside = cut.with_name(f"{cut.name}.interrupted-{k}")
        cut.rename(aside)
        print(f"validation: {cut.name} was cut off half-way; kept as {aside.name} and run again", flush=True)
    try:
        ranks = tomllib.loads(specs["tuned"].read_text())["ranks"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise UserError(f"{specs['tuned']} cannot be read ({exc}); the validation directory is damaged") from None
    print(f"validation: {vdir} resumed at repeat {done + 1} of {repeats}", flush=True)
    return _repeat(vdir, specs, done, repeats, tuned, target, rules, int(ranks[0]))


def _repeat(vdir: Path, specs: dict[str, Path], start: int, repeats: int, tuned: Path, target, rules,
            proof_ranks: int) -> int:
    from collkit.launch import runner
    from collkit.tune import proof
    shown = proof.check(target.fmt, tuned, proof_ranks, mpi=target.mpi)
    print("\n".join(shown.lines), flush=True)
    rc, complete = 0, start
    try:
        for k in range(start, repeats):
            print(f"validation repeat {k + 1} of {repeats}: {', '.join(order(k))}", flush=True)
            for v in order(k):
                got = runner.run(specs[v], repeat_dir(vdir, k) / v, None, None, sys.argv, False, False)
                if got == INTERRUPTED:
                    raise KeyboardInterrupt
                rc = max(rc, got)
            atomic.write_text(repeat_dir(vdir, k) / COMPLETE, "")
            complete = k + 1
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: the repeats that finished are still worth their analysis;
        # a half-run repeat would compare variants launched at different times, so it is left out.
        rc = INTERRUPTED
    rows, summary = replicated.analyse(collect(vdir, complete, target.mpi), complete, rule_lookup(rules))
    text = report(rows, summary)
    if complete < repeats:
        text += (f"\ninterrupted: {complete} of {repeats} repeats complete, analysed above; repeat {complete + 1} "
                 f"is left in {repeat_dir(vdir, complete)} and not used (--resume runs it again)")
    atomic.write_text(vdir / "report.txt", text + "\n")
    print(text)
    if not shown.ok:
        print(f"collkit: {target.library} did not show that it reads {tuned.name} (above)", file=sys.stderr)
        return 1
    return rc
