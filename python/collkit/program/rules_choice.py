"""What libcollkit-preload runs for one profiled call class under a collkit
rules file: the rule's choice, then the preload's own fallbacks, both decided
by the preload's C (the rules grammar and the fallback rule, asked of
`collkit-rules`: library/rules_tool.py), so a tool that reasons about a rules
file without running the preload (`predict`, `trial`, `replay`) runs what the
preload would have run. What Python adds is the call's facts as a profile
records them (_facts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from collkit.common.errors import UserError
from collkit.library import registry, rules_tool
from collkit.program.profile_file import CallClass, reduction, rooted
from collkit.tune.writers import collkit as rules_format

LIBRARY = "library"
LIBRARY_ALGORITHM = "library:"      # library:NAME, the library's own algorithm switched per call (MPICH)
# A profile names a program's own op "user" (preload/names.c, ckp_op_name) and does
# not record whether it commutes; every op MPI predefines does (MPI-4.0, 6.9.2).
USER_OP = "user"


@dataclass(frozen=True)
class Rules:
    path: Path | None                 # None: algorithms forced, not a file (forced())
    lines: tuple[rules_format.Line, ...]
    allow_fp_rank_variant: bool
    mpi_library: str | None = None    # the autotuner's `mpi_library` line: the library of its library:NAME


@dataclass(frozen=True)
class Choice:
    runs: str           # "library" or the libcollkit algorithm that runs the class
    rule: str           # what the rules file chose ("library" when no rule matched)
    fallback: str = ""  # the preload's reason for running the library instead of the rule's choice


def load_rules(path: str | Path, mpi: str | None = None) -> Rules:
    """A collkit rules file, read by the preload's own parser, and refused when
    tune's header says it was tuned over another MPI than `mpi`: one-line
    UserError naming the file and the line."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not text"
        raise UserError(f"--rules {path}: cannot read it ({why}); give a collkit rules file "
                        "(`collkit tune --format collkit`, format in docs/preload.md)") from None
    try:
        read = rules_tool.read_text(text)
    except ValueError as e:
        raise UserError(f"--rules {path}: {e}") from None
    tuned_over = rules_format.written_for(text)
    if mpi is not None and tuned_over is not None and tuned_over != mpi:
        raise UserError(f"--rules {path}: tuned over {tuned_over}, not {mpi}; tune on a campaign of {mpi} "
                        f"(`collkit tune CAMPAIGN --format collkit --mpi {mpi}`)")
    learned = read.mpi_library
    if mpi is not None and learned is not None and not _same_family(learned, mpi):
        raise UserError(f"--rules {path}: learned by the autotuner on '{learned}', not on {mpi}; autotune again "
                        f"on {mpi} (`collkit preload --mpi {mpi} --autotune`)")
    lines = tuple(rules_format.Line(r.collective, r.ranks, r.bytes, r.choice) for r in read.rules)
    return Rules(path=p, lines=lines, allow_fp_rank_variant=read.allow_fp_rank_variant, mpi_library=learned)


def _same_family(library_line: str, mpi: str) -> bool:
    """Whether an MPI_Get_library_version line is of the known MPI's family (the
    preload compares the whole line at MPI_Init; without running the library,
    the family is what can be told)."""
    from collkit.mpis import known
    try:
        family = known.find(mpi).family
    except UserError:
        return True          # not a known MPI here: the preload will check the line
    text = library_line.lower()
    says = "openmpi" if "open mpi" in text else "mpich" if "mpich" in text else None
    return says is None or says == family


def forced(algorithms: tuple[tuple[str, str], ...]) -> Rules:
    """The rules equivalent to forcing these (collective, algorithm)s, as `collkit
    trial --algorithm` does: `C * * NAME` for each, the preload's fallbacks applying."""
    return Rules(path=None, lines=tuple(rules_format.Line(c, (1, None), (0, None), a) for c, a in algorithms),
                 allow_fp_rank_variant=False)


# The preload's fallback reasons (its report's names: preload/fallback_rule.c) in words.
REASON_TEXT = {
    "intercommunicator": "the call is on an intercommunicator",
    "root": "the root is out of range",
    "count": "the count is 0, too large, or below the algorithm's minimum",
    "datatype": "the reduction's datatype is not one the algorithms combine",
    "op-not-commutative": "the op may not commute and the algorithm needs it to",
    "fp-rank-variant": "it may give rank-dependent float results and the rules do not allow it",
    "ranks": "it needs a power-of-two rank count",
    "constraint": "it has a topology constraint the preload cannot evaluate",
}


