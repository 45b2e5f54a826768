"""collkit preload and libcollkit-preload.so (docs/preload.md): the command's
launch line and its one-line errors, and the shim under a real MPI: forced
algorithms and a rules file shown in the report, and bad settings stopping the
program at MPI_Init with one line instead of hanging."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

import needs
from cli_runner import one_line_error
from collkit.apply import preload
from collkit.common.errors import UserError
from collkit.mpis.known import find_install as find

REPO = Path(__file__).resolve().parents[2]


def _built(mpi: str, part: str) -> Path:
    """The part of the known MPI's build (a path that does not exist where none is)."""
    from ck_trace_build import built
    return built(mpi, part) or REPO / "build" / mpi / "not-built"


MPIS = needs.each_mpi()     # the preload and ck_matrix_library are parts of each MPI's build


def _ns(**kw) -> argparse.Namespace:
    base = dict(mpi="openmpi", algorithm=None, rules=None, report=False, report_file=None,
                print_path=False, launch=[])
    base.update(kw)
    return argparse.Namespace(**base)


def test_launch_line_per_mpi(tmp_path):
    lib = tmp_path / "libcollkit-preload.so"
    s = preload.PreloadSettings(mpi="openmpi", library=lib, algorithms=(("allreduce", "ring"),),
                                report="1")
    argv = preload.launch_command(s, ["mpirun", "-n", "4", "./app"])
    assert argv == ["mpirun", "-x", f"LD_PRELOAD={lib}", "-x", "COLLKIT_ALGORITHMS=allreduce=ring",
                    "-x", "COLLKIT_REPORT=1", "-n", "4", "./app"]
    s = preload.PreloadSettings(mpi="mpich", library=lib, rules=tmp_path / "r")
    argv = preload.launch_command(s, ["mpiexec", "-n", "2", "./app"])
    assert argv == ["mpiexec", "-genv", "LD_PRELOAD", str(lib), "-genv", "COLLKIT_RULES",
                    str(tmp_path / "r"), "-n", "2", "./app"]


@pytest.mark.parametrize("text, words", [
    ("allreduce", "COLLECTIVE=NAME"),
    ("allreduc=ring", "unknown collective"),
    ("allreduce=rign", "did you mean 'ring'"),
])
def test_bad_algorithm_is_a_user_error(text, words):
    with pytest.raises(UserError, match=words):
        preload.parse_algorithm(text)


@needs.openmpi
def test_command_errors_are_one_line(collkit, tmp_path):
    one_line_error(collkit("preload", "--mpi", "openmpi", "--algorithm", "bcast=nosuch", "--", "mpirun", "./x"),
                   "bcast")
    one_line_error(collkit("preload", "--mpi", "openmpi", "--rules", tmp_path / "missing", "--", "mpirun", "./x"),
                   "--rules")
    one_line_error(collkit("preload", "--mpi", "openmpi", "--algorithm", "bcast=linear", "--algorithm", "bcast=chain",
                           "--", "mpirun", "./x"))


@pytest.mark.parametrize("mpi", MPIS)
def test_print_path(collkit, mpi):
    r = collkit("preload", "--mpi", mpi, "--print-path")
    assert r.returncode == 0 and Path(r.stdout.strip()) == _built(mpi, "preload")


def _matrix(collkit, mpi, tmp_path, *options, ranks=2):
    install = find(mpi)
    report = tmp_path / "report.txt"
    cmd = [str(install.mpirun), "-n", str(ranks), *install.flags,
           str(_built(mpi, "matrix_library")),
           "--level", "quick", "--no-invalid", "--collective", "allreduce",
           "--algorithm", "allreduce/recursive_doubling"]
    r = collkit("preload", "--mpi", mpi, *options, "--report-file", str(report), "--", *cmd, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert " 0 failed" in r.stdout
    return report.read_text()


def _calls(report: str, coll: str, alg: str) -> int:
    for line in report.splitlines():
        f = line.split()
        if len(f) == 5 and f[0] == coll and f[1] == alg:
            return int(f[2])
    return 0


@pytest.mark.parametrize("mpi", MPIS)
def test_forced_algorithm_shows_in_report(collkit, mpi, tmp_path):
    report = _matrix(collkit, mpi, tmp_path, "--algorithm", "allreduce=rabenseifner")
    assert _calls(report, "allreduce", "rabenseifner") > 100
    # The matrix's non-commutative cases went to the library, with the reason.
    assert "op-not-commutative" in report


@pytest.mark.parametrize("mpi", MPIS)
def test_rules_file_splits_by_size(collkit, mpi, tmp_path):
    rules = tmp_path / "tuned.rules"
    rules.write_text("# collkit rules v1\n"
                     "allreduce  1-*  0-64    ring   # small vectors\n"
                     "allreduce  *    65-*    library\n")
    report = _matrix(collkit, mpi, tmp_path, "--rules", str(rules))
    assert _calls(report, "allreduce", "ring") > 0
    assert _calls(report, "allreduce", "library") > 0


def _run_shim(mpi: str, env: dict[str, str], ranks: int = 3) -> subprocess.CompletedProcess:
    install = find(mpi)
    lib = _built(mpi, "preload")
    full = {"LD_PRELOAD": str(lib), **env}
    argv = [str(install.mpirun), "-n", str(ranks), *install.flags,
            *preload.env_flags(mpi, full), str(_built(mpi, "matrix_library")),
            "--level", "quick", "--collective", "bcast"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=install.environment())


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("env, words", [
    ({"COLLKIT_ALGORITHMS": "allreduce=nosuch"}, "COLLKIT_ALGORITHMS: unknown allreduce algorithm 'nosuch'"),
    ({"COLLKIT_ALGORITHMS": "allreduz=ring"}, "COLLKIT_ALGORITHMS: unknown collective 'allreduz'"),
    ({"COLLKIT_RULES": "/nonexistent/tuned.rules"}, "COLLKIT_RULES: cannot read /nonexistent/tuned.rules"),
])
def test_bad_settings_stop_at_init(mpi, env, words):
    r = _run_shim(mpi, env)
    assert r.returncode != 0
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("collkit-preload:")]
    assert len(lines) == 1 and words in lines[0], r.stdout + r.stderr
    assert "ranks=" not in r.stdout  # the program never got past MPI_Init


@pytest.mark.parametrize("mpi", MPIS)
def test_bad_rules_line_names_file_and_line(mpi, tmp_path):
    rules = tmp_path / "bad.rules"
    rules.write_text("allreduce * * ring\nbcast 4-2 * linear\n")
    r = _run_shim(mpi, {"COLLKIT_RULES": str(rules)})
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("collkit-preload:")]
    assert r.returncode != 0 and len(lines) == 1 and f"{rules}:2: bad rank range" in lines[0]
