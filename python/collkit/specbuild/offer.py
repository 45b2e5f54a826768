"""What a platform offers a spec: its MPIs (with the version discovery reports),
per collective the algorithms each library can be forced to run, and
libcollkit's algorithms with their constraints.

The MPI side is the LibraryOffer that `collkit list` prints and the planner
resolves names against, from the same discovery as campaign/plan.py's
(backends.platform_offer: SimGrid's names on a simulated platform, the library's
own tool elsewhere); libcollkit's side is the registry. Nothing here
decides what is valid: evaluate.py asks the loader and the planner."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from collkit import backends
from collkit.campaign import platform as platforms
from collkit.campaign.platform import Platform
from collkit.common.errors import UserError
from collkit.library import registry
from collkit.library.registry import Algorithm


@dataclass(frozen=True)
class MPIOffer:
    name: str
    library: str                            # "Open MPI 4.1.4": what discovery read from the library
    offer: backends.LibraryOffer | None     # None: not usable here, `problem` says why
    problem: str = ""


@dataclass(frozen=True)
class PlatformOffer:
    platform: Platform
    label: str                              # the platform as --platform named it; "" for this machine
    mpis: tuple[MPIOffer, ...]
    collectives: tuple[str, ...]
    datatypes: tuple[str, ...]
    algorithms: tuple[Algorithm, ...]       # libcollkit's registry

    def usable_mpis(self) -> list[str]:
        return [m.name for m in self.mpis if m.offer is not None]

    def mpi_choices(self, collectives: list[str], mpis: list[str]) -> list[tuple[str, str]]:
        """backends.mpi entries for these collectives and MPIs: (value, label)."""
        out = [("default", "default: each library's own choice"),
               ("all", "all: every algorithm each library can be forced to run")]
        offers = [m for m in self.mpis if m.name in mpis and m.offer is not None]
        for coll in collectives:
            libs: dict[str, list[str]] = {}
            needs: dict[str, set[str]] = {}
            for m in offers:
                for a in m.offer.for_collective(coll):
                    libs.setdefault(a.name, []).append(m.name)
                    needs.setdefault(a.name, set()).update(backends.REQUIREMENTS[r] for r in a.requires)
            for name in sorted(libs):
                extra = f"; needs {', '.join(sorted(needs[name]))}" if needs[name] else ""
                out.append((f"{coll}/{name}", f"{coll}/{name} ({', '.join(libs[name])}{extra})"))
        return out

    def collkit_choices(self, collectives: list[str]) -> list[tuple[str, str]]:
        """backends.collkit entries for these collectives: (value, label with constraints)."""
        out = [("all", "all: every libcollkit algorithm of these collectives")]
        for coll in collectives:
            for a in self.algorithms:
                if a.collective == coll:
                    needs = a.constraints.describe()
                    out.append((f"{coll}/{a.name}", f"{coll}/{a.name}" + (f" (needs {needs})" if needs != "-" else "")))
        return out

    def describe_mpis(self) -> str:
        return ", ".join(f"{m.name}: {m.library}" if m.offer else f"{m.name}: {m.problem}" for m in self.mpis) \
            or "no MPI"


def load(platform_arg: Path | None) -> PlatformOffer:
    """The platform of --platform (a file or sim:NAME), else this machine, and what it offers."""
    platform = platforms.for_campaign(platform_arg)
    mpis = []
    for name in platform.mpis:
        try:
            offer = backends.platform_offer(platform, name)
            mpis.append(MPIOffer(name, offer.library, offer,
                                 f"default only: {offer.unforceable}" if offer.unforceable else ""))
        except UserError as exc:
            mpis.append(MPIOffer(name, "", None, str(exc)))
    # A Slurm platform's MPIs that are built on first use stay unbuilt here: listing
    # what is on offer builds nothing (the plan builds the ones the spec names).
    for name in platform.unbuilt:
        mpis.append(MPIOffer(name, "built when a campaign first uses it", None, "not built yet"))
    for name, why in platform.missing.items():
        mpis.append(MPIOffer(name, "", None, why))
    reg = registry.load_registry()
    return PlatformOffer(platform=platform, label=str(platform_arg) if platform_arg else "", mpis=tuple(mpis),
                         collectives=tuple(c.name for c in reg.collectives),
                         datatypes=tuple(d.name for d in reg.datatypes), algorithms=tuple(reg.algorithms))
