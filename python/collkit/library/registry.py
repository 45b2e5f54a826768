"""The algorithm registry, read from the JSON that libcollkit exports.

libcollkit is the only source of truth about the collectives (their
descriptors in lib/core/collective.c), the datatypes and the algorithms (the
tables in lib/<collective>/registry.c); the build writes all three to
``build/<mpi>/registry.json`` with ``collkit-registry``::

    {"collectives": [...], "datatypes": [...], "ops": [...], "skew_quantiles": 11, "algorithms": [...]}

Nothing in Python restates them: a collective's root, op, buffer blocks and
in-place rule, a datatype's size, the ops MPI predefines (and which a spec
measures: SPEC_OPS) and an algorithm's traits are read from here
(loaded once per file and cached)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from collkit.common.errors import UserError, did_you_mean

BLOCKS_P = -1  # a buffer of p blocks (CK_BLOCKS_P); "p" in the JSON
_BLOCK_FIELDS = ("send_blocks_root", "send_blocks_other", "recv_blocks_root", "recv_blocks_other")


@dataclass(frozen=True)
class Collective:
    """One collective's descriptor (ck_collective_desc in collkit.h). Buffers
    are counted in blocks of `count` elements: 0, 1 or BLOCKS_P."""

    name: str
    id: int
    mpi_name: str
    has_root: bool
    has_op: bool
    per_block: bool          # count is one rank's block, not the whole vector
    in_place: str            # "none", "send" (sbuf = MPI_IN_PLACE) or "recv" (scatter)
    send_blocks_root: int
    send_blocks_other: int
    recv_blocks_root: int
    recv_blocks_other: int
    from_root: bool
    source_slot_is_dest: bool
    result_is_own_block: bool
    replicated: bool
    busbw_const: float
    busbw_per_p: float

    def in_place_at(self, in_place: bool, is_root: bool) -> bool:
        """Whether MPI_IN_PLACE applies at a rank: where MPI allows it at all,
        and only at the root of a rooted collective."""
        if not in_place or self.in_place == "none":
            return False
        return is_root or not self.has_root

    def _elems(self, blocks: int, count: int, ranks: int) -> int:
        return ranks * count if blocks == BLOCKS_P else blocks * count

    def send_elems(self, count: int, ranks: int, is_root: bool, in_place: bool = False) -> int:
        """Elements of a rank's send buffer (0 where it is MPI_IN_PLACE or not significant)."""
        if self.in_place_at(in_place, is_root) and self.in_place == "send":
            return 0
        root = is_root and self.has_root
        return self._elems(self.send_blocks_root if root else self.send_blocks_other, count, ranks)

    def recv_elems(self, count: int, ranks: int, is_root: bool, in_place: bool = False) -> int:
        """Elements of a rank's receive buffer; in place it holds the input too."""
        root = is_root and self.has_root
        recv = self._elems(self.recv_blocks_root if root else self.recv_blocks_other, count, ranks)
        if not self.in_place_at(in_place, is_root):
            return recv
        if self.in_place == "recv":
            return 0
        return max(recv, self._elems(self.send_blocks_root if root else self.send_blocks_other,
                                     count, ranks))

    def vector_bytes(self, nbytes: int, ranks: int) -> int:
        """The whole vector of a point of `nbytes` per count: p blocks where per_block."""
        return nbytes * ranks if self.per_block else nbytes

    def busbw_factor(self, ranks: int) -> float:
        """nccl-tests' bus-bandwidth factor at p ranks."""
        if ranks <= 0:
            return 0.0
        return self.busbw_const + self.busbw_per_p * (ranks - 1) / ranks

    def to_json(self) -> dict:
        out = {}
        for f in self.__dataclass_fields__:
            v = getattr(self, f)
            out[f] = "p" if f in _BLOCK_FIELDS and v == BLOCKS_P else v
        return out


@dataclass(frozen=True)
class Datatype:
    name: str
    size: int  # bytes
    is_float: bool

    def to_json(self) -> dict:
        return {"name": self.name, "size": self.size, "is_float": self.is_float}


@dataclass(frozen=True)
class Op:
    """An op MPI predefines (ck_op_desc, lib/core/ops.c)."""
    name: str
    reduction: bool     # a commutative reduction op (not MPI_REPLACE, MPI_NO_OP)
    arithmetic: bool    # sum, max, min, prod: what a spec and collkit-bench measure

    def to_json(self) -> dict:
        return {"name": self.name, "reduction": self.reduction, "arithmetic": self.arithmetic}


