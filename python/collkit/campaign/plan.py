"""From a spec to the list of test points, resolved against what exists.

Every algorithm name is checked here, before anything launches: an unknown name
is a UserError with the closest known name. Combinations that exist but cannot
run (a registry constraint, a library without that algorithm) become skipped
points with the reason, so the campaign records them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from collkit import backends
from collkit.backends import devices
from collkit.campaign import tuning as tunings
from collkit.campaign.platform import Platform
from collkit.campaign.points import Plan, Point
from collkit.campaign.spec import Spec
from collkit.common import machine
from collkit.common.errors import UserError, did_you_mean
from collkit.library.registry import Algorithm, collective, datatype_size
from collkit.topology import fattree, nodes


def _split(name: str) -> tuple[str | None, str]:
    coll, sep, alg = name.partition("/")
    return (coll, alg) if sep else (None, name)


def _unknown(name: str, known: set[str], where: str) -> UserError:
    extra = did_you_mean(name, sorted(known))
    return UserError(f"unknown {where} algorithm '{name}'{extra}; see `collkit list`")


def _select(names: tuple[str, ...], spec: Spec, offered: Callable[[str], set[str]], where: str,
            strict: bool = True) -> dict[str, list[str]]:
    """Names per collective. `offered(c)` is every name usable for collective c.
    Not strict (one [[case]] of a spec whose names build() checked against all its
    cases): a name for none of this case's collectives selects nothing here."""
    chosen: dict[str, list[str]] = {c: [] for c in spec.collectives}
    everything = set().union(*(offered(c) for c in spec.collectives))
    for raw in names:
        if raw == "all":
            for c in spec.collectives:
                chosen[c].extend(sorted(offered(c)))
            continue
        coll, alg = _split(raw)
        if coll is not None and coll not in spec.collectives:
            if not strict:
                continue
            raise UserError(f"{where} algorithm '{raw}' names collective '{coll}', which the spec does not measure")
        targets = [coll] if coll else list(spec.collectives)
        hits = [c for c in targets if alg in offered(c)]
        if not hits and not strict:
            continue
        if not hits:
            pool = offered(coll) if coll else everything
            raise _unknown(raw, pool | {f"{c}/{a}" for c in spec.collectives for a in offered(c)}, where)
        for c in hits:
            chosen[c].append(alg)
    return {c: list(dict.fromkeys(v)) for c, v in chosen.items()}


def _base(spec: Spec, coll: str, ranks: int, size: int) -> dict:
    # in_place only where the collective's MPI form has an in-place variant (not bcast).
    # conditions: the spec's [measure], or its [[case]]'s (Spec.variants)
    return dict(collective=coll, ranks=ranks, count=size // datatype_size(spec.dtype), bytes=size,
                dtype=spec.dtype, op=spec.op, root=spec.root,
                in_place=spec.in_place and collective(coll).in_place != "none",
                conditions=spec.measure.conditions)


def _collkit_points(spec: Spec, registry: list[Algorithm], mpi: str, strict: bool = True) -> list[Point]:
    by_coll = {c: {a.name: a for a in registry if a.collective == c} for c in spec.collectives}
    chosen = _select(spec.backends["collkit"], spec, lambda c: set(by_coll[c]), "libcollkit", strict)
    out = []
    for ranks in spec.ranks:
        for coll in spec.collectives:
            for name in chosen[coll]:
                alg = by_coll[coll][name]
                for size in spec.sizes:
                    base = _base(spec, coll, ranks, size)
                    reason = ""
                    if alg.constraints.pow2_ranks and ranks & (ranks - 1):
                        reason = f"collkit {coll}/{name} needs a power-of-two rank count"
                    elif alg.constraints.fattree and (why := fattree.misfit(ranks)):
                        reason = f"collkit {coll}/{name}: {why}"
                    elif alg.constraints.equal_nodes and (why := nodes.misfit(ranks)):
                        reason = f"collkit {coll}/{name} needs equal ranks per node: {why}"
                    elif base["count"] < alg.constraints.min_count:
                        reason = f"collkit {coll}/{name} needs count >= {alg.constraints.min_count}"
                    out.append(Point(backend="collkit", mpi=mpi, algorithm=name, skip_reason=reason, **base))
    return out


