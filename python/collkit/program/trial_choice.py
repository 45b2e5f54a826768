"""What `collkit trial` runs as its "choice" variant, decided from its options.

Four kinds, all run under libcollkit-preload (which always profiles):

* forced algorithms (`--algorithm C=NAME`, as `collkit preload` checks them): the
  preload runs them;
* a collkit rules file (docs/preload.md): the preload reads it;
* a library's own tuning file (an Open MPI rules file, an MPICH JSON selection
  file or Intel MPI I_MPI_ADJUST settings, told apart by content in campaign/tuning.py): the preload only profiles
  and the library reads the file, with the environment a campaign's
  `tuned:FILE` points run under (the family's backend, `MPIBackend.tuned_env`,
  backends/protocol.py), so that the trial measures what the campaign measured;
* the autotuner (`--autotune`, docs/preload.md "Autotune"): every choice run
  explores and decides on its own and writes its rules to --autotune-out (each
  run overwrites them: the file holds the last run's);
* the library's own autotuner (`--library-autotuner`: Intel MPI's), the preload
  only profiling; every run dumps the library's tuning state, so the trial can
  tell whether the autotuner did anything (trial.py).

Which of the two a --rules file is follows from its content: a tuning file holds
only integers, a JSON object or I_MPI_ADJUST_ settings, a collkit rules file starts
its rows with a collective's name."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from collkit.apply.preload import Autotune, parse_algorithm
from collkit.campaign import tuning
from collkit.common.errors import UserError
from collkit.mpis import known
from collkit.program import rules_choice

ALGORITHMS = "algorithms"
COLLKIT_RULES = "collkit-rules"
TUNING_FILE = "tuning-file"
AUTOTUNE = "autotune"
LIBRARY_AUTOTUNER = "library-autotuner"


@dataclass(frozen=True)
class Choice:
    kind: str                                   # ALGORITHMS | COLLKIT_RULES | TUNING_FILE | AUTOTUNE |
                                                # LIBRARY_AUTOTUNER
    describe: str                               # one line for the table and the JSON
    algorithms: tuple[tuple[str, str], ...] = ()
    rules: Path | None = None                   # a collkit rules file: the preload reads it
    tuning_file: Path | None = None             # a library's file: the library reads it
    extra_env: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"kind": self.kind, "describe": self.describe, "algorithms": [list(a) for a in self.algorithms],
                "rules": str(self.rules) if self.rules else None,
                "tuning_file": str(self.tuning_file) if self.tuning_file else None,
                "environment": dict(self.extra_env)}


def forced_rules_text(algorithms: tuple[tuple[str, str], ...]) -> str:
    """The collkit rules equivalent to forcing these algorithms (every size, every
    communicator), for `predict`, which reads rules."""
    return "".join(f"{c} * * {a}\n" for c, a in algorithms)


def from_options(mpi: str, rules: str | None, algorithms: list[str] | None,
                 autotune: Autotune | None = None, library_autotuner: bool = False) -> Choice:
    if library_autotuner:
        if autotune is not None or rules or algorithms:
            raise UserError("--library-autotuner is the choice by itself: leave out --rules, --algorithm "
                            "and --autotune")
        from collkit import backends
        backend = backends.backend_for(known.find(mpi).family)
        backend.autotuner_env(Path("probe"))    # one line where the library has none
        return Choice(kind=LIBRARY_AUTOTUNER, describe=backend.autotuner)
    if autotune is not None:      # apply/preload.autotune_from refused --rules and --algorithm beside it
        return Choice(kind=AUTOTUNE, describe=f"autotune (budget {autotune.budget_pct:g} %, rules to "
                                              f"{autotune.out.name})", extra_env=autotune.environment())
    if bool(rules) == bool(algorithms):
        raise UserError("give the choice to try: --rules FILE, --algorithm C=NAME, --autotune or "
                        "--library-autotuner (one of them)")
    if algorithms:
        forced = tuple(parse_algorithm(t) for t in algorithms)
        colls = [c for c, _ in forced]
        twice = sorted({c for c in colls if colls.count(c) > 1})
        if twice:
            raise UserError(f"--algorithm names {twice[0]} twice; force one algorithm per collective")
        return Choice(kind=ALGORITHMS, describe="forced " + ", ".join(f"{c}={a}" for c, a in forced),
                      algorithms=forced)
    path = Path(rules).expanduser().resolve()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not a text file"
        raise UserError(f"--rules {rules}: cannot read it ({why}); give a collkit rules file "
                        "(docs/preload.md) or the MPI's own tuning file") from None
    if tuning.is_library_file(text):
        return _tuning_choice(mpi, path, rules)
    return _rules_choice(mpi, path, rules, text)


def _rules_choice(mpi: str, path: Path, label: str, text: str) -> Choice:
    # The one reader of collkit rules (program/rules_choice.py): the preload's
    # checks, an unknown algorithm and rules tuned over another MPI refused
    # before any run.
    rules = rules_choice.load_rules(label, mpi)
    if not rules.lines:
        raise UserError(f"--rules {label}: the file holds no rules, so both variants would be the same "
                        "program; write rules (docs/preload.md) or `collkit tune --format collkit`")
    return Choice(kind=COLLKIT_RULES, describe=f"collkit rules {path.name}", rules=path)


def _tuning_choice(mpi: str, path: Path, label: str) -> Choice:
    from collkit import backends
    tf = tuning.load(path, f"--rules {label}", "give a readable file")
    family = known.find(mpi).family
    if not backends.backend_for(family).reads(tf.library):
        raise UserError(f"--rules {label}: a tuning file for {tf.library}, but the program runs on {mpi} "
                        f"({family}); give --mpi NAME of a {tf.library} MPI (`collkit mpis`) or a file "
                        f"for {family}")
    return Choice(kind=TUNING_FILE, describe=f"{tf.library} tuning file {path.name}", tuning_file=path,
                  extra_env=_library_env(mpi, tf))


def _library_env(mpi: str, tf: tuning.TuningFile) -> dict[str, str]:
    """The variables that make the library read the file, as for a campaign's
    tuned:FILE point (they depend on what the library offers: its algorithm
    parameters, the components ranked above coll/tuned)."""
    from collkit import backends
    install = known.find_install(mpi)
    backend = backends.backend_for(install)
    offer = backend.discover(install)
    # which collectives the program calls is not known here: only the checks that
    # hold for every collective (an Open MPI id this library lacks fails the call,
    # not the file's parse)
    backend.check_tuning_file(tf, offer, ())
    # the program's process count is its launcher's: a file with lines per count
    # (Intel MPI's) is refused in one line there
    return backend.tuned_env(offer, tf.source, dict(tf.companion), None)
