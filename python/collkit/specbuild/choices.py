"""The spec builder's state and the commented TOML it becomes.

Fields a person types (sizes, rank counts, numbers) stay text here and are
written as the TOML value they read as (an integer, a number, a string, a list);
whether that value is acceptable is the spec loader's decision alone
(campaign/spec.py), so an entry the loader refuses is refused with its message.
An empty entry leaves its key out: the loader's default (or its "missing key")
applies."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from collkit.campaign.spec import Measure

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")

# [measure] keys the builder offers, in the loader's names, with the comment written beside each.
MEASURE_KEYS = {
    "warmup": "discarded iterations before timing",
    "min_iterations": "at least this many timed iterations per point",
    "max_iterations": "at most this many",
    "time_budget_s": "seconds of timed iterations per point (once min_iterations are kept)",
    "sync": "what separates iterations: dissemination | mpi_barrier | window",
    "validate": "check results: first | all | none",
    "timeout_s": "seconds before a silent point counts as hung",
    "launch_warmup_s": "every rank exchanges with every peer this long first (empty: collkit-bench's default)",
    "settle_s": "bound on a point's warm-up windows (empty: collkit-bench's default)",
}


def _measure_defaults() -> dict[str, str]:
    """The loader's own defaults (spec.Measure), as the text a person would type."""
    d = Measure()
    out = {}
    for key in MEASURE_KEYS:
        v = getattr(d, key)
        out[key] = "" if v is None else f"{v:g}" if isinstance(v, float) else str(v)
    return out


@dataclass
class Choices:
    name: str = "campaign"
    collectives: list[str] = field(default_factory=list)
    mpis: list[str] = field(default_factory=list)
    backend_mpi: list[str] = field(default_factory=list)      # empty: no mpi backend
    backend_collkit: list[str] = field(default_factory=list)  # empty: no collkit backend
    sizes: str = ""
    ranks: str = ""
    dtype: str = "int32"
    op: str = "sum"
    root: str = "0"
    in_place: bool = False
    measure: dict[str, str] = field(default_factory=_measure_defaults)
    platform: str = ""   # written as platforms = [...] so `collkit run SPEC` runs where it was built for


def value(text: str) -> str:
    """One typed entry as a TOML value: an integer or a number as such, else a string."""
    t = text.strip()
    if _INT.match(t):
        return str(int(t))
    if _FLOAT.match(t):
        return repr(float(t))   # TOML's form of it: "7." and ".5" are not TOML
    return json.dumps(t)   # a TOML basic string: JSON's escapes are TOML's


def list_value(text: str) -> str:
    """A typed list ("2, 4 8") as a TOML array; a size range ("8B..1MiB x2") stays one string."""
    t = text.strip()
    if ".." in t:
        return json.dumps(t)
    return "[" + ", ".join(value(i) for i in re.split(r"[,\s]+", t) if i) + "]"


def names(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def _line(key: str, val: str, comment: str) -> str:
    """One key with what it means on the line above (long comments stay readable)."""
    return f"# {comment}\n{key} = {val}" if comment else f"{key} = {val}"


def body(c: Choices) -> str:
    """The spec's keys, each with a comment saying what it means; no header."""
    out = [_line("name", json.dumps(c.name.strip()), "the campaign's name (results/<name>-<date>-<time>)")
           if c.name.strip() else ""]
    if c.collectives:
        out.append(_line("collectives", names(c.collectives), "collkit list shows each one's algorithms"))
    if c.sizes.strip():
        out.append(_line("sizes", list_value(c.sizes),
                         "bytes of the vector (one rank's block for gather, scatter, allgather, alltoall, "
                         "reduce_scatter); a list or LOW..HIGH xFACTOR"))
    if c.ranks.strip():
        out.append(_line("ranks", list_value(c.ranks), "rank counts"))
    if c.mpis:
        out.append(_line("mpi", names(c.mpis), "MPI libraries of the platform (collkit mpis)"))
    out.append(_line("dtype", json.dumps(c.dtype), "the datatype of every element"))
    out.append(_line("op", json.dumps(c.op), "the reduction op (reductions only)"))
    if c.root.strip():
        out.append(_line("root", value(c.root), "root of bcast, reduce, gather, scatter (below every rank count)"))
    out.append(_line("in_place", "true" if c.in_place else "false", "MPI_IN_PLACE where the collective allows it"))
    if c.platform:
        out.append(_line("platforms", names([c.platform]),
                         "where `collkit run SPEC` runs it (--platform overrides)"))
    out += ["", "[backends]"]
    if c.backend_mpi:
        out.append(_line("mpi", names(c.backend_mpi),
                         "\"default\": the library's own choice; \"all\": every algorithm it can be forced to"))
    if c.backend_collkit:
        out.append(_line("collkit", names(c.backend_collkit), "libcollkit's algorithms (\"all\" or names)"))
    out += ["", "[measure]"]
    # Keys the builder does not offer (--measure KEY=VALUE) are written too: the
    # loader refuses an unknown one with its suggestion.
    for key in [*MEASURE_KEYS, *(k for k in c.measure if k not in MEASURE_KEYS)]:
        text = c.measure.get(key, "").strip()
        if text:
            out.append(_line(key, value(text), MEASURE_KEYS.get(key, "")))
    return "\n".join(line for i, line in enumerate(out) if line or i) + "\n"
