"""Generated batch scripts under attack: hostile values in every [slurm] and
[mpi.X] key that passes the input checks (quotes, $(...), backticks, ';', '#',
spaces, globs) are written into real scripts by `collkit run --dry-run`, then
each script runs under `bash -x` in a sandbox where srun and mpirun are
stand-ins that record their argv. Only the intended commands may run: the
nodelist printf, the exports, and the launches (one job step per launch, each
in a subshell whose output goes to its launch file), with every hostile value
arriving as one literal argument or environment value. Values the input
checks refuse (control characters, bad variable names) are in test_hostile.py."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import needs
from ck_trace_build import built
from cli_runner import collkit

BENCH = built("openmpi", "bench") or Path("/nonexistent/collkit-bench")

PAYLOADS = {
    "quote": "x'; touch PWNED; echo '",
    "dquote": 'x"; touch PWNED; echo "',
    "subst": "$(touch PWNED)",
    "backtick": "`touch PWNED`",
    "comment": "a # ; touch PWNED",
    "glob": "* ? [a-z]",
    "semicolon": "a;touch PWNED;b",
    "amp": "a && touch PWNED || touch PWNED &",
    "dollar": "${HOME}$PATH",
}

SPEC = """name = "sandbox"
collectives = ["allreduce"]
sizes = ["8B"]
ranks = [2]
mpi = ["openmpi"]
[backends]
mpi = ["default"]
"""

STANDIN = """#!/bin/sh
# records its own name and argv, one argument per line, and the environment
{ echo "ARGV0 $(basename "$0")"; for a in "$@"; do echo "ARG $a"; done; env | sort | sed 's/^/ENV /'; } \
    >> "$SANDBOX_LOG"
"""


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


def _platform(bin_dir: Path, launcher: str, payload: str) -> str:
    p = _toml_str(payload)
    mpirun = bin_dir / "mpirun"
    return (f'name = "hostile"\n[mpi.openmpi]\nmpirun = {_toml_str(str(mpirun))}\nbench = {_toml_str(str(BENCH))}\n'
            f'args = ["--mca", {p}, {p}]\nenv = {{ COLLKIT_HOSTILE = {p}, OTHER_VAR = {p} }}\n'
            f'[slurm]\nlauncher = [{_toml_str(launcher)}, {p}]\npartition = {p}\naccount = {p}\nqos = {p}\n'
            f'time_limit = {p}\nsbatch_flags = [{p}, "--exclusive"]\ntasks_per_node = 2\n'
            f'setup = ["true"]\n')


def _sandbox_bin(tmp: Path) -> Path:
    b = tmp / "bin"
    b.mkdir()
    for name in ("srun", "mpirun"):
        (b / name).write_text(STANDIN)
        (b / name).chmod(0o755)
    # the few programs a script and the stand-ins themselves may use, nothing else;
    # ompi_info answers collkit's planning, outside the sandbox
    for tool in ("sh", "env", "sort", "sed", "basename", "true", "ompi_info"):
        path = shutil.which(tool)
        if path:
            (b / tool).symlink_to(path)
    return b


@needs.openmpi
@pytest.mark.parametrize("launcher", ["srun", "mpirun"])
@pytest.mark.parametrize("kind", sorted(PAYLOADS))
def test_hostile_values_reach_the_launch_as_literal_arguments(tmp_path, launcher, kind):
    payload = PAYLOADS[kind]
    b = _sandbox_bin(tmp_path)
    (tmp_path / "s.toml").write_text(SPEC)
    (tmp_path / "p.toml").write_text(_platform(b, launcher, payload))
    made = collkit("run", "s.toml", "--platform", "p.toml", "--out", "c", "--dry-run", cwd=tmp_path,
                   env={"SLURM_CONF": "/nonexistent"})
    assert made.returncode == 0, made.stderr
    scripts = sorted((tmp_path / "c" / "jobs").glob("*.sbatch"))
    assert scripts
    for script in scripts:
        text = script.read_text()
        # every #SBATCH directive is one line: the payload never starts a line of its own
        assert all(line.strip().startswith(("#", "export ", "printf ", "true", str(b), "srun ", "[ -f ",
                                            "COLLKIT_JOB_LOG=", ") > ")) or line in ("", "(")
                   for line in text.splitlines()), text
        work = tmp_path / "run"
        work.mkdir(exist_ok=True)
        log = tmp_path / "launch.log"
        log.unlink(missing_ok=True)
        env = {"PATH": str(b), "SANDBOX_LOG": str(log), "SLURM_JOB_NODELIST": "node1", "HOME": str(work)}
        ran = subprocess.run(["/bin/bash", "-x", str(script)], cwd=work, env=env, capture_output=True,
                             text=True, timeout=60)
        assert ran.returncode == 0, ran.stderr
        assert not list(tmp_path.rglob("PWNED")), "a payload ran a command"
        # xtrace: every command bash ran is one of the intended ones (a launch's subshell
        # traces with one more '+', into its launch's output file)
        traced = ran.stderr + "".join(f.read_text() for f in sorted((tmp_path / "c" / "raw").glob("launch-*.out")))
        commands = [re.sub(r"^\++ ", "", line) for line in traced.splitlines() if re.match(r"^\++ ", line)]
        for cmd in commands:
            if re.match(r"[A-Za-z_][A-Za-z0-9_]*=", cmd):
                continue  # bash traces the assignment of an `export NAME=value` on its own line
            assert cmd.startswith(("true", "printf ", "export ", "srun ", str(b / "mpirun"),
                                   "'[' -f ", "'[' -x ")), cmd  # the script's collkit-bench check
        # one job step per launch: the spec's launch group, 3 launches (its rounds)
        assert sum(cmd.startswith(("srun ", str(b / "mpirun"))) for cmd in commands) == 3
        recorded = log.read_text().splitlines()
        args = [line[4:] for line in recorded if line.startswith("ARG ")]
        envs = [line[4:] for line in recorded if line.startswith("ENV ")]
        assert recorded[0] == f"ARGV0 {launcher}"
        assert payload in args                      # the launcher's extra argument, intact
        if launcher == "mpirun":
            assert args.count(payload) >= 3         # + the [mpi.openmpi] args, intact
        assert f"COLLKIT_HOSTILE={payload}" in envs and f"OTHER_VAR={payload}" in envs
        assert str(BENCH) in args