def _facts(algorithm: str, c: CallClass, rules: Rules) -> rules_tool.CallFacts:
    """The facts the fallback rule reads, as the profile records the class. A
    reduction's datatype is one the algorithms combine where the profile names
    it (its `dtype`: a predefined, contiguous integer or float); a "user" op is
    taken as not commuting. Forced algorithms (rules.path None) may give
    rank-variant floats, as COLLKIT_ALGORITHMS allows them by name."""
    root = (c.root if c.root is not None else -1) if rooted(c.collective) else 0
    facts = rules_tool.CallFacts(collective=c.collective, algorithm=algorithm, inter=c.comm == "inter",
                                 size=c.comm_size, root=root, bytes=c.bytes,
                                 fp_allowed=rules.allow_fp_rank_variant or rules.path is None)
    if not reduction(c.collective) or c.dtype is None:
        return facts
    dtype = registry.datatype(c.dtype)
    return rules_tool.CallFacts(**{**facts.__dict__, "count": c.bytes // dtype.size, "datatype_ok": True,
                                   "op_known": c.op is not None, "commutative": c.op != USER_OP,
                                   "integer": not dtype.is_float})


def _chosen(rules: Rules | None, c: CallClass) -> str:
    if rules is None or c.collective not in rules_format.collectives():
        return LIBRARY
    return rules_format.lookup(list(rules.lines), c.collective, c.comm_size, c.bytes)


def choose_all(rules: Rules | None, classes) -> list[Choice]:
    """What the preload runs for each class under rules (None: pass-through):
    one question to collkit-rules for all the fallbacks."""
    picked = [_chosen(rules, c) for c in classes]
    ours = [(i, p) for i, p in enumerate(picked) if p != LIBRARY and not p.startswith(LIBRARY_ALGORITHM)]
    reasons = dict(zip((i for i, _ in ours),
                       rules_tool.fallbacks([_facts(p, classes[i], rules) for i, p in ours]))) if ours else {}
    out = []
    for i, p in enumerate(picked):
        if p == LIBRARY:
            out.append(Choice(runs=LIBRARY, rule=LIBRARY))
        elif p.startswith(LIBRARY_ALGORITHM):
            # the library's own algorithm, switched per call (MPICH; docs/preload.md "Autotune"):
            # the library runs it, so tools that reason about the rules count it as the library's
            out.append(Choice(runs=LIBRARY, rule=p))
        else:
            reason = reasons[i]
            out.append(Choice(runs=LIBRARY if reason else p, rule=p, fallback=reason))
    return out


def library_twin(rules: Rules, collective: str, rule: str) -> str | None:
    """The libcollkit algorithm with the message schedule of a library:NAME rule's
    algorithm: the name MPICH's NAME maps onto (backends/mpich.py, checked message by
    message: docs/algorithms.md, "Name parity"), where libcollkit has it; None for
    another library's rules or a NAME without a libcollkit twin."""
    from collkit.backends import mpich
    from collkit.mpis.identity import kind_of
    if not rule.startswith(LIBRARY_ALGORITHM) or kind_of(rules.mpi_library or "")[1] != "mpich":
        return None
    name = mpich.canonical(collective, rule[len(LIBRARY_ALGORITHM):])
    return name if any(a.collective == collective and a.name == name for a in registry.load()) else None


def as_twins(rules: Rules | None, classes, choices: list[Choice]) -> list[Choice]:
    """choices with each library:NAME that has a libcollkit twin (library_twin) run as
    that twin, the preload's fallbacks applying to it as to any rule's algorithm: for
    tools that run the schedule themselves (replay), not through the library."""
    twins = {i: t for i, ch in enumerate(choices)
             if rules is not None and (t := library_twin(rules, classes[i].collective, ch.rule))}
    if not twins:
        return choices
    reasons = dict(zip(twins, rules_tool.fallbacks([_facts(t, classes[i], rules) for i, t in twins.items()])))
    return [Choice(runs=LIBRARY if reasons[i] else twins[i], rule=ch.rule, fallback=reasons[i]) if i in twins
            else ch for i, ch in enumerate(choices)]


def choose(rules: Rules | None, c: CallClass) -> Choice:
    """What the preload runs for class c under rules (None: pass-through)."""
    return choose_all(rules, [c])[0]
