"""Per-message costs on simulated machines (issue #21): the [simgrid]
message_costs key and sim:NAME+loggp, their SMPI settings, one-line errors,
and a two-rank ping that pays exactly one send and one receive overhead.
About 5 s (the ping needs build/simgrid)."""

import json
import shutil
from pathlib import Path

import pytest

from collkit.common.errors import UserError
from collkit.launch import simgrid as sim_launch
from collkit.simulation import message_costs, settings
import needs
from cli_runner import collkit



def table(text: str, tmp_path: Path) -> settings.SimSettings:
    import tomllib
    f = tmp_path / "p.toml"
    f.write_text(text)
    return settings.from_table(tomllib.loads(text)["simgrid"], f)


def test_default_is_no_per_message_cost():
    s = settings.from_name("sim:lumi-like")
    assert s.message_costs is None
    assert not any(c.startswith(("smpi/os", "smpi/or", "smpi/ois")) for c in sim_launch.base_cfg(s))
    assert s.describe()["message_costs"] == "none"


def test_loggp_suffix_gives_the_reference_values_as_smpi_settings():
    s = settings.from_name("sim:lumi-like+loggp")
    assert s.machine.name == "lumi-like" and s.message_costs == message_costs.LOGGP
    cfg = sim_launch.base_cfg(s)
    # the post cost is max(o_s, g): the gap (0.33 us) is the larger here
    assert "smpi/os:0:3.3e-07:0" in cfg and "smpi/ois:0:3.3e-07:0" in cfg and "smpi/or:0:5.5e-07:0" in cfg
    assert s.describe()["message_costs"]["o_r_us"] == 0.55


def test_a_table_overrides_values_and_keeps_the_others(tmp_path):
    s = table('[simgrid]\npreset = "fattree-2to1"\nmessage_costs = { o_s_us = 1.5, g_us = 0 }\n', tmp_path)
    assert s.message_costs == message_costs.MessageCosts(o_s_us=1.5, o_r_us=0.55, g_us=0.0)
    assert "smpi/ois:0:1.5e-06:0" in sim_launch.base_cfg(s)
    assert table('[simgrid]\npreset = "fattree-2to1"\nmessage_costs = "none"\n', tmp_path).message_costs is None
    assert table('[simgrid]\npreset = "fattree-2to1"\nmessage_costs = "loggp"\n',
                 tmp_path).message_costs == message_costs.LOGGP


@pytest.mark.parametrize("value, message", [
    ('"logp"', "did you mean 'loggp'"),
    ('3', 'must be "none", "loggp" or a table'),
    ('{ o_s = 1 }', "unknown key 'o_s' (did you mean 'o_s_us'?)"),
    ('{ o_r_us = -1 }', "o_r_us must be a number of microseconds from 0 to 1000"),
    ('{ g_us = "fast" }', "g_us must be a number"),
    ('{ g_us = true }', "g_us must be a number"),
    ('{ o_s_us = 5000 }', "from 0 to 1000"),
])
def test_bad_message_costs_are_one_line_errors(tmp_path, value, message):
    with pytest.raises(UserError, match="message_costs") as err:
        table(f'[simgrid]\npreset = "fattree-2to1"\nmessage_costs = {value}\n', tmp_path)
    assert message in str(err.value) and "\n" not in str(err.value)


PING = """
name = "ping"
collectives = ["bcast"]
sizes = ["8B"]
ranks = [2]
mpi = ["smpi"]
[backends]
collkit = ["linear"]
[measure]
warmup = 0
min_iterations = 1
max_iterations = 1
time_budget_s = 0
validate = "none"
timeout_s = 60
"""


@needs.simgrid_programs
def test_a_two_rank_ping_pays_one_post_and_one_receive_overhead(tmp_path):
    (tmp_path / "spec.toml").write_text(PING)
    (tmp_path / "slow.toml").write_text('[simgrid]\npreset = "lumi-like"\n'
                                        'message_costs = { o_s_us = 2, o_r_us = 3, g_us = 0.5 }\n')
    times = {}
    for platform in ("sim:lumi-like", "sim:lumi-like+loggp", "slow.toml"):
        out = collkit("run", "spec.toml", "--platform", platform, "--out", "c", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        (rec,) = [json.loads(line) for line in (tmp_path / "c" / "records.jsonl").read_text().splitlines()]
        times[platform] = rec["times_us"][0]
        shutil.rmtree(tmp_path / "c")
    base = times["sim:lumi-like"]
    # one 8-byte message: + max(o_s, g) at the sender + o_r at the receiver
    assert times["sim:lumi-like+loggp"] - base == pytest.approx(0.33 + 0.55, abs=1e-4)
    assert times["slow.toml"] - base == pytest.approx(2 + 3, abs=1e-4)
