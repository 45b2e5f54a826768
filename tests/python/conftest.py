import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def collkit():
    """Run the installed CLI as a user would, returning the CompletedProcess."""

    def run(*args, env=None, timeout=900):
        full_env = dict(os.environ)
        full_env.update(env or {})
        return subprocess.run([sys.executable, "-m", "collkit", *args], capture_output=True,
                              text=True, env=full_env, timeout=timeout, cwd=REPO)

    return run
