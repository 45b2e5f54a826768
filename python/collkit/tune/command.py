"""`collkit model DIR` and `collkit tune DIR... --format F --out FILE [--validate]`."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from collkit import backends
from collkit.campaign.sizes import format_size
from collkit.common import atomic
from collkit.common.errors import UserError
from collkit.common.table import render
from collkit.tune import data, decide, fit, mpich_device, writers
from collkit.tune.decide import DEFAULT, Candidate, Rule
from collkit.tune.writers import sidecar

COLLKIT = "collkit"     # collkit's own rules (docs/preload.md), read by libcollkit-preload
FORMATS = (*backends.tuning_formats(), COLLKIT)


# ---------------------------------------------------------------- model
def model(dirs: list[Path], collective: str | None, every_point: bool = False) -> int:
    camp = data.load(dirs, refuse_failed=False)
    points = [m for m in camp.points if collective is None or m.collective == collective]
    if collective is not None and not points:
        raise UserError(f"{', '.join(map(str, dirs))}: no ok point of {collective}; "
                        "choose a collective the campaign measured")
    models, too_few = fit.fit_all(points)
    if not models:
        raise UserError(f"too few points to fit: every algorithm with a cost model needs at least "
                        f"{fit.MIN_POINTS} ok points at {fit.MIN_SIZES} or more sizes; measure more sizes")
    rows = []
    for key, f in sorted(models.items()):
        rows.append([f.collective, f"{f.mpi}:{f.algorithm}" if f.backend == "mpi" else f"collkit:{f.algorithm}",
                     f"{f.alpha_us:.3g}", f"{f.beta_us_per_byte * 1e3:.3g}", f"{f.gamma_us_per_byte * 1e3:.3g}",
                     str(f.points), f"{100 * f.median_error:.0f}%", f"{100 * f.max_error:.0f}%",
                     " ".join(f"{p}:{100 * e:.0f}%" for p, e in sorted(f.errors_by_ranks.items()))])
    print(render(["collective", "algorithm", "alpha_us", "beta_ns/B", "gamma_ns/B", "points", "median err",
                  "max err", "median err by ranks"], rows, right={2, 3, 4, 5, 6, 7}))
    print("T(p, n) = alpha a(p) + beta b(p) n + gamma c(p) n; terms per algorithm in "
          "python/collkit/tune/costs.py; err: |predicted - measured| / measured")
    if too_few:
        print("not fitted (too few points): " + ", ".join(f"{k[1]}:{k[4]} {k[3]}" for k in too_few))
    by_key = fit.group(points)
    grid = []
    for key, f in sorted(models.items()):
        label = f"{f.mpi}:{f.algorithm}" if f.backend == "mpi" else f"collkit:{f.algorithm}"
        mine = sorted(by_key[key], key=lambda m: (m.ranks, m.bytes))
        if every_point:
            grid += [[f.collective, label, str(m.ranks), format_size(m.bytes), f"{m.median_us:.1f}",
                      f"{f.predict(m.ranks, m.bytes):.1f}"] for m in mine]
            continue
        for p in sorted({m.ranks for m in mine}):
            at = [m for m in mine if m.ranks == p]
            worst = max(at, key=lambda m: abs(f.predict(p, m.bytes) - m.median_us) / m.median_us)
            cells = [f"{format_size(m.bytes)} {m.median_us:.1f}/{f.predict(p, m.bytes):.1f}"
                     for m in (at[0], at[-1])]
            grid.append([f.collective, label, str(p), *cells,
                         f"{format_size(worst.bytes)} {worst.median_us:.1f}/{f.predict(p, worst.bytes):.1f}"])
    print()
    if every_point:
        print(render(["collective", "algorithm", "ranks", "size", "measured_us", "predicted_us"], grid,
                     right={2, 3, 4, 5}))
    else:
        print(render(["collective", "algorithm", "ranks", "smallest size", "largest size", "worst fit"], grid,
                     right={2}))
        print("cells: size measured_us/predicted_us; every point with --points")
    return 0


# ---------------------------------------------------------------- tune
@dataclass(frozen=True)
class Target:
    fmt: str
    mpi: str                              # the library whose default is the baseline
    backend: str                          # "mpi" (the library's algorithms) or "collkit"
    candidates: dict[str, list[Candidate]]
    library: str                          # e.g. "Open MPI 4.1.4"
    extra: object = None                  # the writer's library_state (tune/writers/__init__.py)


def library_mpi(fmt: str, mpi: str | None) -> str:
    """The known MPI a file of format `fmt` is tuned for and proven in: `--mpi NAME`
    when given (e.g. openmpi5, an Open MPI 5 beside Debian's 4.1: both read the classic
    rules file), else the one of the format's family (known.find_family). One line,
    exit 2, for an MPI that does not read the format (Intel MPI, MPICH for an Open MPI
    file): it would ignore the file, and its proof would prove nothing."""
    from collkit.mpis import known
    backend = backends.for_format(fmt)
    if mpi is None:
        return known.find_family(backend.family).name
    family = known.find(mpi).family
    if not backends.backend_for(family).reads(fmt):
        raise UserError(f"--mpi {mpi} is of the {family or 'unknown'} family, which does not read "
                        f"{backend.file_kind(fmt)}; give --mpi NAME of the {backend.family} family "
                        "(collkit mpis) or another --format")
    return mpi


def _measured_mpi(points, fmt: str) -> str | None:
    """Without --mpi: the one known MPI reading `fmt` whose default the campaigns
    measured (a campaign of openmpi5 alone is tuned for openmpi5, not for the MPI
    named like the family), else None (library_mpi's choice)."""
    from collkit.mpis import known
    found = known.known()
    names = {m.mpi for m in points if m.algorithm == DEFAULT and m.mpi in found
             and backends.backend_for(found[m.mpi].family).reads(fmt)}
    return names.pop() if len(names) == 1 else None


def _provenance_mpi(out: Path) -> str | None:
    """The MPI an earlier tune wrote `out` for: its sidecar's baseline, NAME:default."""
    import json
    try:
        baseline = json.loads(sidecar.path(out).read_text()).get("baseline", "")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(baseline, str):
        return None
    return baseline.rpartition(":")[0] or None


def _library_target(fmt: str, mpi_name: str | None = None) -> Target:
    """A library's own algorithms as candidates, those its tuning file can name."""
    from collkit.mpis import known
    backend = backends.for_format(fmt)
    writer = writers.for_format(fmt)
    mpi = known.find(library_mpi(fmt, mpi_name)).install()
    offer = backend.discover(mpi)
    state = writer.library_state(mpi)
    cands: dict[str, list[Candidate]] = {}
    for a in offer.algorithms:
        c = Candidate(a.name, a.native, a.native_id, a.requires)
        if writer.expressible(a.collective, c, state):
            cands.setdefault(a.collective, []).append(c)
    return Target(fmt, mpi.name, "mpi", cands, offer.library, state)


def _collkit_target(points, mpi: str | None, allow_fp_rank_variant: bool = False) -> Target:
    """libcollkit's algorithms as candidates. A rule covers every datatype (its ranges are
    bytes), and the campaign's datatype says nothing about the program's: an algorithm whose
    floating-point results may differ across ranks (the fp_rank_variant trait) is a
    candidate only when the user allows it (--allow-fp-rank-variant)."""
    from collkit.library import registry
    with_default = sorted({m.mpi for m in points if m.algorithm == DEFAULT})
    if mpi is None:
        if len(with_default) > 1:
            raise UserError(f"the campaigns hold defaults of {' and '.join(with_default)}: say which library the "
                            "rules are for with --mpi")
        measured = sorted({m.mpi for m in points})
        # no default anywhere: the rules are for the campaigns' library (decide_rules then
        # says that its default is missing)
        mpi = with_default[0] if with_default else measured[0] if measured else ""
    cands: dict[str, list[Candidate]] = {}
    for a in registry.load():
        if a.traits.fp_rank_variant and not allow_fp_rank_variant:
            continue
        req = ("pow2_ranks",) if "power" in a.constraints.describe() else ()
        cands.setdefault(a.collective, []).append(Candidate(a.name, a.name, a.name, req))
    from collkit.tune.writers.collkit import library_of
    return Target(COLLKIT, mpi, "collkit", cands, library_of(mpi))


def _header(argv: list[str], target: Target, dirs: list[Path]) -> list[str]:
    return [f"written by: collkit {' '.join(shlex.quote(a) for a in argv)}",
            f"for {target.library}; campaigns: {', '.join(str(d) for d in dirs)}",
            "each rule says its source: measured (significantly faster than the default, Mann-Whitney U, "
            "Holm, alpha 0.01) or model (a rank count not measured); provenance in the .provenance.json beside"]


def table(rules: list[Rule]) -> str:
    rows = []
    for r in rules:
        hi = "inf" if r.bytes_hi is None else format_size(r.bytes_hi + 1)
        speed = f"{r.speedup:.2f}x" if r.speedup and r.choice != DEFAULT else "-"
        rows.append([r.collective, str(r.ranks), f"{format_size(r.bytes_lo)}..{hi}", r.choice, r.source,
                     r.cutoff or "-", speed])
    return render(["collective", "ranks", "size range", "chosen", "source", "cutoff", "expected vs default"],
                  rows, right={1, 6})


def _resume(fmt: str, out: Path, validate: bool, repeats: int | None, mpi: str | None = None) -> int:
    """--validate --resume: FILE stays as written; its validation goes on (tune/validate.py)."""
    from collkit.tune import validate as v
    if not validate or fmt == COLLKIT:
        raise UserError("--resume goes on with an interrupted --validate of a library's own tuning file: "
                        f"add --validate (and --format {' or '.join(backends.tuning_formats())})")
    if not out.is_file() or not sidecar.path(out).is_file():
        raise UserError(f"--resume: {out} or {sidecar.path(out).name} is missing; give the --out of the "
                        "validation to resume")
    # the MPI the validation began with, unless --mpi says otherwise
    mpi = mpi or _provenance_mpi(out)
    return v.resume(out, _library_target(fmt, mpi), v.check_repeats(v.REPEATS if repeats is None else repeats))


def with_variants(target: Target, points) -> Target:
    """The target with its measured variants as candidates too (_variants)."""
    cands = {c: v + _variants(target, points, c) for c, v in target.candidates.items()}
    return replace(target, candidates=cands)


def _variants(target: Target, points, collective: str) -> list[Candidate]:
    """Measured parameter settings of the target's algorithms that its file can write as
    rules of their own (the writer's variant_fits: an Open MPI rules file has a
    segment-size and a fanout column per rule); collkit's rules name no variant."""
    from collkit.campaign.points import algorithm_of
    writer = writers.for_format(target.fmt)
    if writer is None:
        return []
    base = {c.name: c for c in target.candidates.get(collective, [])}
    out: dict[str, Candidate] = {}
    for m in points:
        c = base.get(algorithm_of(m.algorithm))
        if (m.collective == collective and m.params and c is not None and m.backend == "mpi"
                and writer.variant_fits(collective, m.params)):
            out[m.algorithm] = replace(c, name=m.algorithm, params=m.params)
    return list(out.values())


def decide_rules(camp: data.Campaigns, target: Target) -> tuple[list[Rule], dict]:
    points = [m for m in camp.points if m.mpi == target.mpi
              and (m.backend == target.backend or (m.backend == "mpi" and m.algorithm == DEFAULT))
              and not m.algorithm.startswith("tuned:")]
    if not any(m.algorithm == DEFAULT for m in points):
        raise UserError(f"{', '.join(map(str, camp.dirs))}: no point of {target.mpi}'s default was measured, so "
                        "there is nothing to compare against; add \"default\" to [backends] mpi and run again")
    if not any(m.algorithm != DEFAULT for m in points):
        raise UserError(f"{', '.join(map(str, camp.dirs))}: no {target.backend} algorithm of {target.mpi} was "
                        "measured besides the default; add them to [backends] and run again")
    models, _ = fit.fit_all(points)
    by_name = {(k[3], k[4]): f for k, f in models.items() if k[2] == target.backend}
    tuned = {m.collective for m in points if m.algorithm != DEFAULT}
    cands = {c: v for c, v in target.candidates.items() if c in tuned}
    # MPICH's device collectives: a collective is either the file's or the device's
    writer = writers.for_format(target.fmt)
    owned = writer.ownership(points, cands) if writer is not None else {}
    no_default = frozenset(c for c, o in owned.items() if o.take)
    rules = decide.Decider([m for m in points if m.collective in cands], cands, by_name, no_default).all_rules()
    if not rules:
        raise UserError(f"{', '.join(map(str, camp.dirs))}: no collective {target.fmt} can tune was measured "
                        "with its default and an alternative")
    return rules, by_name, owned


def tune(dirs: list[Path], fmt: str, out: Path, validate: bool, mpi: str | None, argv: list[str],
         repeats: int | None = None, resume: bool = False, allow_fp_rank_variant: bool = False) -> int:
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt}: unknown format; choose one of {', '.join(FORMATS)}")
    if allow_fp_rank_variant and fmt != COLLKIT:
        raise UserError(f"--allow-fp-rank-variant lets collkit rules choose libcollkit algorithms whose "
                        f"floating-point results may differ across ranks; --format {fmt} names only the "
                        "library's own algorithms: drop it or use --format collkit")
    if resume:
        return _resume(fmt, out, validate, repeats, mpi)
    if repeats is not None and not validate:
        raise UserError(f"--repeats {repeats} sets how often --validate relaunches; add --validate or drop --repeats")
    if validate:
        from collkit.tune import validate as v
        repeats = v.check_repeats(v.REPEATS if repeats is None else repeats)
    if validate and fmt == COLLKIT:
        raise UserError("--validate runs a library with its own tuning file loaded: give --format "
                        f"{' or '.join(backends.tuning_formats())} (a collkit rules file is run by "
                        "`collkit preload --rules FILE`)")
    for path in (out, sidecar.path(out)):
        if path.exists():
            raise UserError(f"{path} already exists; choose another --out (tune never overwrites a tuning file)")
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: the directory {out.parent} does not exist; create it first")
    if fmt != COLLKIT:
        library_mpi(fmt, mpi)      # before the campaigns are read: a wrong --mpi is the user's first fault
    camp = data.load(dirs)
    if fmt != COLLKIT and mpi is None:
        mpi = _measured_mpi(camp.points, fmt)
    target = (_collkit_target(camp.points, mpi, allow_fp_rank_variant) if fmt == COLLKIT
              else _library_target(fmt, mpi))
    target = with_variants(target, camp.points)
    rules, models, owned = decide_rules(camp, target)
    environment = mpich_device.environment(owned)
    header = _header(argv, target, dirs)
    writer = writers.for_format(fmt)
    if writer is not None:
        text = writer.write_file(rules, target.candidates, target.extra, header)
    else:
        from collkit.tune.writers import collkit as w
        text = w.write(rules, header, allow_fp_rank_variant)
        w.parse(text)   # what the preload would reject must never be written
    atomic.write_text(out, text)
    atomic.write_json(sidecar.path(out), sidecar.provenance(rules, target, models, dirs, argv, out, environment))
    print(table(rules))
    for o in owned.values():
        print(o.why())
    for line in writer.caveats(rules, target.candidates) if writer is not None else []:
        print(line)
    if environment:
        print("the file needs, in the environment of every run that loads it: "
              + " ".join(f"{k}={v}" for k, v in environment.items()))
    n_model = sum(r.source == "model" for r in rules)
    print(f"wrote {out} ({target.library}, {len(rules)} rules, {n_model} from models) and {sidecar.path(out).name}")
    if validate:
        return v.run(dirs, out, target, rules, repeats)
    return 0
