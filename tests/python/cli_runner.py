"""The one way the tests run the collkit command line, and the one check of a
user error's promise (one line, exit status 2, no traceback).

    collkit(*args, cwd=, env=, timeout=, stdin=)   as a user would: `python -m collkit`
                                                   in a process of its own
    start(*args, cwd=, env=, **popen)              the same command left running, for
                                                   tests that interrupt or kill it
    in_process(capsys, *args)                      main() in the test's process: fast,
                                                   for what needs no process of its own
    one_line_error(result, *words)                 the user-error promise (exit 2, one line
                                                   `collkit: error: ...`, no traceback)
    failed_tails(campaign)                         the failed points' stderr tails, for an
                                                   assertion's message

Each returns or takes a subprocess.CompletedProcess (text), so a check reads
the same whichever way the command ran. `env` adds to the test's environment
(a value of None takes the variable out).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMMAND = (sys.executable, "-m", "collkit")
# Guards against a hang only, never a verdict on speed: a loaded machine may take
# minutes where an idle one takes seconds, and the tests must pass on both.
HANG_GUARD_S = 900


def _env(env: dict[str, str | None] | None) -> dict[str, str]:
    full = dict(os.environ, **(env or {}))
    return {k: v for k, v in full.items() if v is not None}


def collkit(*args: str | os.PathLike, cwd: Path | str = REPO, env: dict[str, str | None] | None = None,
            timeout: float = HANG_GUARD_S, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """Run `collkit ARGS` to the end. stdin is empty unless given (input text, or a
    file): no command under test may wait on the terminal of whoever runs pytest."""
    feed = {"input": stdin} if isinstance(stdin, str) else {"stdin": stdin}
    return subprocess.run([*COMMAND, *map(str, args)], cwd=cwd, env=_env(env), capture_output=True, text=True,
                          timeout=timeout, **feed)


def failed_tails(campaign: Path) -> str:
    """What the MPI launcher and collkit-bench printed for each failed point of a
    campaign (its records' stderr_tail), so that a failed run's assertion says
    why the launch failed, not only that it did (collkit's own line shows
    collkit-bench's message, never the launcher's banner)."""
    import json
    path = Path(campaign) / "records.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    tails = [f"--- {r.get('label', '?')}: {r.get('reason', '')}\n{r.get('stderr_tail', '')}"
             for r in map(json.loads, lines) if r.get("status") == "failed"]
    return "\n".join(["", "stderr tails of the failed points:", *tails]) if tails else ""


def start(*args: str | os.PathLike, cwd: Path | str = REPO, env: dict[str, str | None] | None = None,
          **popen) -> subprocess.Popen:
    """Start `collkit ARGS` and return at once (popen: stdout, stderr,
    start_new_session, ... as subprocess.Popen takes them)."""
    popen.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.Popen([*COMMAND, *map(str, args)], cwd=cwd, env=_env(env), **popen)


def in_process(capsys, *args: str | os.PathLike) -> subprocess.CompletedProcess:
    """collkit.cli.main(ARGS) here, its output taken from capsys; an argparse exit
    (--help) gives its status as a process would. Programs it launches still run
    as programs."""
    from collkit.cli import main
    argv = [str(a) for a in args]
    capsys.readouterr()     # what the test printed before is not the command's
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["collkit", *argv], code, out.out, out.err)


def one_line_error(result: subprocess.CompletedProcess, *words: str, progress: str | None = None,
                   shared: bool = False, prefix: str = "collkit: error: ") -> str:
    """Assert the promise to a user who errs: exit status 2, one line on standard
    error that starts with `prefix` and holds every one of `words`, no traceback
    anywhere; return the line. Standard error is that line alone, unless lines
    before it are allowed: with `progress`, lines that start so (collkit build's
    progress); with `shared`, lines that are not collkit's (standard error
    shared with the user's program under profile and trial, whose launcher may
    note its killed ranks)."""
    said = f"exit {result.returncode}\nstdout: {result.stdout[-2000:]}\nstderr: {result.stderr[-2000:]}"
    assert result.returncode == 2, said
    assert "Traceback" not in result.stderr + result.stdout, said
    lines = result.stderr.splitlines()
    if shared:
        assert [ln for ln in lines if ln.startswith("collkit")] == lines[-1:], said
    elif progress is not None:
        assert lines and all(ln.startswith(progress) for ln in lines[:-1]), said
    else:
        assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n"), said
    line = lines[-1]
    assert line.startswith(prefix), f"{line!r} does not start with {prefix!r}"
    for w in words:
        assert w in line, f"{w!r} not in {line!r}"
    return line
