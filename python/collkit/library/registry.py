"""The algorithm registry, read from the JSON that libcollkit exports.

The C table in lib/<collective>/registry.c is the only source of truth; the
build writes it to ``build/<mpi>/registry.json`` with ``collkit-registry``."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path

from collkit.common.errors import UserError, did_you_mean
from collkit.common.paths import build_dir, build_root

COLLECTIVES = (
    "bcast",
    "reduce",
    "gather",
    "scatter",
    "allgather",
    "reduce_scatter",
    "allreduce",
    "alltoall",
)


@dataclass(frozen=True)
class Constraints:
    commutative_op: bool
    pow2_ranks: bool
    min_count: int

    def describe(self) -> str:
        parts = []
        if self.commutative_op:
            parts.append("commutative op")
        if self.pow2_ranks:
            parts.append("power-of-two ranks")
        if self.min_count:
            parts.append(f"count >= {self.min_count}")
        return ", ".join(parts) or "-"


@dataclass(frozen=True)
class Algorithm:
    collective: str
    name: str
    symbol: str
    description: str
    origin: str
    constraints: Constraints

    @property
    def qualified(self) -> str:
        return f"{self.collective}/{self.name}"

    def to_json(self) -> dict:
        return {
            "collective": self.collective,
            "name": self.name,
            "symbol": self.symbol,
            "description": self.description,
            "origin": self.origin,
            "constraints": {
                "commutative_op": self.constraints.commutative_op,
                "pow2_ranks": self.constraints.pow2_ranks,
                "min_count": self.constraints.min_count,
            },
        }


def registry_file() -> Path:
    for mpi in ("openmpi", "mpich"):
        path = build_dir(mpi) / "registry.json"
        if path.is_file():
            return path
    raise UserError(
        f"no libcollkit build found under {build_root()}: run `make setup` first "
        "(or point COLLKIT_BUILD_ROOT at a build)"
    )


def load(path: Path | None = None) -> list[Algorithm]:
    path = path or registry_file()
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"cannot read the registry {path}: {exc}; rebuild with `make setup`") from exc
    algs = []
    for item in raw["algorithms"]:
        c = item["constraints"]
        algs.append(
            Algorithm(
                collective=item["collective"],
                name=item["name"],
                symbol=item.get("symbol", f"ck_{item['collective']}_{item['name']}"),
                description=item["description"],
                origin=item["origin"],
                constraints=Constraints(
                    commutative_op=bool(c["commutative_op"]),
                    pow2_ranks=bool(c["pow2_ranks"]),
                    min_count=int(c["min_count"]),
                ),
            )
        )
    return algs


def check_collective(name: str) -> str:
    if name in COLLECTIVES:
        return name
    extra = did_you_mean(name, COLLECTIVES)
    raise UserError(f"unknown collective '{name}'{extra}; choose one of {', '.join(COLLECTIVES)}")


def resolve(algs: list[Algorithm], names: list[str], collective: str | None) -> list[Algorithm]:
    """Select algorithms by NAME or COLLECTIVE/NAME; unknown names are errors."""
    pool = [a for a in algs if collective is None or a.collective == collective]
    if not names:
        return pool
    chosen: list[Algorithm] = []
    for name in names:
        hits = [a for a in pool if name in (a.name, a.qualified)]
        if not hits:
            candidates = sorted({a.name for a in pool} | {a.qualified for a in pool})
            hint = difflib.get_close_matches(name, candidates, n=1)
            where = f" for {collective}" if collective else ""
            extra = f" (did you mean '{hint[0]}'?)" if hint else ""
            raise UserError(f"unknown algorithm '{name}'{where}{extra}; see `collkit algorithms`")
        chosen.extend(a for a in hits if a not in chosen)
    return chosen
