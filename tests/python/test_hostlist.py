"""The Slurm hostlist expander."""

import pytest

from collkit.common.errors import UserError
from collkit.common.hostlist import expand


@pytest.mark.parametrize("expr, hosts", [
    ("lrdn0063", ["lrdn0063"]),
    ("lrdn[0063,0110-0112]", ["lrdn0063", "lrdn0110", "lrdn0111", "lrdn0112"]),
    ("n[8-11]", ["n8", "n9", "n10", "n11"]),
    ("n[08-11]", ["n08", "n09", "n10", "n11"]),
    ("n[098-101]", ["n098", "n099", "n100", "n101"]),
    ("a1,b[1-2],c", ["a1", "b1", "b2", "c"]),
    ("r[1-2]n[01-02]", ["r1n01", "r1n02", "r2n01", "r2n02"]),
    ("x[1-2].example.org", ["x1.example.org", "x2.example.org"]),
    ("n[3,1,2]", ["n3", "n1", "n2"]),             # order as written
    ("n[1,1]", ["n1", "n1"]),                     # repeats kept
    ("[1-3]", ["1", "2", "3"]),
    ("lrdn[0063],lrdn[0064-0065]", ["lrdn0063", "lrdn0064", "lrdn0065"]),
    ("  n[1-2] ", ["n1", "n2"]),
    ("n[ 1-2 ]", ["n1", "n2"]),
])
def test_expand(expr, hosts):
    assert expand(expr) == hosts


@pytest.mark.parametrize("expr, words", [
    ("", "empty"),
    ("n[1-2", "never closed"),
    ("n1-2]", "without"),
    ("n[[1]]", "nested"),
    ("n[]", "empty brackets"),
    ("n[2-1]", "backwards"),
    ("n[a-b]", "not a number"),
    ("n[1-2-3]", "not a number"),
    ("a,,b", "empty name"),
    ("a b", "unexpected character"),
    ("n[0-2000000]", "more than"),
])
def test_bad_expressions_are_user_errors(expr, words):
    with pytest.raises(UserError, match=words):
        expand(expr)


def test_large_expansion_is_fast():
    hosts = expand("lrdn[0001-4992]")
    assert len(hosts) == 4992 and hosts[-1] == "lrdn4992"
