"""scripts/test_steps.sh, the steps `make test` runs through: a step that tests
nothing fails the run (issue #52: a step that selected no test reported ok)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PASSING = "tests/python/test_k_of_n.py::test_false_failure_rate_by_hand"


def _steps(tmp_path: Path, *steps: str) -> subprocess.CompletedProcess:
    """Run `step ...` lines and `finish` through scripts/test_steps.sh, as scripts/test.sh does."""
    results = tmp_path / "results"
    results.mkdir()
    script = "\n".join(["set -uo pipefail", "source scripts/test_steps.sh", *steps, "finish"])
    env = os.environ | {"RESULTS": str(results)}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_a_pytest_step_that_selects_nothing_fails_the_run(tmp_path):
    r = _steps(tmp_path,
               f'step "broken" pytest_step broken {PASSING} -m no_such_marker -p no:cacheprovider',
               f'step "fine" pytest_step fine {PASSING} -p no:cacheprovider')
    assert r.returncode != 0, r.stdout + r.stderr
    assert "=== broken: FAILED" in r.stdout and "=== fine: ok" in r.stdout, r.stdout
    assert "this step selected no test" in r.stdout and "1 passed, 1 failed" in r.stdout, r.stdout


def test_steps_that_ran_and_passed_pass_the_run(tmp_path):
    r = _steps(tmp_path, f'step "fine" pytest_step fine {PASSING} -p no:cacheprovider')
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed, 0 failed" in r.stdout and (tmp_path / "results" / "fine.xml").exists()


def test_a_ctest_step_with_no_entry_fails_the_run(tmp_path):
    tree = tmp_path / "tree"          # a configured tree whose selection is empty
    tree.mkdir()
    (tree / "CTestTestfile.cmake").write_text('add_test(one "true")\n')
    rel = os.path.relpath(tree, REPO / "build")
    r = _steps(tmp_path, f'step "none" ctest_step {rel} -R no_such_entry', f'step "one" ctest_step {rel} -R one')
    assert r.returncode != 0, r.stdout + r.stderr
    assert "=== none: FAILED" in r.stdout and "=== one: ok" in r.stdout and "1 passed, 1 failed" in r.stdout, r.stdout
    assert "one" in (tmp_path / "results" / "ctest-tree.xml").read_text()
