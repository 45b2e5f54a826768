import pytest

import cli_runner
import needs


def pytest_configure(config):
    config.addinivalue_line("markers", "needs(*names): dependencies of the test (tests/python/needs.py)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before the test's fixtures start (a module's Slurm cluster among them)."""
    for m in item.iter_markers("needs"):
        needs.check(*m.args)


@pytest.fixture
def collkit():
    """Run the CLI as a user would (cli_runner.collkit: in the repository unless cwd= is given)."""
    return cli_runner.collkit
