"""COLLKIT_RANKS_PER_NODE on the Python side (collkit.topology.nodes): the
virtual-node rule of lib/core/nodes.c, the registry's equal_nodes constraint
(CK_REQUIRES_EQUAL_NODES) and the plan skips that follow from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from collkit.library.registry import Algorithm, Constraints
from collkit.topology import nodes


def test_node_sizes_put_k_consecutive_ranks_per_node_the_last_short():
    assert nodes.node_sizes(16, 4) == [4, 4, 4, 4]
    assert nodes.node_sizes(7, 3) == [3, 3, 1]
    assert nodes.node_sizes(1, 4) == [1]
    with pytest.raises(ValueError):
        nodes.node_sizes(4, 0)


def test_misfit_names_the_variable_and_the_fix():
    assert nodes.misfit(12, {}) == ""  # unset: shared-memory nodes, one machine is one node
    assert nodes.misfit(12, {nodes.ENV: "4"}) == ""
    why = nodes.misfit(13, {nodes.ENV: "4"})
    assert "COLLKIT_RANKS_PER_NODE=4" in why and "multiple of 4" in why
    assert "not a positive integer" in nodes.misfit(8, {nodes.ENV: "0"})
    assert "not a positive integer" in nodes.misfit(8, {nodes.ENV: "two"})


def test_registry_reads_and_writes_equal_nodes():
    from collkit.library.registry import _algorithm
    alg = Algorithm("allgather", "parallel_rings", "ck_allgather_parallel_rings", "d", "o",
                    Constraints(False, False, 0, equal_nodes=True))
    item = alg.to_json()
    assert item["constraints"]["equal_nodes"] is True
    assert _algorithm(item).constraints.equal_nodes
    assert "equal ranks per node" in alg.constraints.describe()
    # a registry.json written before the flag existed still reads
    del item["constraints"]["equal_nodes"]
    assert not _algorithm(item).constraints.equal_nodes


def test_plan_skips_equal_nodes_points_that_would_be_refused(monkeypatch):
    """The plan skips rank counts that COLLKIT_RANKS_PER_NODE splits into
    uneven nodes, with the reason, as the C code refuses them (MPI_ERR_ARG)."""
    from collkit.campaign import plan as planner
    from collkit.campaign import spec as specs
    from collkit.campaign.platform import Platform, PlatformMPI
    from collkit.mpis.install import MPIInstall

    platform = Platform("test", "test", {"openmpi": PlatformMPI(MPIInstall("openmpi", Path("/bin/true")),
                                                                   Path("/bin/true"))})
    reg = [Algorithm("allgather", "parallel_rings", "ck_allgather_parallel_rings", "", "",
                     Constraints(False, False, 0, equal_nodes=True))]
    text = ('collectives = ["allgather"]\nsizes = ["64B"]\nranks = [8, 10, 12]\nmpi = ["openmpi"]\n'
            '[backends]\ncollkit = ["allgather/parallel_rings"]\n')
    monkeypatch.setenv(nodes.ENV, "4")
    p = planner.build(specs.parse(text), platform, reg, discover=lambda pm: None)
    skipped = {x.ranks: x.skip_reason for x in p.skipped}
    assert set(skipped) == {10} and "equal ranks per node" in skipped[10] and "multiple of 4" in skipped[10]
    monkeypatch.delenv(nodes.ENV)
    p = planner.build(specs.parse(text), platform, reg, discover=lambda pm: None)
    assert not p.skipped
