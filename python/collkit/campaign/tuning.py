"""Tuning files measured in place: `[backends] mpi = ["default", "tuned:FILE"]`.

A tuning file is one a library reads to choose its algorithms itself: Open MPI's
classic coll/tuned rules file (`coll_tuned_dynamic_rules_filename`), MPICH's JSON
selection file (`MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE`), Intel MPI's
I_MPI_ADJUST_<COLL> settings (backends/impi_adjust.py: the launch sets them) or Intel
MPI's own JSON tree (backends/impi_tree.py: I_MPI_TUNING=FILE). Which library a file is
for is told by its content, never its name: rows of integers are an Open MPI rules
file, a JSON object whose keys are `collective=...` an MPICH one, a JSON object whose
keys are `coll=...` Intel MPI's tree, lines that set I_MPI_ADJUST_<COLL> an Intel MPI one,
anything else is refused. A file is measured only under the library it is for; the spec's other
libraries get no point for it (docs/tuning-files.md).

The file is read once, when the spec is loaded; the campaign keeps that copy
(DIR/tuning/NAME, written by store.py) and its sha256, and the launch reads the
copy, so a campaign stays what it measured if the original is edited later.

Both checks here are stricter than the libraries: Open MPI's release builds ignore a
malformed rules file without a word (its diagnostics are compiled out) and fall back
to their fixed rules, which a measurement would silently report as "tuned".

`collkit trial --rules FILE` reads a file with the same checks (load; is_library_file
tells it from a collkit rules file) and runs the program under the same environment
(program/trial_choice.py)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from collkit.backends import impi_adjust, impi_tree, mpich_selection, ompi_rules
from collkit.backends.families import for_format
from collkit.common.errors import UserError

PREFIX = "tuned:"
DIRECTORY = "tuning"     # inside the campaign directory
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
MAX_BYTES = 16 << 20     # far above any real rules file; a larger file is a mistake

_FIX_FORMAT = ("write an Open MPI rules file (rows of integers: collectives, then per collective its id "
               "and rules), an MPICH JSON selection file ({\"collective=allreduce\": ...}), Intel MPI "
               "settings (I_MPI_ADJUST_ALLREDUCE=8:0-4095;2:4096-2147483647) or Intel MPI's JSON tree "
               "({\"coll=Allreduce\": {\"ppn=-1\": ...}})")


@dataclass(frozen=True)
class TuningFile:
    name: str                 # basename: points are recorded as algorithm "tuned:<name>"
    source: str               # the path the spec named, resolved
    library: str              # "openmpi" | "mpich" | "impi" | "impi-json" (the format, backends/families.for_format)
    sha256: str
    collectives: tuple[str, ...]   # what the file has rules for (the library's names)
    data: bytes = field(repr=False, compare=False)
    # settings the library needs beside the file, from FILE.provenance.json's
    # "environment" where `collkit tune` wrote one (MPICH: the collectives the file
    # takes from the ch4 device); empty for a file without a sidecar
    companion: tuple[tuple[str, str], ...] = ()

    @property
    def algorithm(self) -> str:
        return PREFIX + self.name

    def describe(self) -> dict:
        return {"name": self.name, "source": self.source, "library": self.library, "sha256": self.sha256,
                "copy": f"{DIRECTORY}/{self.name}", "collectives": list(self.collectives),
                "companion": dict(self.companion)}


rules = ompi_rules.rules   # the parsed rules of an Open MPI file (read() checked it)


def is_tuned(selection: str) -> bool:
    return selection.startswith(PREFIX)


def read(text_path: str, spec_dir: Path) -> TuningFile:
    """The file a `tuned:FILE` selection names (FILE relative to the spec's folder)."""
    raw = text_path[len(PREFIX):]
    if not raw:
        raise UserError(f"backends.mpi '{text_path}' names no file; write \"tuned:PATH\" "
                        "(relative to the spec or absolute)")
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = spec_dir / path
    path = path.resolve()
    if not _NAME.fullmatch(path.name):
        raise UserError(f"backends.mpi '{text_path}': the file name '{path.name}' becomes the algorithm "
                        "label; rename it to letters, digits, '.', '_', '+' or '-'")
    return load(path, f"backends.mpi '{text_path}'", "give the path relative to the spec file or absolute")


def load(path: Path, label: str, fix: str) -> TuningFile:
    """Read and check the tuning file at `path` (resolved); `label` names it as
    the user did and `fix` says how to give it, for the one-line errors."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise UserError(f"{path}: {path.stat().st_size} bytes is not a tuning file (above {MAX_BYTES} B)")
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{label}: cannot read {path}: {exc.strerror}; {fix}") from None
    where = str(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{where}: not a text file; {_FIX_FORMAT}") from None
    library, covered = _detect(text, where)
    return TuningFile(name=path.name, source=str(path), library=library,
                      sha256=hashlib.sha256(data).hexdigest(), collectives=covered, data=data,
                      companion=companion(path, library))


SIDECAR = ".provenance.json"                 # tune/writers/sidecar.py: FILE + SIDECAR
_COMPANION_VALUE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def companion(path: Path, library: str) -> tuple[tuple[str, str], ...]:
    """The "environment" of the file's provenance sidecar, checked: only the
    library's own variables, plain values (they reach the launch environment)."""
    side = path.with_name(path.name + SIDECAR)
    if not side.is_file():
        return ()
    try:
        env = json.loads(side.read_text(encoding="utf-8")).get("environment", {})
    except (OSError, ValueError, AttributeError) as exc:
        raise UserError(f"{side}: not the provenance JSON `collkit tune` writes ({exc}); "
                        "remove it or write the tuning file again") from None
    if not isinstance(env, dict):
        raise UserError(f"{side}: \"environment\" is not an object of variables; write the tuning file again")
    for key, value in env.items():
        if not for_format(library).own_variables.fullmatch(str(key)) or not isinstance(value, str) \
                or not _COMPANION_VALUE.fullmatch(value):
            raise UserError(f"{side}: environment entry {key!r}: {value!r} is not a {library} setting "
                            "collkit applies (a library variable with a plain value); correct or remove it")
    return tuple(sorted(env.items()))


def is_library_file(text: str) -> bool:
    """Whether `text` claims to be a library's tuning file (a JSON object, rows of
    integers only, or I_MPI_ADJUST_ settings) rather than something else, e.g. a
    collkit rules file, whose rows start with a collective's name; read() then
    checks the claim."""
    stripped = text.strip()
    return stripped.startswith("{") or bool(ompi_rules.tokens(text)) or impi_adjust.is_adjust_file(text)


def _detect(text: str, where: str) -> tuple[str, tuple[str, ...]]:
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(stripped)
        except ValueError as exc:
            # MPICH would silently load an empty tree from it and assert on the first collective.
            raise UserError(f"{where}: not valid JSON ({exc}); an MPICH selection file or an Intel MPI tree must "
                            "parse (Intel MPI ignores one that does not without a word)") from None
        if impi_tree.is_tree(doc):
            # Intel MPI ignores a tree it cannot read without a word: check it all here
            return impi_tree.FORMAT, impi_tree.read(stripped, where).collectives()
        covered = mpich_selection.structure(doc, where)
        if covered is None:
            raise UserError(f"{where}: a JSON file that is neither an object of 'collective=NAME' keys (MPICH) "
                            f"nor of 'coll=NAME' keys (Intel MPI's tree); {_FIX_FORMAT}")
        return "mpich", covered
    if impi_adjust.is_adjust_file(text):
        return impi_adjust.FORMAT, impi_adjust.collectives(impi_adjust.read(text, where))
    tokens = ompi_rules.tokens(text)
    if tokens is None:
        if "rule-file-version" in text:
            raise UserError(f"{where}: rules-file versions above 1 are read only by Open MPI >= 4.1.8 and 5.0.7 "
                            "(older ones fall back to their fixed rules); write the version 1 format")
        raise UserError(f"{where}: not an Open MPI rules file, an MPICH JSON selection file or Intel MPI "
                        "I_MPI_ADJUST settings; "
                        f"{_FIX_FORMAT}")
    if not tokens:
        raise UserError(f"{where}: the file holds no rules; {_FIX_FORMAT}")
    return "openmpi", ompi_rules.structure(tokens, where)


def resolve(selections: tuple[str, ...], spec_dir: Path) -> tuple[TuningFile, ...]:
    """Every tuned:FILE of a backends.mpi list, read and checked; two files of one
    basename would share a label and are refused."""
    files: list[TuningFile] = []
    for sel in selections:
        if not is_tuned(sel):
            continue
        tf = read(sel, spec_dir)
        for other in files:
            if other.name == tf.name and other.source != tf.source:
                raise UserError(f"backends.mpi names two tuning files called {tf.name} ({other.source} and "
                                f"{tf.source}); both would be recorded as '{tf.algorithm}': rename one")
        if all(other.source != tf.source for other in files):
            files.append(tf)
    return tuple(files)


def write_copies(files: tuple[TuningFile, ...], campaign_dir: Path) -> None:
    """DIR/tuning/NAME: the bytes the spec was loaded with (the launch reads these)."""
    if not files:
        return
    folder = campaign_dir / DIRECTORY
    folder.mkdir(exist_ok=True)
    for tf in files:
        # Byte for byte (the recorded sha256 is of these bytes), never half-written.
        tmp = folder / f".{tf.name}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(tf.data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, folder / tf.name)


def copy_path(tf: TuningFile, campaign_dir: Path) -> Path:
    return campaign_dir.resolve() / DIRECTORY / tf.name


__all__ = ["TuningFile", "PREFIX", "is_tuned", "is_library_file", "read", "load", "resolve", "rules",
           "write_copies", "copy_path", "OMPI_COLLECTIVE_IDS"]
