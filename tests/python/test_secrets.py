"""Secret redaction in metadata: every URL-credential and option form the
hardening trial found, and values that must survive untouched."""

import pytest

from collkit.campaign.metadata import environment
from collkit.campaign.secrets import REDACTED, redact, redact_value

R = REDACTED


@pytest.mark.parametrize("value, expected", [
    ("https://alice:p@ss@host/x", f"https://{R}@host/x"),
    ("https://:token@host", f"https://{R}@host"),
    ("https://token@host:8443/path?q=1", f"https://{R}@host:8443/path?q=1"),
    ("http://user:pw@proxy:3128", f"http://{R}@proxy:3128"),
    ("a=https://u:p@h1/,b=ftp://x@h2", f"a=https://{R}@h1/,b=ftp://{R}@h2"),
    ("--mca x y --password=hunter2 --np 4", f"--mca x y --password={R} --np 4"),
    ("passwd=hunter2", f"passwd={R}"),
    ("opt1,db_password=abc,opt2", f"opt1,db_password={R},opt2"),
    ("--token abc123 --verbose", f"--token {R} --verbose"),
    ("https://h/api?api_key=abc&x=1", f"https://h/api?api_key={R}&x=1"),
    ("-x AUTH_TOKEN=zzz", f"-x AUTH_TOKEN={R}"),
])
def test_secret_forms_are_redacted(value, expected):
    assert redact_value(value) == expected


@pytest.mark.parametrize("value", [
    "tcp://10.0.0.1:5000", "host:port", "ib0,eth0", "--mca btl self,vader", "https://host/path@v2",
    "compact", "",
])
def test_ordinary_values_survive(value):
    assert redact_value(value) == value


def test_secret_names_lose_the_whole_value():
    out = redact({"OMPI_MCA_secret_password": "x", "SLURM_JOB_ID": "42", "UCX_PROXY": "http://a:b@p:1"})
    assert out == {"OMPI_MCA_secret_password": R, "SLURM_JOB_ID": "42", "UCX_PROXY": f"http://{R}@p:1"}


def test_environment_redacts_values_of_allow_listed_variables():
    env = {"OMPI_MCA_opts": "--password=pw1", "UCX_URL": "https://alice:p@ss@host", "HOME": "/root"}
    out = environment(env)
    assert out == {"OMPI_MCA_opts": f"--password={R}", "UCX_URL": f"https://{R}@host"}
    assert "pw1" not in repr(out) and "p@ss" not in repr(out)
