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


# The files that take longest on the 2-core reference machine (make test's
# "slowest" list): pytest-xdist (--dist loadfile) hands files to its workers in
# collection order, so these go first and no long file starts last, with the
# other worker idle until it ends. Only the order changes; a file missing here
# just keeps its place.
SLOW_FILES = ("test_application_loop.py", "test_program_watchdog.py", "test_slurm.py", "test_profile.py",
              "test_report_browser.py", "test_faults.py", "test_new.py", "test_conditions.py", "test_autotune.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FILES)))    # stable: order within a file kept