def _mpi_points(spec: Spec, offers: dict, known: dict[str, set[str]] | None = None,
                strict: bool = True) -> list[Point]:
    """offers: mpi name -> collkit.backends.LibraryOffer. `known`: per collective,
    canonical names that are skipped (not an error) when no offer has them.
    `strict`: as _select's."""
    known = known or {}

    def offered_any(c: str) -> set[str]:
        names = {"default"} | known.get(c, set())
        for offer in offers.values():
            for a in offer.for_collective(c):
                names |= {a.name, a.native, a.native_id}
        return names

    def canonical_any(c: str) -> set[str]:
        return {a.name for offer in offers.values() for a in offer.for_collective(c)} | known.get(c, set())

    selection = spec.backends["mpi"]
    forced = [n for n in selection if n not in ("default", "all") and not tunings.is_tuned(n)]
    if forced and offers and all(o.unforceable for o in offers.values()):
        o = next(iter(offers.values()))
        raise UserError(f"backends.mpi '{forced[0]}': {o.library} runs its default only ({o.unforceable}); "
                        'measure it with mpi = ["default"] (collkit mpis shows where forcing comes from)')
    chosen = _select(tuple(n for n in selection if n != "all" and not tunings.is_tuned(n)), spec, offered_any,
                     "MPI library", strict)
    out = []
    for mpi, offer in offers.items():
        for ranks in spec.ranks:
            for coll in spec.collectives:
                names = list(chosen[coll])
                if "all" in selection:  # this library's own algorithms, not its neighbours'
                    names += [a.name for a in offer.for_collective(coll)]
                for name in dict.fromkeys(names):
                    try:
                        alg = None if name == "default" else offer.force(coll, name)
                    except UserError as refused:
                        # A name another library knows by that (canonical) name is a
                        # comparison this library cannot take part in: record it. So is
                        # this library's own native name that force() refuses because
                        # libcollkit's algorithm of that name sends other messages
                        # (MPICH's allreduce "ring" is mpich_ring): the reason names
                        # what to ask for. A native name or id of another library is
                        # simply not ours.
                        own = any(name in (a.native, a.native_id) for a in offer.for_collective(coll))
                        if own or name in canonical_any(coll) or offer.unforceable:
                            # An MPI collkit cannot force (a derivative without its
                            # family's tool) runs its default only: say why.
                            why = (f"{offer.library} runs its default only: {offer.unforceable}" if offer.unforceable
                                   else str(refused) if own
                                   else f"{offer.library} has no {coll} algorithm '{name}'")
                            for size in spec.sizes:
                                out.append(Point(backend="mpi", mpi=mpi, algorithm=name,
                                                 **_base(spec, coll, ranks, size), skip_reason=why))
                        continue
                    for size in spec.sizes:
                        base = _base(spec, coll, ranks, size)
                        if alg is None:
                            readback = backends.default_readback(offer.mpi, coll)
                            out.append(Point(backend="mpi", mpi=mpi, algorithm="default", readback=readback, **base))
                            continue
                        why = alg.unusable(ranks, base["count"], base["in_place"])
                        out.append(Point(backend="mpi", mpi=mpi, algorithm=alg.name, native=alg.native_id,
                                         env=tuple(sorted(alg.env.items())), readback=tuple(alg.readback),
                                         cvars=tuple(sorted(alg.cvars.items())), fresh_comm=alg.fresh_comm,
                                         skip_reason=f"{offer.library} {coll}/{alg.name}: {why}" if why else "",
                                         **base))
    return out


def _tuned_points(spec: Spec, offers: dict, campaign_dir: Path | None) -> list[Point]:
    """Points of `tuned:FILE` selections: the library's own choice with the file
    loaded and nothing forced, only under the library the file is for (a file of
    the other library gets no point there: it would not be read). The launch
    reads the campaign's copy (campaign_dir/tuning/NAME); without a campaign
    directory (a plan only looked at) the file where the spec named it."""
    out = []
    for tf in spec.tuning:
        # Every MPI of the spec whose family reads this kind of file (an MPI
        # known by any name: mpich, mpich-5, ...); one collkit cannot force
        # would not read it either.
        takers = [name for name, o in offers.items()
                  if backends.backend_for(o.mpi).reads(tf.library) and not o.unforceable]
        if not takers:
            kind = backends.for_format(tf.library).file_kind(tf.library)
            raise UserError(f"backends.mpi 'tuned:{tf.name}' is {kind}, but the spec measures "
                            f"{', '.join(offers) or 'no MPI library'}, none of the {tf.library} family; add one "
                            f"to mpi = [...] (collkit mpis)")
        for mpi in takers:
            out += _tuned_points_of(spec, tf, mpi, offers[mpi], campaign_dir)
    return out


