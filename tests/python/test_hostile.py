"""Hostile and clumsy inputs where they enter: spec and platform files whose
strings would break out of a generated batch script, files that are not text.
Each must give one line that names the file, exit 2, launch nothing, create
nothing outside --out, and never show a traceback."""

import pytest

from cli_runner import one_line_error

SPEC = 'collectives = ["bcast"]\nsizes = [8]\nranks = [2]\n[backends]\ncollkit = ["linear"]\n'
PLATFORM = '[mpi.openmpi]\nmpirun = "/bin/false"\nargs = []\n'
SLURM = '[slurm]\npartition = "debug"\n'


def _refused(res, path):
    """The user-error promise, with the line naming the file."""
    err = one_line_error(res)
    assert str(path) in err or path.name in err, err
    return err


@pytest.mark.parametrize("name", ['x\\ntouch pwned #', 'a\\u0000b', 'tab\\there', '../up', '-rf', 'a b', ''])
def test_spec_name_outside_the_safe_set_is_refused(tmp_path, collkit, name):
    spec = tmp_path / "s.toml"
    spec.write_text(f'name = "{name}"\n' + SPEC)
    plat = tmp_path / "p.toml"
    plat.write_text('name = "p"\n' + PLATFORM)
    res = collkit("run", str(spec), "--platform", str(plat), "--out", str(tmp_path / "o"))
    err = _refused(res, spec)
    assert "name" in err
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("key, value", [
    ("partition", 'debug\\ntouch pwned #'), ("time_limit", '1:00\\rx'), ("account", 'a\\u0000'),
    ("qos", 'q\\n#SBATCH --wrap=id'),
])
def test_control_characters_in_slurm_values_are_refused(tmp_path, collkit, key, value):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "ok"\n' + SPEC)
    plat = tmp_path / "p.toml"
    plat.write_text(f'name = "p"\n[slurm]\n{key} = "{value}"\n')
    res = collkit("run", str(spec), "--platform", str(plat), "--out", str(tmp_path / "o"))
    err = _refused(res, plat)
    assert key in err and "control character" in err
    assert not (tmp_path / "o").exists()


def test_control_characters_in_sbatch_flags_are_refused(tmp_path, collkit):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "ok"\n' + SPEC)
    plat = tmp_path / "p.toml"
    plat.write_text('name = "p"\n[slurm]\nsbatch_flags = ["--exclusive\\ntouch pwned"]\n')
    err = _refused(collkit("run", str(spec), "--platform", str(plat), "--out", str(tmp_path / "o")), plat)
    assert "sbatch_flags" in err


@pytest.mark.parametrize("key", ["A=1;touch pwned;B", "1X", "A-B", "A B"])
def test_env_keys_must_be_variable_names(tmp_path, collkit, key):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "ok"\n' + SPEC)
    plat = tmp_path / "p.toml"
    plat.write_text(f'name = "p"\n{PLATFORM}env = {{ "{key}" = "v" }}\n')
    err = _refused(collkit("run", str(spec), "--platform", str(plat), "--out", str(tmp_path / "o")), plat)
    assert "environment variable name" in err


@pytest.mark.parametrize("content", [b"\x00\x01\x02binary\xff\xfe", "name = 'caf\u00e9'\n".encode("latin-1")])
def test_files_that_are_not_utf8_text_are_refused(tmp_path, collkit, content):
    spec = tmp_path / "s.toml"
    spec.write_bytes(content)
    _refused(collkit("run", str(spec), "--out", str(tmp_path / "o")), spec)
    plat = tmp_path / "p.toml"
    plat.write_bytes(content)
    good = tmp_path / "g.toml"
    good.write_text('name = "ok"\n' + SPEC)
    _refused(collkit("run", str(good), "--platform", str(plat), "--out", str(tmp_path / "o")), plat)


@pytest.mark.parametrize("line, word", [
    ("timeout_s = nan", "finite"), ("timeout_s = inf", "finite"), ("time_budget_s = inf", "finite"),
    ("time_budget_s = 1e9", "at most"), ("warmup = 3000000000", "at most"),
    ("max_iterations = 99999999999", "at most"), ("timeout_s = 0", "positive"),
])
def test_numbers_are_checked_where_they_enter(tmp_path, collkit, line, word):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "ok"\n' + SPEC + f"[measure]\n{line}\n")
    plat = tmp_path / "p.toml"
    plat.write_text('name = "p"\n' + PLATFORM)
    err = _refused(collkit("run", str(spec), "--platform", str(plat), "--out", str(tmp_path / "o")), spec)
    assert word in err and "measure." in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, word", [
    (("check", "--timeout", "0"), "--timeout"), (("check", "--timeout", "nan"), "--timeout"),
    (("check", "--timeout", "inf"), "--timeout"), (("check", "-n", "100000"), "cores"),
    (("traffic", "--collective", "allreduce", "--algorithm", "ring", "--ranks", "100000000"), "ranks"),
    (("traffic", "--collective", "allreduce", "--algorithm", "ring", "--ranks", "200000"), "memory"),
])
def test_cli_numbers_beyond_this_machine_are_refused(collkit, args, word):
    one_line_error(collkit(*args), word)


def test_local_points_beyond_this_machine_are_skipped_with_the_estimate(tmp_path, collkit):
    from collkit.campaign import resources
    from collkit.common import machine
    assert "cores" in resources.point_refusal("allreduce", 100000, 1, "int8", False, None)
    why = resources.point_refusal("allreduce", 8, 1 << 30, "int8", False, 16 << 30)
    assert "GiB" in why and "available memory" in why
    assert resources.point_refusal("allreduce", 8, 1024, "int32", False, machine.available_memory()) == ""
