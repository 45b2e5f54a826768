"""Proof that a library really reads a tuning file, beyond timings.

The correctness matrix through the library's own collectives (ck_matrix_library:
tests/matrix.c calling MPI_* instead of libcollkit) runs twice at one rank count:

* with the file loaded (the library's `MPIBackend.proof_env`, backends/protocol.py):
  every case must pass; for MPICH with MPIR_CVAR_COLLECTIVE_FALLBACK=error and
  MPIR_CVAR_DEVICE_COLLECTIVES=none, so the MPIR-level tree of the file is what selects,
  and an algorithm it names that cannot run the call is an error rather than a silent
  substitute;
* with a deliberately broken copy (`MPIBackend.broken_copy`): it must fail. Open MPI:
  every algorithm id set to 99, which its parser accepts and its calls then reject
  (release builds report nothing about a malformed file, so a run that still passed
  would mean the file was never consulted). MPICH: one chosen algorithm renamed to a
  name MPICH does not know, which its JSON loader refuses. Intel MPI: every preset id
  set to 999, which MPI_Init reports ("Incorrect algorithm: ALLREDUCE=999, will be
  ignored") before running its own choice and exiting 0: there the backend's
  `refusal_sign` in the output is the failure, and the same sign in the run with the
  file fails the proof too (the library did not take what the file says).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from collkit import backends
from collkit.library import registry
from collkit.mpis import known


@dataclass(frozen=True)
class Proof:
    ok: bool
    lines: tuple[str, ...]


def _labels() -> list[str]:
    """One constraint-free algorithm per collective: the matrix's label (it expects no refusal)."""
    out: dict[str, str] = {}
    for a in registry.load():
        if a.collective not in out and a.constraints.describe() == "-":
            out[a.collective] = a.name
    return [f"{c}/{n}" for c, n in out.items()]


def _matrix(backend: backends.MPIBackend, path: Path, ranks: int, timeout: float,
            mpi: str | None) -> tuple[int, bool, str]:
    """(exit status, whether the output shows the library refusing the file, the telling line)."""
    # The MPI the file was tuned for (openmpi5 beside openmpi: the same format, other libraries)
    target = known.find(mpi) if mpi else known.find_family(backend.family)
    mpi = target.install()
    prog = target.part("matrix_library")
    args = [x for lab in _labels() for x in ("--algorithm", lab)] + ["--level", "quick", "--no-invalid"]
    env = mpi.environment()
    env.update(backend.proof_env(path, ranks))
    try:
        proc = subprocess.run(mpi.launch(ranks, prog, args), env=env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return 124, False, "timed out"
    text = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip().strip("-")]
    refused = bool(backend.refusal_sign) and any(backend.refusal_sign in ln for ln in text)
    if proc.returncode == 0 and not refused:
        summary = next((ln for ln in reversed(text) if "passed" in ln), "no summary")
    else:
        signs = tuple(s for s in (backend.refusal_sign, "Abort", "Assertion", "FAIL", "error", "signal")
                      if s)    # the most telling first
        summary = next((ln for s in signs for ln in text if s in ln), text[-1] if text else "no output")
    return proc.returncode, refused, summary


def check(fmt: str, path: Path, ranks: int, timeout: float = 600.0, mpi: str | None = None) -> Proof:
    """Run the matrix with the file of format `fmt` at `path`, then with a broken copy,
    under the known MPI `mpi` (default: the one of the format's family)."""
    backend = backends.for_format(fmt)
    rc, refused, summary = _matrix(backend, path, ranks, timeout, mpi)
    read_ok = rc == 0 and not refused
    lines = [f"{mpi or fmt} with {path.name} at {ranks} ranks: correctness matrix (every collective) "
             f"{'passes' if read_ok else f'FAILS (exit {rc})'}: {summary}"]
    broken = path.with_name(path.name + ".broken")
    broken.write_text(backend.broken_copy(path.read_text()))
    try:
        rc2, refused2, summary2 = _matrix(backend, broken, ranks, timeout, mpi)
    finally:
        broken.unlink(missing_ok=True)
    failed = rc2 != 0 or refused2
    lines.append(f"{mpi or fmt} with a broken copy ({backend.broken_how}): "
                 f"{'fails as it must' if failed else 'PASSES: the file is not consulted'} "
                 f"(exit {rc2}: {summary2[:120]})")
    return Proof(read_ok and failed, tuple(lines))