def _tuned_points_of(spec: Spec, tf, mpi: str, offer, campaign_dir: Path | None) -> list[Point]:
    backend = backends.backend_for(offer.mpi)
    backend.check_tuning_file(tf, offer, spec.collectives)
    path = str(tunings.copy_path(tf, campaign_dir) if campaign_dir is not None else tf.source)
    out = []
    for ranks in spec.ranks:
        # per rank count: Intel MPI's file has lines per process count
        # the file's bytes as loaded: the copy `path` names is written after planning
        env = tuple(sorted(backend.tuned_env(offer, path, dict(tf.companion), ranks,
                                             tf.data.decode("utf-8")).items()))
        for coll in spec.collectives:
            for size in spec.sizes:
                out.append(Point(backend="mpi", mpi=mpi, algorithm=tf.algorithm, env=env,
                                 readback=tuple(backend.tuned_readback(coll)),
                                 tuning_file=f"{tunings.DIRECTORY}/{tf.name}", tuning_sha256=tf.sha256,
                                 **_base(spec, coll, ranks, size)))
    return out


def _point(spec: Spec, coll: str, ranks: int, size: int, **fields) -> Point:
    """A point with the fields every backend shares (_base) and its own: the maker a
    device backend builds its points with (backends/device.py)."""
    return Point(**fields, **_base(spec, coll, ranks, size))


def _parameter_settings(spec: Spec, offers: dict) -> dict[str, list[tuple[tuple[str, str], ...]]]:
    """[parameters.NAME] checked against what the library reports (backends/parameters.py),
    before anything launches, as every combination of the values: table -> settings."""
    import itertools

    from collkit.backends import parameters
    out: dict[str, list[tuple[tuple[str, str], ...]]] = {}
    for table, values in spec.parameters.items():
        device = devices.by_parameter_table(table)
        if device is not None:
            family, known, library = device.key, device.parameters(), device.library
        else:
            offer = offers[table]
            family, known, library = offer.mpi, offer.parameters, offer.library
        checked = parameters.check(table, family, library, known, values)
        names = list(checked)
        out[table] = [tuple(zip(names, combo)) for combo in itertools.product(*(checked[n] for n in names))]
    return out


def _shared_launches(points: list[Point], offers: dict) -> list[Point]:
    """The library's default and libcollkit's points in the launch of the library's
    algorithms forced per point, where its family allows that (LibraryOffer.launch_env:
    Open MPI's per-communicator forcing, MPICH's per-call CVARs): per MPI and rank count
    with such a forced point, every point without a forcing environment takes the
    shared one, so that all of them compare inside launches (analysis/launches.py).
    Without a forced point nothing changes: a default-only campaign runs as it ships."""
    shared = {name: dict(o.launch_env) for name, o in offers.items() if o.launch_env}
    forced = {(p.mpi, p.ranks) for p in points
              if p.backend == "mpi" and p.mpi in shared and p.cvars and dict(p.env) == shared[p.mpi]}
    return [replace(p, env=tuple(sorted(shared[p.mpi].items())))
            if (p.mpi, p.ranks) in forced and not p.env and p.backend in ("mpi", "collkit") and not p.tuning_file
            else p for p in points]


