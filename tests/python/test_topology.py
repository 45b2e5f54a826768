"""Node maps: the Leonardo format and the generic CSV."""

from pathlib import Path

import numpy as np
import pytest

from collkit.common.errors import UserError
from collkit.topology import Node, Topology, UnknownHost, normalise_host, read_map

LEONARDO = Path(__file__).resolve().parents[2] / "data" / "leonardo" / "nodes.txt"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_normalise_host():
    assert normalise_host(" LRDN0063.leonardo.local\n") == "lrdn0063"
    assert normalise_host("node7") == "node7"


def test_leonardo_format(tmp_path):
    path = write(tmp_path, "nodes.txt",
                 "NODE 0063 RACK 3 CELL 1 ROW 1 PARTITION 1  SWITCH 10300\n"
                 "\n# a comment\n"
                 "NODE 0110 RACK 5 CELL 2 ROW 1 PARTITION 1  SWITCH 10500\n"
                 "NODE 0111 RACK 5 CELL 2 ROW 1 PARTITION 1  SWITCH 10500\n")
    t = read_map(path)
    assert t.kind == "dragonfly"
    assert [n.name for n in t.nodes] == ["lrdn0063", "lrdn0110", "lrdn0111"]
    assert t.nodes[0] == Node("lrdn0063", "1", "10300", "3")
    assert t.groups == 2 and t.group_names == ("1", "2")
    assert t.node_group.tolist() == [0, 1, 1]
    assert t.node_switch.tolist() == [0, 1, 1]
    assert t.find("lrdn0110.leonardo.local") == 1
    assert t.find("LRDN0111") == 2
    assert t.find("lrdn110") is None  # the width is part of the name


def test_real_leonardo_map():
    t = read_map(LEONARDO)
    assert len(t) == 4992 and t.groups == 22
    assert t.group_names[t.node_group[t.find("lrdn0063")]] == "1"


@pytest.mark.parametrize("text, words", [
    ("NODE 0001 RACK 1\n", "needs NODE and CELL"),
    ("NODE 0001 CELL\n", "KEY VALUE pairs"),
    ("NODE x1 CELL 1\n", "not a number"),
    ("NODE 0001 CELL 1\nNODE 0001 CELL 2\n", "line 2: node lrdn0001 already listed on line 1"),
])
def test_leonardo_errors(tmp_path, text, words):
    with pytest.raises(UserError, match=words):
        read_map(write(tmp_path, "m.txt", text))


def test_csv_with_and_without_header(tmp_path):
    a = read_map(write(tmp_path, "a.csv", "host,group,switch\nN1.dom,g0,s0\nn2,g0,s1\nn3,g1,s2\n"))
    b = read_map(write(tmp_path, "b.csv", "n1,g0\nn2,g0\nn3,g1\n"))
    for t in (a, b):
        assert [n.name for n in t.nodes] == ["n1", "n2", "n3"]
        assert t.node_group.tolist() == [0, 0, 1]
    assert a.node_switch.tolist() == [0, 1, 2]
    assert b.node_switch.tolist() == [-1, -1, -1]
    assert a.find("n1.dom") == 0 and a.kind == "generic"


@pytest.mark.parametrize("text, words", [
    ("host,group\n", "lists no nodes"),
    ("n1\n", "expected 'host,group"),
    ("n1,g,s,x\n", "expected 'host,group"),
    ("n1,\n", "expected 'host,group"),
    ("n1,g\nN1,h\n", "already listed"),
])
def test_csv_errors(tmp_path, text, words):
    with pytest.raises(UserError, match=words):
        read_map(write(tmp_path, "m.csv", text))


def test_missing_and_empty_map(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        read_map(tmp_path / "nope.txt")
    with pytest.raises(UserError, match="no nodes"):
        read_map(write(tmp_path, "e.txt", "# only a comment\n"))


def test_lookup_names_the_unknown_host():
    t = Topology((Node("a", "0"), Node("b", "1")))
    assert t.lookup(["a", "B.x", "a"]).tolist() == [0, 1, 0]
    with pytest.raises(UnknownHost) as exc:
        t.lookup(["a", "zz.dom"])
    assert exc.value.host == "zz.dom" and exc.value.position == 1


def test_single_group():
    t = Topology.single_group(3)
    assert len(t) == 3 and t.groups == 1 and t.node_group.tolist() == [0, 0, 0]
    assert isinstance(t.node_group, np.ndarray)