@dataclass(frozen=True)
class Constraints:
    commutative_op: bool
    pow2_ranks: bool
    min_count: int
    fattree: bool = False  # CK_REQUIRES_FATTREE: COLLKIT_FATTREE's radices must fit p
    equal_nodes: bool = False  # CK_REQUIRES_EQUAL_NODES: every node holds the same rank count

    def describe(self) -> str:
        parts = []
        if self.commutative_op:
            parts.append("commutative op")
        if self.pow2_ranks:
            parts.append("power-of-two ranks")
        if self.min_count:
            parts.append(f"count >= {self.min_count}")
        if self.fattree:
            parts.append("COLLKIT_FATTREE product divides ranks")
        if self.equal_nodes:
            parts.append("equal ranks per node")
        return ", ".join(parts) or "-"


@dataclass(frozen=True)
class Traits:
    """What an algorithm's message schedule is like (CK_TRAIT_*); constrains nothing."""

    whole_vector: bool = False  # every message is the whole vector, at any count
    # CK_TRAIT_FP_RANK_VARIANT: ranks add the inputs in different orders, so floating-point
    # results may differ across ranks in the last bits (integer results stay identical); the
    # preload and `collkit tune` use it for floating-point reductions only when allowed
    fp_rank_variant: bool = False

    def describe(self) -> str:
        return "fp results may differ across ranks" if self.fp_rank_variant else "-"


@dataclass(frozen=True)
class Algorithm:
    collective: str
    name: str
    symbol: str
    description: str
    origin: str
    constraints: Constraints
    traits: Traits = field(default_factory=Traits)

    @property
    def qualified(self) -> str:
        return f"{self.collective}/{self.name}"

    @property
    def whole_vector(self) -> bool:
        return self.traits.whole_vector

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
                "fattree": self.constraints.fattree,
                "equal_nodes": self.constraints.equal_nodes,
            },
            "traits": {"whole_vector": self.traits.whole_vector,
                       "fp_rank_variant": self.traits.fp_rank_variant},
        }


@dataclass(frozen=True)
class Registry:
    collectives: tuple[Collective, ...]
    datatypes: tuple[Datatype, ...]
    ops: tuple[Op, ...]
    skew_quantiles: int       # a rank's arrival quantiles (0, 10, ..., 100 %): profile and program conditions
    algorithms: tuple[Algorithm, ...]

    def to_json(self) -> dict:
        return {"collectives": [c.to_json() for c in self.collectives],
                "datatypes": [d.to_json() for d in self.datatypes],
                "ops": [o.to_json() for o in self.ops], "skew_quantiles": self.skew_quantiles,
                "algorithms": [a.to_json() for a in self.algorithms]}


def registry_file() -> Path:
    """libcollkit's registry as a build exported it (any build: the algorithms
    do not depend on the MPI)."""
    from collkit.mpis import known
    return known.any_build("registry")


def _blocks(v: object) -> int:
    if v == "p":
        return BLOCKS_P
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return v
    raise ValueError(f"a block count must be 0, 1 or \"p\", not {v!r}")


def _collective(item: dict) -> Collective:
    kw = {}
    for name, f in Collective.__dataclass_fields__.items():
        v = item[name]
        if name in _BLOCK_FIELDS:
            v = _blocks(v)
        elif f.type == "bool":
            v = bool(v)
        elif f.type == "float":
            v = float(v)
        kw[name] = v
    if kw["in_place"] not in ("none", "send", "recv"):
        raise ValueError(f"unknown in_place kind {kw['in_place']!r}")
    return Collective(**kw)


def _algorithm(item: dict) -> Algorithm:
    c = item["constraints"]
    return Algorithm(
        collective=item["collective"],
        name=item["name"],
        symbol=item.get("symbol", f"ck_{item['collective']}_{item['name']}"),
        description=item["description"],
        origin=item["origin"],
        constraints=Constraints(
            commutative_op=bool(c["commutative_op"]),
            pow2_ranks=bool(c["pow2_ranks"]),
            min_count=int(c["min_count"]),
            fattree=bool(c.get("fattree", False)),
            equal_nodes=bool(c.get("equal_nodes", False)),
        ),
        traits=Traits(whole_vector=bool(item["traits"]["whole_vector"]),
                      fp_rank_variant=bool(item["traits"].get("fp_rank_variant", False))),
    )