def _with_parameters(points: list[Point], settings: dict, offers: dict) -> list[Point]:
    """Each point of a library with [parameters.NAME] once per setting: the values in its
    environment (so a setting is a launch of its own: the libraries read them at start-up),
    read back through MPI_T where the library reports them. The library's default also
    stays as it ships (the baseline of report and tune), and is not crossed with parameters
    that shape forced algorithms only (Open MPI's coll/tuned per-algorithm ones); nor are
    `tuned:FILE` points (their file sets segment and fanout)."""
    out: list[Point] = []
    for p in points:
        device = devices.by_key(p.backend)
        table = device.parameter_table if device else p.mpi if p.backend == "mpi" else None
        if table not in settings or p.tuning_file:
            out.append(p)
            continue
        if device is not None:
            known, variable = device.parameters(), device.parameter_variable
        else:
            known, variable = offers[table].parameters, backends.backend_for(offers[table].mpi).parameter_variable
        for setting in settings[table]:
            if p.algorithm == "default":
                out.append(p)     # the same id for every setting: build() keeps one
                setting = tuple((k, v) for k, v in setting if not known[k].forced_only)
                if not setting:
                    continue
            env = dict(p.env) | {variable(k): v for k, v in setting}
            readback = tuple(dict.fromkeys(p.readback + tuple(k for k, _ in setting if known[k].readable)))
            # a setting the forcing also makes through MPI_T (a segment size): the setting's value
            cvars = tuple((k, dict(setting).get(k, v)) for k, v in p.cvars)
            out.append(replace(p, env=tuple(sorted(env.items())), readback=readback, params=setting, cvars=cvars))
    return out


def _portable_names(registry: list[Algorithm]) -> dict[str, set[str]]:
    """Canonical names a spec written for a real machine may use (libcollkit's and
    the Open MPI / MPICH tables'): on a simulated platform, where SMPI lacks one,
    the point is skipped with the reason instead of the spec being refused."""
    from collkit.backends import mpich, openmpi
    names: dict[str, set[str]] = {}
    for a in registry:
        names.setdefault(a.collective, set()).add(a.name)
    for table in (openmpi.NAMES, mpich.NAMES):
        for coll, mapping in table.items():
            names.setdefault(coll, set()).update(mapping.values())
    return names


