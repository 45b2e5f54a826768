"""The collkit rules format (docs/preload.md): COLLECTIVE RANKS BYTES CHOICE, the first
matching line wins, BYTES as collkit-bench counts them (one block for allgather).
One setting line, `allow_fp_rank_variant = true|false`, lets the rules run algorithms
whose floating-point results may differ across ranks on floating-point reductions.
`parse` reads it back with the same grammar as the preload's C parser, for the tests
and for `collkit tune` to check its own output."""

from __future__ import annotations

import re
from dataclasses import dataclass

from collkit.tune.decide import DEFAULT, Rule

COLLECTIVES = ("bcast", "reduce", "gather", "scatter", "allgather", "reduce_scatter", "allreduce", "alltoall")
_RANGE = re.compile(r"^(\*|\d+|\d+-\d+|\d+-\*)$")
ALLOW_FP = "allow_fp_rank_variant"
_MPI_LIBRARY = re.compile(r"^mpi_library\s*=\s*(.*)$")
_FOR = "libcollkit over "
_WRITTEN_FOR = re.compile(r"^#\s*for " + re.escape(_FOR) + r"([A-Za-z0-9][A-Za-z0-9._+-]*)[;\s]", re.M)


@dataclass(frozen=True)
class Line:
    collective: str
    ranks: tuple[int, int | None]     # inclusive; None: no upper bound
    bytes: tuple[int, int | None]
    choice: str


def _range(text: str) -> tuple[int, int | None]:
    if text == "*":
        return 0, None
    if "-" in text:
        a, b = text.split("-", 1)
        return int(a), None if b == "*" else int(b)
    return int(text), int(text)


def parse(text: str) -> list[Line]:
    """ValueError naming the line on anything the preload would reject."""
    out = []
    for no, raw in enumerate(text.splitlines(), 1):
        if _MPI_LIBRARY.match(raw):
            continue        # the library the autotuner learned on (learned_on): the rest of the line
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        f = line.split()
        if len(f) == 3 and f[1] == "=":
            if f[0] != ALLOW_FP or f[2] not in ("true", "false"):
                raise ValueError(f"line {no}: {raw!r}: the one setting is {ALLOW_FP} = true|false")
            continue
        if len(f) != 4 or f[0] not in COLLECTIVES or not _RANGE.match(f[1]) or not _RANGE.match(f[2]):
            raise ValueError(f"line {no}: {raw!r}")
        r, b = _range(f[1]), _range(f[2])
        if (r[1] is not None and r[1] < r[0]) or (b[1] is not None and b[1] < b[0]):
            raise ValueError(f"line {no}: empty range in {raw!r}")
        out.append(Line(f[0], r, b, f[3]))
    return out


def lookup(lines: list[Line], collective: str, ranks: int, nbytes: int) -> str:
    for ln in lines:
        if ln.collective == collective and ln.ranks[0] <= ranks and (ln.ranks[1] is None or ranks <= ln.ranks[1]) \
                and ln.bytes[0] <= nbytes and (ln.bytes[1] is None or nbytes <= ln.bytes[1]):
            return ln.choice
    return "library"


def library_of(mpi: str) -> str:
    """How tune's header names what a rules file is for ("# for libcollkit over openmpi; ...")."""
    return f"{_FOR}{mpi}"


def written_for(text: str) -> str | None:
    """The MPI a rules file says it was tuned over (tune's header line), None when it
    does not say (a file written by hand): the preload itself ignores comments."""
    m = _WRITTEN_FOR.search(text)
    return m.group(1) if m else None


def learned_on(text: str) -> str | None:
    """The `mpi_library = TEXT` setting the preload's autotuner writes: the first
    line of the MPI library's version string the rules were learned on (the
    preload refuses them under another one), None when absent."""
    for raw in text.splitlines():
        m = _MPI_LIBRARY.match(raw)
        if m:
            return m.group(1).strip()
    return None


def allows_fp_rank_variant(text: str) -> bool:
    """Whether the file's setting lets its rules run fp_rank_variant algorithms on
    floating-point reductions (the last setting line wins, as in the preload)."""
    allowed = False
    for raw in text.splitlines():
        f = raw.split("#", 1)[0].split()
        if len(f) == 3 and f[0] == ALLOW_FP and f[1] == "=":
            allowed = f[2] == "true"
    return allowed


def write(rules: list[Rule], header: list[str], allow_fp_rank_variant: bool = False) -> str:
    out = [f"# {h}" for h in header]
    if allow_fp_rank_variant:
        out.append("# --allow-fp-rank-variant: floating-point results may differ across ranks in the last bits")
        out.append(f"{ALLOW_FP} = true")
    out.append("# collkit rules v1: COLLECTIVE  RANKS  BYTES  CHOICE")
    for r in rules:
        hi = "*" if r.bytes_hi is None else str(r.bytes_hi)
        choice = "library" if r.choice == DEFAULT else r.choice
        speed = f", expected {r.speedup:.2f}x" if r.speedup and r.choice != DEFAULT else ""
        cut = f", cutoff: {r.cutoff}" if r.cutoff else ""
        out.append(f"{r.collective:<14} {r.ranks:<4} {f'{r.bytes_lo}-{hi}':<20} {choice:<24} # {r.source}{cut}{speed}")
    return "\n".join(out) + "\n"
