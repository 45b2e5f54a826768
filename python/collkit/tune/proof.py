"""Proof that a library really reads a tuning file, beyond timings.

The correctness matrix through the library's own collectives (ck_matrix_library:
tests/matrix.c calling MPI_* instead of libcollkit) runs twice at one rank count:

* with the file loaded: every case must pass (for MPICH with
  MPIR_CVAR_COLLECTIVE_FALLBACK=error and MPIR_CVAR_DEVICE_COLLECTIVES=none, so the
  MPIR-level tree of the file is what selects, and an algorithm it names that cannot
  run the call is an error rather than a silent substitute);
* with a deliberately broken copy: it must fail. Open MPI: every algorithm id set to
  99, which its parser accepts and its calls then reject (release builds report
  nothing about a malformed file, so a run that still passed would mean the file was
  never consulted). MPICH: one chosen algorithm renamed to a name MPICH does not
  know, which its JSON loader refuses.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from collkit.common.errors import UserError
from collkit.library import registry
from collkit.mpis import known

BROKEN_ID = "99"


@dataclass(frozen=True)
class Proof:
    ok: bool
    lines: tuple[str, ...]


def environment(fmt: str, path: Path) -> dict[str, str]:
    if fmt == "openmpi":
        return {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(path.resolve())}
    return {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(path.resolve()),
            "MPIR_CVAR_COLLECTIVE_FALLBACK": "error", "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}


def broken_copy(fmt: str, text: str) -> str:
    if fmt == "openmpi":
        out = []
        for line in text.splitlines():
            body, hash_, comment = line.partition("#")
            f = body.split()
            if len(f) == 4:
                f[1] = BROKEN_ID
                line = " ".join(f) + (f" #{comment}" if hash_ else "")
            out.append(line)
        return "\n".join(out) + "\n"
    tree = json.loads(text)
    dumped = json.dumps(tree)
    # the first algorithm leaf: renamed, MPICH must refuse the file
    start = dumped.index('"algorithm=MPIR_') + len('"algorithm=')
    end = dumped.index('"', start)
    return dumped[:start] + "MPIR_Collkit_intra_no_such_algorithm" + dumped[end:] + "\n"


def _labels() -> list[str]:
    """One constraint-free algorithm per collective: the matrix's label (it expects no refusal)."""
    out: dict[str, str] = {}
    for a in registry.load():
        if a.collective not in out and a.constraints.describe() == "-":
            out[a.collective] = a.name
    return [f"{c}/{n}" for c, n in out.items()]


def _matrix(fmt: str, path: Path, ranks: int, timeout: float) -> tuple[int, str]:
    target = known.find_family(fmt)
    mpi = target.install()
    prog = target.part("matrix_library")
    args = [x for lab in _labels() for x in ("--algorithm", lab)] + ["--level", "quick", "--no-invalid"]
    env = mpi.environment()
    env.update(environment(fmt, path))
    try:
        proc = subprocess.run(mpi.launch(ranks, prog, args), env=env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return 124, "timed out"
    text = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip().strip("-")]
    if proc.returncode == 0:
        summary = next((ln for ln in reversed(text) if "passed" in ln), "no summary")
    else:
        signs = ("Abort", "Assertion", "FAIL", "error", "signal")     # the most telling first
        summary = next((ln for s in signs for ln in text if s in ln), text[-1] if text else "no output")
    return proc.returncode, summary


def check(fmt: str, path: Path, ranks: int, timeout: float = 600.0) -> Proof:
    rc, summary = _matrix(fmt, path, ranks, timeout)
    lines = [f"{fmt} with {path.name} at {ranks} ranks: correctness matrix (every collective) "
             f"{'passes' if rc == 0 else f'FAILS (exit {rc})'}: {summary}"]
    broken = path.with_name(path.name + ".broken")
    broken.write_text(broken_copy(fmt, path.read_text()))
    try:
        rc2, summary2 = _matrix(fmt, broken, ranks, timeout)
    finally:
        broken.unlink(missing_ok=True)
    what = "every algorithm id set to 99" if fmt == "openmpi" else "one algorithm renamed to an unknown one"
    lines.append(f"{fmt} with a broken copy ({what}): "
                 f"{'fails as it must' if rc2 != 0 else 'PASSES: the file is not consulted'} "
                 f"(exit {rc2}: {summary2[:120]})")
    return Proof(rc == 0 and rc2 != 0, tuple(lines))