def _simulated(points: list[Point], spec: Spec, sim=None) -> list[Point]:
    """On a SimGrid platform: no MPI_T readback (SMPI has none), and points this
    machine cannot simulate (memory of all ranks in one process, rank count)
    refused now, with the estimate, rather than crashed into; a rank count
    larger than the simulated machine `sim` (SimSettings; None: not checked)
    is an error before anything runs."""
    from dataclasses import replace

    from collkit.simulation import memory
    from collkit.simulation.settings import MAX_RANKS
    if any(p.conditions.program for p in points):
        # The pacing is a busy wait on MPI_Wtime (bench/conditions.c); under SimGrid only
        # MPI calls advance the clock (smpi/wtime:0 makes MPI_Wtime free), so it would
        # never end. (sync = "window" sleeps in simulated time there: bench/sync.c.)
        raise UserError("conditions = \"program\" cannot run on a simulated platform (its pacing is a busy "
                        "wait on MPI_Wtime, which never advances simulated time); measure it on a real platform")
    if sim is not None:
        ppn, most = sim.ppn, sim.machine.max_nodes
        too_many = sorted({p.ranks for p in points if -(-p.ranks // ppn) > most})
        if too_many:
            r = too_many[0]
            raise UserError(f"ranks = {r}: a job of {-(-r // ppn)} nodes does not fit machine {sim.machine.name}: "
                            f"it has {most} nodes; use at most {most * ppn} ranks (ppn = {ppn})")
    avail = machine.available_memory()
    out = []
    for p in points:
        p = replace(p, readback=())
        if not p.skip_reason:
            why = memory.refusal(p.collective, p.ranks, p.count, p.dtype, p.in_place, spec.measure.validate,
                                 avail, MAX_RANKS, spec.measure.max_iterations)
            if why:
                p = replace(p, skip_reason=why)
        out.append(p)
    return out


def _local(points: list[Point]) -> list[Point]:
    """On this machine: points past its cores or memory skipped with the estimate."""
    from dataclasses import replace

    from collkit.campaign import resources
    avail = machine.available_memory()
    out = []
    for p in points:
        if not p.skip_reason:
            why = resources.point_refusal(p.collective, p.ranks, p.count, p.dtype, p.in_place, avail)
            if why:
                p = replace(p, skip_reason=why)
        out.append(p)
    return out


def _variant_points(spec: Spec, platform: Platform, registry: list[Algorithm], offers: dict | None,
                    campaign_dir: Path | None, strict: bool) -> list[Point]:
    """The points of a spec without cases (one case of a spec with cases)."""
    points: list[Point] = []
    if offers is not None:
        points += _mpi_points(spec, offers, _portable_names(registry) if platform.simgrid is not None else None,
                              strict)
        if spec.tuning:
            points += _tuned_points(spec, offers, campaign_dir)
    if "collkit" in spec.backends:
        for mpi in spec.mpis:
            points += _collkit_points(spec, registry, mpi, strict)
    for device in devices.chosen(spec.backends):
        mine = spec
        if not strict:  # a name for another case's collective is that case's
            names = tuple(n for n in spec.backends[device.key] if _split(n)[0] in (None, *spec.collectives))
            mine = replace(spec, backends=spec.backends | {device.key: names})
        points += device.points(mine, platform, _point)
    return points


def _check_names(spec: Spec, registry: list[Algorithm], offers: dict | None, platform: Platform) -> None:
    """A spec with cases: every name of [backends] mpi and collkit must name an
    algorithm of some case's collective (spec.collectives is the cases' union).
    The strict selection runs on the union with no ranks, so it makes no point.
    (A device backend's names are checked per case: it skips what a collective lacks.)"""
    bare = replace(spec, sizes=(), ranks=(), cases=())
    if offers is not None:
        _mpi_points(bare, offers, _portable_names(registry) if platform.simgrid is not None else None)
    if "collkit" in spec.backends:
        _collkit_points(bare, registry, spec.mpis[0])


def build(spec: Spec, platform: Platform, registry: list[Algorithm],
          discover: Callable | None = None, campaign_dir: Path | None = None) -> Plan:
    """Resolve a spec into a plan. `discover(PlatformMPI)` returns a LibraryOffer (tests
    give their own; by default the platform's backend asks the library,
    backends.platform_offer). `campaign_dir`: where the campaign will live (its copies
    of tuning files)."""
    for mpi in spec.mpis:
        platform.mpi(mpi)  # UserError when the platform lacks it
    # A spec's [[case]] tables each make their points, the union kept below (one per
    # id). The names of [backends] are checked once against all the cases' collectives;
    # inside one case a name for another case's collective selects nothing.
    variants = spec.variants()
    strict = len(variants) == 1
    offers = None
    if "mpi" in spec.backends:
        if discover is None:
            offers = {mpi: backends.platform_offer(platform, mpi) for mpi in spec.mpis}
        else:
            offers = {mpi: discover(platform.mpi(mpi)) for mpi in spec.mpis}
        named = [s for s in spec.backends["mpi"] if tunings.is_tuned(s)]
        if named and not spec.tuning:
            # parse() of text alone cannot place a relative FILE: the spec must come from load()
            raise UserError(f"backends.mpi {named[0]!r}: tuning files are read when the spec is loaded from its "
                            "file (collkit run SPEC.toml); a resumed campaign reads its own copies")
        if spec.tuning and platform.simgrid is not None:
            raise UserError("backends.mpi 'tuned:FILE' cannot run on a simulated platform (SMPI reads no "
                            "Open MPI or MPICH tuning file); run it on a real platform")
    if not strict:
        _check_names(spec, registry, offers, platform)
    settings = _parameter_settings(spec, offers or {})
    points: list[Point] = []
    for variant in variants:
        points += _variant_points(variant, platform, registry, offers, campaign_dir, strict)
    points = _shared_launches(points, offers or {})
    if settings:
        points = _with_parameters(points, settings, offers or {})

    if platform.simgrid is not None:
        points = _simulated(points, spec, platform.simgrid)
    elif platform.slurm is None:
        points = _local(points)

    # One id, one point: a name given twice (e.g. "ring" and "allreduce/ring") counts once.
    unique: dict[str, Point] = {}
    for p in points:
        unique.setdefault(p.id, p)
    plan = Plan()
    runnable = [p for p in unique.values() if not p.skip_reason]
    plan.skipped = [p for p in unique.values() if p.skip_reason]
    # Launch order: per library and rank count the unforced launch first (library
    # default and libcollkit side by side), then one launch per forced setting.
    # Inside a launch, algorithms of one size run next to each other so that drift
    # of the machine affects all of them alike.
    groups: dict[tuple, list[Point]] = {}
    for p in sorted(runnable, key=lambda p: (spec.mpis.index(p.mpi), p.ranks, p.env != (), p.env)):
        groups.setdefault(p.launch_key(), []).append(p)
    coll_order = {c: i for i, c in enumerate(spec.collectives)}
    for members in groups.values():
        plan.points += sorted(members, key=lambda p: (coll_order[p.collective], p.bytes, p.label))
    return plan
