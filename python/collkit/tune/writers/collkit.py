"""The collkit rules format (docs/preload.md): COLLECTIVE RANKS BYTES CHOICE, the first
matching line wins, BYTES as collkit-bench counts them (one block for allgather).
One setting line, `allow_fp_rank_variant = true|false`, lets the rules run algorithms
whose floating-point results may differ across ranks on floating-point reductions.

This module writes the format; it reads it only through the preload's own parser
(`collkit-rules`, library/rules_tool.py), so that what tune writes, what predict,
trial and replay accept, and what the preload runs are one grammar."""

from __future__ import annotations

import re
from dataclasses import dataclass

from collkit.library import registry, rules_tool
from collkit.tune.decide import DEFAULT, Rule

ALLOW_FP = "allow_fp_rank_variant"
_FOR = "libcollkit over "
_WRITTEN_FOR = re.compile(r"^#\s*for " + re.escape(_FOR) + r"([A-Za-z0-9][A-Za-z0-9._+-]*)[;\s]", re.M)


def collectives() -> tuple[str, ...]:
    """The collectives a rule may name: libcollkit's (the preload intercepts each)."""
    return registry.collective_names()


@dataclass(frozen=True)
class Line:
    collective: str
    ranks: tuple[int, int | None]     # inclusive; None: no upper bound
    bytes: tuple[int, int | None]
    choice: str


def parse(text: str) -> list[Line]:
    """The rules, as the preload reads them; ValueError naming the line on anything
    the preload would refuse."""
    return [Line(r.collective, r.ranks, r.bytes, r.choice) for r in rules_tool.read_text(text).rules]


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
    preload refuses them under another one), None when absent. ValueError when
    the preload would refuse the file."""
    return rules_tool.read_text(text).mpi_library


def allows_fp_rank_variant(text: str) -> bool:
    """Whether the file's setting lets its rules run fp_rank_variant algorithms on
    floating-point reductions (the last setting line wins, as in the preload)."""
    return rules_tool.read_text(text).allow_fp_rank_variant


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
