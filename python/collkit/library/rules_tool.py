"""The preload's own reading of collkit rules files, its fallback rule and its
reading of MPICH's CVAR value lines, asked of `collkit-rules`
(tools/rules_check.c), which compiles the preload's grammar
(preload/rules_grammar.c), rule (preload/fallback_rule.c) and value lines
(preload/cvar_values.c): Python restates none, so `collkit predict --rules`,
`trial` and `replay` accept, refuse and fall back exactly as the preload does
(tests/python/test_rules_parity.py), and `collkit list` names MPICH's
algorithms as the preload's autotuner does.

What only a program's MPI can answer stays at its MPI_Init: whether
library:NAME is an algorithm that MPI can switch (per call under MPICH, per
communicator under Open MPI's dynamic rules), and whether the
autotuner's `mpi_library` line is the library it runs on."""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from collkit.common.errors import UserError

PREFIX = "COLLKIT_RULES: "


@dataclass(frozen=True)
class RuleLine:
    line: int
    collective: str
    ranks: tuple[int, int]      # inclusive; RANKS "*" is 1..2**31-1
    bytes: tuple[int, int]
    choice: str


@dataclass(frozen=True)
class RulesFile:
    rules: tuple[RuleLine, ...]
    allow_fp_rank_variant: bool
    mpi_library: str | None     # the autotuner's `mpi_library = TEXT`


def _tool() -> Path:
    from collkit.mpis import known
    return known.any_build("rules")


def _run(argv: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([str(_tool()), *argv], input=stdin, capture_output=True, text=True,
                              errors="replace", timeout=120)
    except OSError as e:
        raise UserError(f"cannot run collkit-rules ({e.strerror}); rebuild collkit (collkit build, "
                        "or pip install again)") from None


def read_text(text: str) -> RulesFile:
    """A rules file's text as the preload reads it; ValueError with the
    preload's words ("line N: what; fix: ...") when it would refuse it."""
    with tempfile.TemporaryDirectory(prefix="collkit-rules-") as d:
        path = Path(d) / "rules"
        path.write_text(text)
        r = _run([str(path)])
        said = r.stderr.strip().splitlines()
        if r.returncode == 2 and said:
            msg = said[-1].removeprefix(PREFIX).replace(f"{path}:", "line ", 1)
            raise ValueError(msg)
    if r.returncode != 0:
        raise UserError(f"collkit-rules failed ({r.returncode}): {r.stderr.strip()[:300]}; rebuild collkit "
                        "(collkit build, or pip install again)")
    data = json.loads(r.stdout)
    return RulesFile(rules=tuple(RuleLine(d["line"], d["collective"], tuple(d["ranks"]), tuple(d["bytes"]),
                                          d["choice"]) for d in data["rules"]),
                     allow_fp_rank_variant=bool(data["allow_fp_rank_variant"]), mpi_library=data["mpi_library"])


@dataclass(frozen=True)
class CallFacts:
    """What the fallback rule reads of one call (preload/fallback_rule.h)."""
    collective: str
    algorithm: str
    inter: bool
    size: int
    root: int
    bytes: int
    count: int = 0
    datatype_ok: bool = False
    op_known: bool = False
    commutative: bool = False
    integer: bool = False
    fp_allowed: bool = False

    def line(self) -> str:
        b = int
        return " ".join(str(v) for v in (self.collective, self.algorithm, b(self.inter), self.size, self.root,
                                         self.bytes, self.count, b(self.datatype_ok), b(self.op_known),
                                         b(self.commutative), b(self.integer), b(self.fp_allowed)))


_decided: dict[CallFacts, str] = {}


def fallbacks(calls: list[CallFacts]) -> list[str]:
    """Per call, the preload's fallback reason ("" when the algorithm runs):
    one run of collkit-rules for all that are not yet known."""
    todo = list(dict.fromkeys(c for c in calls if c not in _decided))
    if todo:
        r = _run(["--fallback"], "".join(c.line() + "\n" for c in todo))
        out = r.stdout.split()
        if r.returncode != 0 or len(out) != len(todo):
            raise UserError(f"collkit-rules --fallback failed ({r.returncode}): {r.stderr.strip()[:300]}; "
                            "rebuild collkit (collkit build, or pip install again)")
        _decided.update((c, "" if w == "runs" else w) for c, w in zip(todo, out))
    return [_decided[c] for c in calls]



def cvar_values(descriptions: list[str]) -> list[tuple[tuple[str, str], ...]]:
    """Per MPICH CVAR description, its value lines (name, text) in value order."""
    if not descriptions:
        return []
    if any("\f" in d for d in descriptions):
        raise ValueError("a CVAR description holds a form feed")
    r = _run(["--cvar-values"], "".join(d.rstrip("\n") + "\n\f\n" for d in descriptions))
    blocks = r.stdout.split("\f\n")
    if r.returncode != 0 or len(blocks) != len(descriptions) + 1:
        raise UserError(f"collkit-rules --cvar-values failed ({r.returncode}): {r.stderr.strip()[:300]}; "
                        "rebuild collkit (collkit build, or pip install again)")
    return [tuple(tuple(ln.split("\t", 1)) for ln in b.splitlines() if ln) for b in blocks[:-1]]  # type: ignore[misc]
