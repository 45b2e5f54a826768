"""`collkit build` is how a fresh checkout or installation gets its first
build, so the command line must come up before any build exists: no module
the CLI imports may read the registry (the build's algorithm list) at import
time. A profile module that did broke `scripts/setup.sh` on a fresh checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_line_comes_up_with_no_build_at_all(tmp_path):
    env = dict(os.environ, COLLKIT_CACHE=str(tmp_path / "empty-cache"), COLLKIT_NO_NATIVE="1")
    # Outside the checkout, so neither its build/ nor its cache is found.
    # r.load read at import is the bug this test was written for; registry_file
    # raising as a missing build does catches every other read of the build's
    # registry (cli.py's help text asks for it and falls back), such as the
    # collective facts the profile modules take from it.
    code = ("import sys; sys.path.insert(0, %r); import collkit.library.registry as r; "
            "from collkit.common.errors import UserError; "
            "r.load = lambda *a, **k: (_ for _ in ()).throw(SystemExit('registry read at import'));"
            "r.registry_file = lambda: (_ for _ in ()).throw(UserError('no build'));"
            "from collkit import cli; cli.build_parser(); "
            "import collkit.program.rank_files, collkit.program.rules_choice, collkit.program.replay_input; "
            "print('ok')") % str(ROOT / "python")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
