"""What libcollkit-preload runs for one profiled call class under a collkit
rules file: the rule's choice (writers/collkit.py's parse and lookup, the one
Python reading of the format), then the preload's own fallbacks
(preload/fallback.c, ckp_fallback_reason, mirrored here check for check), so a
tool that reasons about a rules file without running the preload (`replay`)
runs what the preload would have run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from collkit.common.errors import UserError, did_you_mean
from collkit.library import registry
from collkit.program.profile_file import CallClass, reduction, rooted
from collkit.tune.writers import collkit as rules_format

LIBRARY = "library"
LIBRARY_ALGORITHM = "library:"      # library:NAME, the library's own algorithm switched per call (MPICH)
CK_MAX_COUNT = 2**31 - 1        # lib/core: per-message counts travel as int


@dataclass(frozen=True)
class Rules:
    path: Path | None                 # None: algorithms forced, not a file (forced())
    lines: tuple[rules_format.Line, ...]
    allow_fp_rank_variant: bool


@dataclass(frozen=True)
class Choice:
    runs: str           # "library" or the libcollkit algorithm that runs the class
    rule: str           # what the rules file chose ("library" when no rule matched)
    fallback: str = ""  # the preload's reason for running the library instead of the rule's choice


def load_rules(path: str | Path, mpi: str | None = None) -> Rules:
    """A collkit rules file, checked like the preload checks it at MPI_Init, and
    refused when tune's header says it was tuned over another MPI than `mpi`:
    one-line UserError naming the file and the line."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not text"
        raise UserError(f"--rules {path}: cannot read it ({why}); give a collkit rules file "
                        "(`collkit tune --format collkit`, format in docs/preload.md)") from None
    try:
        lines = rules_format.parse(text)
    except ValueError as e:
        raise UserError(f"--rules {path}: {e}: not a collkit rules file (format in docs/preload.md)") from None
    tuned_over = rules_format.written_for(text)
    if mpi is not None and tuned_over is not None and tuned_over != mpi:
        raise UserError(f"--rules {path}: tuned over {tuned_over}, not {mpi}; tune on a campaign of {mpi} "
                        f"(`collkit tune CAMPAIGN --format collkit --mpi {mpi}`)")
    learned = rules_format.learned_on(text)
    if mpi is not None and learned is not None and not _same_family(learned, mpi):
        raise UserError(f"--rules {path}: learned by the autotuner on '{learned}', not on {mpi}; autotune again "
                        f"on {mpi} (`collkit preload --mpi {mpi} --autotune`)")
    algorithms = registry.load()
    for ln in lines:
        if ln.choice == LIBRARY or ln.choice.startswith(LIBRARY_ALGORITHM):
            continue        # library:NAME: the preload checks NAME against the MPI it runs on
        names = [a.name for a in algorithms if a.collective == ln.collective]
        if ln.choice not in names:
            raise UserError(f"--rules {path}: unknown {ln.collective} algorithm '{ln.choice}'"
                            f"{did_you_mean(ln.choice, names)}; see `collkit algorithms --collective "
                            f"{ln.collective}`")
    return Rules(path=p, lines=tuple(lines), allow_fp_rank_variant=rules_format.allows_fp_rank_variant(text))


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
    return Rules(path=None, lines=tuple(rules_format.Line(c, (0, None), (0, None), a) for c, a in algorithms),
                 allow_fp_rank_variant=False)


# The preload's fallback reasons (its report's names) in words.
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


def _fallback(alg: registry.Algorithm, c: CallClass, allow_fp: bool) -> str:
    """preload/fallback.c ckp_fallback_reason for a class ("" when the algorithm runs)."""
    if c.comm == "inter":
        return "intercommunicator"
    if rooted(c.collective) and (c.root is None or not 0 <= c.root < c.comm_size):
        return "root"
    if c.bytes == 0 or c.bytes > CK_MAX_COUNT:
        return "count"
    k = alg.constraints
    if reduction(c.collective):
        if c.dtype is None:
            return "datatype"
        if c.op == "user" and k.commutative_op:
            # predefined ops commute; whether a user op does, the profile does not say
            return "op-not-commutative"
        if c.bytes // registry.datatype_size(c.dtype) < k.min_count:
            return "count"
        if alg.traits.fp_rank_variant and registry.datatype(c.dtype).is_float and not allow_fp:
            return "fp-rank-variant"
    elif c.bytes < k.min_count:
        return "count"
    if k.pow2_ranks and c.comm_size & (c.comm_size - 1):
        return "ranks"
    if k.fattree or k.equal_nodes:
        return "constraint"
    return ""


def choose(rules: Rules | None, c: CallClass) -> Choice:
    """What the preload runs for class c under rules (None: pass-through)."""
    if rules is None or c.collective not in rules_format.COLLECTIVES:
        return Choice(runs=LIBRARY, rule=LIBRARY)
    picked = rules_format.lookup(list(rules.lines), c.collective, c.comm_size, c.bytes)
    if picked == LIBRARY:
        return Choice(runs=LIBRARY, rule=LIBRARY)
    if picked.startswith(LIBRARY_ALGORITHM):
        # the library's own algorithm, switched per call (MPICH; docs/preload.md "Autotune"):
        # the library runs it, so tools that reason about the rules count it as the library's
        return Choice(runs=LIBRARY, rule=picked)
    alg = next(a for a in registry.load() if a.collective == c.collective and a.name == picked)
    reason = _fallback(alg, c, rules.allow_fp_rank_variant)
    return Choice(runs=LIBRARY if reason else picked, rule=picked, fallback=reason)
