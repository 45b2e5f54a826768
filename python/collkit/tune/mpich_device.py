"""Which collectives an MPICH selection file may take from MPICH's ch4 device.

MPICH consults its MPIR-level selection file (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)
only where the ch4 device does not override the MPIR level. On a node with a core per
rank, the device's shared-memory collectives run MPICH's default for small and medium
sizes, and no MPIR algorithm comes close: on a 16-core machine, bcast at 5 ranks and
16 B took 1.8 us by default and 5.4 us with the best MPIR algorithm
(docs/experiments/tuning.md, section 6). The default that a campaign measures is that
device default. A forced MPIR algorithm, by contrast, runs with the device override
off (backends/mpich.py, FORCE_ENV).

So a file cannot mix the two inside one collective. MPICH's switch is per collective:
MPIR_CVAR_DEVICE_COLLECTIVES=percoll with MPIR_CVAR_<COLL>_DEVICE_COLLECTIVE=0.
Where it is 0, every size runs what the file says: its "default" leaves run MPIR's
built-in tree, not the device. Where it is left on, the file is mostly not consulted.
The decision is therefore per collective:

* take a collective from the device only where, at every measured rank count and
  size, the device default is not significantly faster than the best MPIR algorithm
  (at the level the two were measured, analysis/launches.py, Holm over the collective's points, alpha 0.01),
  and the best MPIR algorithm is significantly faster at least once (else there is
  nothing to gain);
* a collective taken over gets an MPIR algorithm at every size (decide.Decider's
  `no_default`): a "default" leaf there would be MPIR's built-in choice, which nobody
  measured;
* every other collective stays with the device, and the file still holds the
  decisions against the device default (an MPIR algorithm only where it was
  significantly faster than that default, MPICH's built-in branch elsewhere). They
  apply wherever the device hands a call to the MPIR level. Where it keeps the call
  itself, the run is the default. Neither case is slower than the default.

The settings that go with the file are written to its provenance sidecar
("environment"), printed by `collkit tune`, and applied by `tuned:FILE` launches
(campaign/tuning.py)."""

from __future__ import annotations

from dataclasses import dataclass

from collkit.analysis import launches, stats
from collkit.tune.data import Measured
from collkit.tune.decide import DEFAULT, Candidate, min_bytes

SWITCH = "MPIR_CVAR_DEVICE_COLLECTIVES"


def device_variable(collective: str) -> str:
    return f"MPIR_CVAR_{collective.upper()}_DEVICE_COLLECTIVE"


@dataclass(frozen=True)
class Ownership:
    collective: str
    take: bool
    device_faster: int          # measured points where the device default is significantly faster
    mpir_faster: int            # ... where the best MPIR algorithm is
    points: int

    def why(self) -> str:
        if self.take:
            return (f"{self.collective}: taken from the device (MPIR algorithms faster at {self.mpir_faster} of "
                    f"{self.points} measured points, never slower)")
        if self.device_faster:
            return (f"{self.collective}: left to MPICH's device, which is faster than every MPIR algorithm at "
                    f"{self.device_faster} of {self.points} measured points; the file's rules apply where the "
                    "device hands the call to the MPIR level")
        return f"{self.collective}: left to MPICH's device (no MPIR algorithm is faster at any measured point)"


def ownership(points: list[Measured], candidates: dict[str, list[Candidate]]) -> dict[str, Ownership]:
    """Per collective with candidates: whether the file takes it from the device."""
    by: dict[tuple[str, int, int], dict[str, Measured]] = {}
    for m in points:
        by.setdefault((m.collective, m.ranks, m.bytes), {})[m.algorithm] = m
    out: dict[str, Ownership] = {}
    for coll in sorted(candidates):
        pairs = []
        for (c, p, n), algs in sorted(by.items()):
            default = algs.get(DEFAULT)
            if c != coll or default is None:
                continue
            names = {x.name for x in candidates[coll] if n >= min_bytes(x, p)}
            cands = [m for a, m in algs.items() if a in names and not m.implausible]
            if cands:
                pairs.append((default, min(cands, key=lambda m: m.median_us)))
        if not pairs:
            continue
        adj = launches.holm(launches.compare_points([(b.timing, d.timing) for d, b in pairs]))
        device = sum(1 for (d, b), q in zip(pairs, adj) if q < stats.ALPHA and d.median_us < b.median_us)
        mpir = sum(1 for (d, b), q in zip(pairs, adj) if q < stats.ALPHA and b.median_us < d.median_us)
        out[coll] = Ownership(coll, device == 0 and mpir > 0, device, mpir, len(pairs))
    return out


def environment(owned: dict[str, Ownership]) -> dict[str, str]:
    """The MPICH settings that must go with the file: none when it takes nothing."""
    taken = sorted(c for c, o in owned.items() if o.take)
    if not taken:
        return {}
    env = {SWITCH: "percoll"}
    for coll in taken:
        env[device_variable(coll)] = "0"
    return env
