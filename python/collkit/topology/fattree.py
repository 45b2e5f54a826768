"""The fat tree FT(L; M1..ML) of Prisacari et al. (ICS'13) as radices.

The C library reads the same radices from COLLKIT_FATTREE (lib/core/fattree.c,
ck_fattree_radices); this module states the same rule for the tools that decide
before launching (the campaign plan skips points that alltoall/fattree_opt would
refuse) and for `collkit traffic --fattree`. Leaf i sits under level-1 switch
i // M1, level-2 switch i // (M1*M2), and so on."""

from __future__ import annotations

import os
from dataclasses import dataclass
from math import prod

ENV = "COLLKIT_FATTREE"
MAX_LEVELS = 16
INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class FatTree:
    radices: tuple[int, ...]  # M1..ML, M1 = children of a level-1 switch

    @property
    def leaves(self) -> int:
        return prod(self.radices)

    def subtree_size(self, level: int) -> int:
        """Pi_l: the leaves under one level-l switch (level 0: one leaf)."""
        return prod(self.radices[:level])

    def bmin(self, level: int) -> int:
        """B_min(l) = Pi_l - floor(Pi_l / (M_{l+1}...M_L)), the paper's lower bound."""
        below = self.subtree_size(level)
        return below - below // prod(self.radices[level:])

    def text(self) -> str:
        return ",".join(str(m) for m in self.radices)


def parse(text: str) -> FatTree:
    """'8,4,2' -> FatTree((8, 4, 2)); ValueError naming the problem otherwise."""
    parts = text.split(",")
    if not text or any(not p.isdigit() for p in parts):
        raise ValueError(f"{text!r} is not a comma-separated list of radices like 8,4,2")
    radices = tuple(int(p) for p in parts)
    if any(m < 1 for m in radices):
        raise ValueError(f"{text!r}: every radix must be at least 1")
    if len(radices) > MAX_LEVELS:
        raise ValueError(f"{text!r}: at most {MAX_LEVELS} levels")
    if prod(radices) > INT_MAX:
        raise ValueError(f"{text!r}: the number of leaves does not fit an int")
    return FatTree(radices)


def fit(ranks: int, tree: FatTree) -> FatTree:
    """The tree of `ranks` ranks: ranks = k * leaves, k > 1 ranks per node
    prepended as a leaf level (as ck_fattree_fit does); ValueError otherwise."""
    if ranks < 1 or ranks % tree.leaves:
        raise ValueError(f"{ranks} ranks do not fill FT({tree.text()}) of {tree.leaves} leaves "
                         f"(the rank count must be a multiple of {tree.leaves})")
    k = ranks // tree.leaves
    return FatTree(((k,) if k > 1 else ()) + tree.radices)


def misfit(ranks: int, environ: dict[str, str] | None = None) -> str:
    """Why alltoall/fattree_opt would refuse `ranks` under this environment
    ('' when it runs: COLLKIT_FATTREE unset means one switch)."""
    text = (os.environ if environ is None else environ).get(ENV, "")
    if not text:
        return ""
    try:
        fit(ranks, parse(text))
    except ValueError as exc:
        return f"{ENV}={text}: {exc}"
    return ""
