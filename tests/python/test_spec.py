"""Spec validation: every mistake is one line and exit status 2, before anything launches."""

import pytest

from collkit.campaign import spec as specs
from collkit.campaign.sizes import format_size, parse_size, parse_sizes
from collkit.common.errors import UserError

GOOD = """
collectives = ["allreduce", "bcast"]
sizes = "8B..1KiB x4"
ranks = [4, 2]
[backends]
collkit = "all"
"""


def test_sizes_parse_units_ranges_and_lists():
    assert parse_size("8B") == 8 and parse_size("64KiB") == 65536 and parse_size("16MiB") == 16 << 20
    assert parse_size("1k") == 1024 and parse_size(12) == 12
    assert parse_sizes("8B..16MiB x2")[0] == 8 and parse_sizes("8B..16MiB x2")[-1] == 16 << 20
    assert len(parse_sizes("8B..16MiB x2")) == 22
    assert parse_sizes("1KiB..1MiB x32") == [1024, 32768, 1 << 20]
    assert parse_sizes(["1KiB", 8, "4B..16B x2"]) == [4, 8, 16, 1024]
    assert format_size(1536) == "1536B" and format_size(16 << 20) == "16MiB"


@pytest.mark.parametrize("bad", ["8 parsecs", "-4B", "..", "1KiB..8B", "8B..1KiB x1", "KiB"])
def test_bad_sizes_are_user_errors(bad):
    with pytest.raises(UserError):
        parse_sizes(bad)


def test_good_spec_resolves_defaults():
    s = specs.parse(GOOD, default_name="demo")
    assert s.name == "demo" and s.ranks == (2, 4) and s.dtype == "int32" and s.op == "sum"
    assert s.sizes == (8, 32, 128, 512) and s.backends == {"collkit": ("all",)}
    assert s.measure.sync == "dissemination" and s.measure.validate == "first"


@pytest.mark.parametrize("edit, message", [
    ("colectives = ['bcast']\n", "unknown key 'colectives' in the spec (did you mean 'collectives'?)"),
    ("[measure]\nwarmups = 3\n", "unknown key 'warmups' in [measure] (did you mean 'warmup'?)"),
    ("dtype = 'int16'\n", "unknown dtype 'int16'"),
    ("op = 'summ'\n", "(did you mean 'sum'?)"),
    ("root = 3\n", "root 3 is not a rank of the 2-rank runs"),
    ("[measure]\nsync = 'windows'\n", "(did you mean 'window'?)"),
    ("[measure]\nmin_iterations = 10\nmax_iterations = 5\n", "max_iterations (5) is below min_iterations"),
    ("[measure]\ntimeout_s = 0\n", "timeout_s must be positive"),
    ("in_place = 'yes'\n", "in_place must be true or false"),
])
def test_spec_mistakes_name_the_fix(edit, message):
    text = GOOD.replace("[backends]", edit + "[backends]", 1) if not edit.startswith("[measure]") else GOOD + edit
    with pytest.raises(UserError) as err:
        specs.parse(text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_impossible_sizes_are_refused():
    with pytest.raises(UserError, match="not a whole number of int32 elements"):
        specs.parse(GOOD.replace('"8B..1KiB x4"', '["6B"]'))
    with pytest.raises(UserError, match="above MPI's int count limit"):
        specs.parse(GOOD.replace('"8B..1KiB x4"', '["16GiB"]').replace("[backends]", 'dtype = "int8"\n[backends]'))


def test_unknown_backend_and_missing_keys():
    # nccl is a backend (tests/python/test_nccl_backend.py); AMD's rccl is not
    with pytest.raises(UserError, match="unknown key 'rccl' in \\[backends\\]"):
        specs.parse(GOOD.replace('collkit = "all"', 'rccl = "all"'))
    with pytest.raises(UserError, match="missing required key 'sizes'"):
        specs.parse(GOOD.replace('sizes = "8B..1KiB x4"', ""))
    with pytest.raises(UserError, match="not valid TOML"):
        specs.parse("collectives = [")


SHA = "ab" * 32


@pytest.mark.parametrize("table, message", [
    ('from_profile = "app.profile.json"\n', "[from_profile] must be a table with path and sha256"),
    (f'[from_profile]\npath = "app.profile.json"\nsha256 = "{SHA}"\n', "from_profile.path must be the profile's absolute path"),
    ('[from_profile]\npath = "/a/p.json"\nsha256 = "xyz"\n', "from_profile.sha256 must be 64 lowercase hexadecimal digits"),
    (f'[from_profile]\npath = "/a/p.json"\nsha256 = "{SHA.upper()}"\n', "from_profile.sha256 must be 64"),
    (f'[from_profile]\npath = "/a/p.json"\nsha = "{SHA}"\n', "unknown key 'sha' in [from_profile]"),
    (f'[from_profile]\npath = "/a/\\np.json"\nsha256 = "{SHA}"\n', "control character"),
])
def test_a_bad_from_profile_table_is_one_line(table, message):
    text = table + GOOD if not table.startswith("[") else GOOD + table
    with pytest.raises(UserError) as err:
        specs.parse(text)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_from_profile_table_is_kept():
    s = specs.parse(GOOD + f'[from_profile]\npath = "/a/p.json"\nsha256 = "{SHA}"\n')
    assert (s.from_profile.path, s.from_profile.sha256) == ("/a/p.json", SHA)
    assert specs.parse(GOOD).from_profile is None
