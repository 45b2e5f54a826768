"""The dependency markers (needs.py): a missing dependency skips a test, saying
what is missing and how to install it, and under `make test`
(COLLKIT_TESTS_REQUIRE_ALL=1, exported by scripts/test.sh) fails it instead:
an error at its setup, before its fixtures start. Shown on a real pytest run of a test that
needs tmux, with a PATH where there is none."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import needs

HERE = Path(__file__).parent
NEEDS_TMUX = '''
import pytest
import needs


@pytest.fixture
def started():
    raise RuntimeError("the fixture started")


@needs.tmux
def test_in_a_terminal(started):
    pass
'''


def _pytest_without_tmux(tmp_path: Path, require_all: bool) -> subprocess.CompletedProcess:
    """pytest on a test that needs tmux, with tests/python's conftest, and a PATH
    holding apt-get alone (so that setup.sh would install tmux here as root)."""
    (tmp_path / "test_terminal.py").write_text(NEEDS_TMUX)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    apt = shutil.which("apt-get")
    if apt and not (bin_dir / "apt-get").exists():
        (bin_dir / "apt-get").symlink_to(apt)
    env = dict(os.environ, PATH=str(bin_dir), PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    env.pop("COLLKIT_TESTS_REQUIRE_ALL", None)
    if require_all:
        env["COLLKIT_TESTS_REQUIRE_ALL"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "conftest", "-p", "no:cacheprovider",
                           "test_terminal.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_a_missing_dependency_skips_naming_it_and_the_setup_command(tmp_path):
    res = _pytest_without_tmux(tmp_path, require_all=False)
    assert res.returncode == 0 and "1 skipped" in res.stdout, res.stdout + res.stderr
    assert "tmux is missing: no `tmux` on PATH; install it with make setup-tests" in res.stdout, res.stdout


def test_under_make_test_a_missing_dependency_fails_naming_it(tmp_path):
    """What scripts/test.sh's variable does: the same run fails, naming tmux and
    the setup command, at the test's setup (pytest says ERROR), before its
    fixture starts; where setup.sh cannot install Debian packages (not root, no
    apt-get) the test still skips."""
    res = _pytest_without_tmux(tmp_path, require_all=True)
    out = res.stdout + res.stderr
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        assert res.returncode == 0 and "1 skipped" in res.stdout, out
        return
    assert res.returncode == 1 and "1 error" in res.stdout and "ERROR at setup of test_in_a_terminal" in out, out
    assert "tmux is missing: no `tmux` on PATH; install it with make setup-tests" in res.stdout, out
    assert "make test requires it: COLLKIT_TESTS_REQUIRE_ALL=1" in res.stdout, out
    assert "the fixture started" not in out


def test_every_marker_names_a_dependency_and_unknown_names_are_refused():
    for name in needs.DEPENDENCIES:
        assert needs.mark(name).args == (name,)
    assert needs.fortran("mpich").args == ("mpich", "fortran-mpich")
    with pytest.raises(KeyError, match="no dependency named 'tmuxx'"):
        needs.mark("tmuxx")


def test_what_setup_does_not_install_is_never_required(monkeypatch):
    monkeypatch.setattr(needs, "REQUIRE_ALL", True)
    assert not needs.required("nccl")
    assert needs.required("mpich")
    monkeypatch.setattr(needs, "REQUIRE_ALL", False)
    assert not needs.required("mpich")
