"""Running a program collkit asks something of (a library's query tool, the
MPI probe): its standard output, or one line saying why not."""

from __future__ import annotations

import subprocess

from collkit.common.errors import UserError


def run_tool(argv: list[str], env: dict[str, str], timeout: float = 60.0) -> str:
    """Run a library's query program; its stdout, or UserError with one line."""
    prog = argv[0]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise UserError(f"{prog} did not finish within {timeout:g} s") from None
    except OSError as exc:
        raise UserError(f"cannot run {prog}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        last = lines[-1] if lines else "no output"
        raise UserError(f"{prog} failed (exit status {proc.returncode}): {last}")
    return proc.stdout