@lru_cache(maxsize=8)
def _parse(path: Path, _stamp: tuple[int, int]) -> Registry:
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"cannot read the registry {path}: {exc}; rebuild it (collkit build, or pip install again)") from exc
    try:
        return Registry(collectives=tuple(_collective(c) for c in raw["collectives"]),
                        datatypes=tuple(Datatype(d["name"], int(d["size"]), bool(d["is_float"]))
                                        for d in raw["datatypes"]),
                        ops=tuple(Op(o["name"], bool(o["reduction"]), bool(o["arithmetic"])) for o in raw["ops"]),
                        skew_quantiles=int(raw["skew_quantiles"]),
                        algorithms=tuple(_algorithm(a) for a in raw["algorithms"]))
    except (TypeError, KeyError, ValueError):
        # A registry.json from before the descriptors were exported, or a broken one.
        raise UserError(f"the registry {path} is in an older or unknown format; "
                        "rebuild it (collkit build, or pip install again)") from None


def load_registry(path: Path | None = None) -> Registry:
    """The whole registry: a given file is read once (and again if it changes);
    the build's own registry once per process, since the hot paths (traffic over
    10,000 allocations asks for descriptors per job) must not stat files."""
    if path is None:
        return _build_registry()
    path = path.resolve()
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (0, 0)  # _parse reports the unreadable file
    return _parse(path, stamp)


@lru_cache(maxsize=1)
def _build_registry() -> Registry:
    return load_registry(registry_file())


@lru_cache(maxsize=64)
def _by_name(name: str) -> Collective | None:
    return next((c for c in collectives() if c.name == name), None)


def load(path: Path | None = None) -> list[Algorithm]:
    return list(load_registry(path).algorithms)


def collectives() -> tuple[Collective, ...]:
    return load_registry().collectives


def collective_names() -> tuple[str, ...]:
    return tuple(c.name for c in collectives())


def collective(name: str) -> Collective:
    """The descriptor of a collective; UserError (with a suggestion) when unknown."""
    found = _by_name(name)
    if found is not None:
        return found
    name = check_collective(name)   # raises with a suggestion
    return next(c for c in collectives() if c.name == name)


def datatypes() -> tuple[Datatype, ...]:
    return load_registry().datatypes


def datatype_names() -> tuple[str, ...]:
    return tuple(d.name for d in datatypes())


def datatype(name: str) -> Datatype:
    for d in datatypes():
        if d.name == name:
            return d
    names = datatype_names()
    raise UserError(f"unknown dtype '{name}'{did_you_mean(name, names)}; choose one of {', '.join(names)}")


def datatype_size(name: str) -> int:
    return datatype(name).size


def ops() -> tuple[Op, ...]:
    return load_registry().ops


def skew_quantiles() -> int:
    """How many arrival quantiles (0, 10, ..., 100 %) a rank's skew has: in a
    profile, a spec's skew_us rows and collkit-bench's points (CK_SKEW_QUANTILES)."""
    return load_registry().skew_quantiles


def spec_op_names() -> tuple[str, ...]:
    """The ops a spec, collkit-bench and collkit-replay take: sum, max, min, prod."""
    return tuple(o.name for o in ops() if o.arithmetic)


class _Names(Sequence[str]):
    """Names read from the registry on first use (COLLECTIVES, SPEC_OPS), so that
    importing a module that names them needs no build (only using them does)."""

    def __init__(self, names, label: str):
        self._names = names
        self._label = label

    def __getitem__(self, i):  # type: ignore[override]
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Sequence) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{self._label}{self._names()!r}"


COLLECTIVES: Sequence[str] = _Names(collective_names, "COLLECTIVES")     # libcollkit's order
SPEC_OPS: Sequence[str] = _Names(spec_op_names, "SPEC_OPS")


def check_collective(name: str) -> str:
    names = collective_names()
    if name in names:
        return name
    extra = did_you_mean(name, names)
    raise UserError(f"unknown collective '{name}'{extra}; choose one of {', '.join(names)}")


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
