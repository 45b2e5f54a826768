"""Which coll component serves each collective under Open MPI (backends/ompi_components.py):
the parser on coll_base_verbose output captured here (Open MPI 4.1.4 from Debian and
5.0.11 from PyPI, 1, 2 and 4 ranks on one node), and a live probe of Open MPI 4.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from collkit import backends
from collkit.backends import ompi_components as oc
from collkit.library.registry import COLLECTIVES

import needs

FIXTURES = Path(__file__).parent / "fixtures" / "coll_select"


@pytest.mark.parametrize("version", ["4.1.4", "5.0.11"])
def test_one_rank_is_served_by_self(version):
    text = (FIXTURES / f"ompi-{version}-np1.txt").read_text()
    assert oc.enabled_on_world(text)[-1] == "self"
    assert set(oc.serving_all(text).values()) == {"self"}


@pytest.mark.parametrize("version", ["4.1.4", "5.0.11"])
@pytest.mark.parametrize("ranks", [2, 4])
def test_several_ranks_on_one_node_are_served_by_tuned(version, ranks):
    # han (5.0's default above tuned) disqualifies itself on a one-node communicator;
    # sm and adapt are disabled; libnbc has no blocking collectives.
    text = (FIXTURES / f"ompi-{version}-np{ranks}.txt").read_text()
    enabled = oc.enabled_on_world(text)
    assert "han" not in enabled and "sm" not in enabled and enabled[-1] == "tuned"
    assert oc.serving_all(text) == {c: "tuned" for c in COLLECTIVES}


def test_only_the_first_process_and_mpi_comm_world_count():
    text = "\n".join([
        "[h:1] coll:base:comm_select: new communicator: MPI_COMM_WORLD (cid 0)",
        "[h:2] coll:base:comm_select: new communicator: MPI_COMM_WORLD (cid 0)",
        "[h:1] coll:base:comm_select: selecting       basic, priority  10, Enabled",
        "[h:2] coll:base:comm_select: selecting       basic, priority  10, Enabled",
        "[h:2] coll:base:comm_select: selecting       tuned, priority  30, Enabled",
        "[h:1] coll:base:comm_select: selecting         han, priority  35, Enabled",
        "[h:1] coll:base:comm_select: selecting          sm, priority  40, Disabled",
        "[h:1] coll:base:comm_select: new communicator: MPI_COMM_SELF (cid 1)",
        "[h:1] coll:base:comm_select: selecting        self, priority  75, Enabled",
    ])
    assert oc.enabled_on_world(text) == ["basic", "han"]


def test_a_component_serves_only_what_it_implements():
    enabled = ["basic", "libnbc", "tuned", "han", "sync"]
    # han implements allreduce but not alltoall or reduce_scatter_block; sync wraps
    assert oc.serving(enabled, "allreduce") == "han"
    assert oc.serving(enabled, "alltoall") == "tuned"
    assert oc.serving(enabled, "reduce_scatter") == "tuned"
    assert oc.serving(["basic", "sm"], "bcast") == "sm"
    assert oc.serving(["basic", "sm"], "gather") == "basic"
    # a component collkit has no table for is named, marked unsure, not skipped
    assert oc.serving(["basic", "tuned", "ucc"], "alltoall") == "ucc?"
    assert oc.serving(["libnbc"], "bcast") == ""
    assert oc.serving_all("no selection lines") == {}


def _live(name):
    from collkit.campaign import platform as platforms
    pm = platforms.detect().mpis[name]
    return pm, backends.backend_for(pm.install)


@pytest.mark.parametrize("name", needs.each_open_mpi())
@pytest.mark.parametrize("ranks,expected", [(1, "self"), (2, "tuned")])
def test_live_open_mpi_says_which_component_serves(name, ranks, expected):
    # 5.0.11 as 4.1.4 on one node: han (priority above tuned) disqualifies itself on a
    # communicator without remote peers (coll_han_module.c, han's comm_query)
    pm, backend = _live(name)
    served = backend.serving_components(pm.install, ranks, {}, pm.bench)
    assert served == {c: expected for c in COLLECTIVES}


@pytest.mark.parametrize("name", needs.each_open_mpi())
def test_live_excluding_tuned_moves_every_collective_to_basic(name):
    pm, backend = _live(name)
    served = backend.serving_components(pm.install, 2, {"OMPI_MCA_coll": "^tuned"}, pm.bench)
    assert served == {c: "basic" for c in COLLECTIVES}


def test_a_component_without_a_table_is_named_with_a_question_mark():
    """ucc above tuned may serve allreduce or hand it down: collkit cannot tell, and says so."""
    assert oc.serving(["basic", "tuned", "ucc"], "allreduce") == "ucc?"
    assert oc.serving(["basic", "tuned", "sync"], "allreduce") == "tuned"
