"""Link loads of the all-to-all exchanges on fat trees (issue 18), from the
traced messages of the C code (ck_trace): the permuted-variable-base exchange
(fattree_opt) at exactly the lower bound B_min(l) on every level, XOR and linear
shift at the whole Pi_l at the top level, for every half-bisection XGFT of the
paper's Table 1 range (16..1,024 nodes; docs/experiments/alltoall-fattree.md
says how they are derived). Also the radices rule shared with the C library and
the plan's skip of points fattree_opt would refuse."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest

from collkit.common.errors import UserError
from collkit.topology import fattree as ft
from collkit.traffic import linkloads

# The XGFT(2; M1, M2; 1, M1/2) trees of 16..1,024 nodes (M1 >= M2, as square
# as the node count allows), plus a three-level tree and ranks per node as a level.
TABLE1 = [(4, 4), (8, 4), (8, 8), (16, 8), (16, 16), (32, 16), (32, 32)]
EXTRA = [(8, 4, 2), (4, 4, 4), (2, 8, 4, 2), (3, 5, 2)]


import needs  # noqa: E402
from cli_runner import one_line_error  # noqa: E402
from ck_trace_build import ck_trace  # noqa: E402


def summary(alg: str, tree: ft.FatTree) -> dict[int, linkloads.LevelLoad]:
    rows = linkloads.loads(linkloads.trace_messages(ck_trace(), alg, tree), tree)
    return {r.level: r for r in rows if r.step is None}


@needs.ck_trace
@pytest.mark.parametrize("radices", TABLE1 + EXTRA, ids=lambda r: ",".join(map(str, r)))
def test_opt_meets_the_bound_and_the_others_do_not(radices):
    tree = ft.FatTree(radices)
    top = len(radices) - 1
    opt = summary("fattree_opt", tree)
    assert sorted(opt) == list(range(1, len(radices)))
    for level, r in opt.items():
        assert r.max_up == r.max_down == r.bound == tree.bmin(level), (level, r)
        # Below the whole subtree wherever the subtree holds at least as many
        # leaves as there are subtrees (always at the top level).
        if tree.subtree_size(level) ** 2 >= tree.leaves:
            assert r.bound < tree.subtree_size(level)
    for alg in ("xor", "linear_shift"):
        if alg == "xor" and tree.leaves & (tree.leaves - 1):
            continue  # XOR idles for non-power-of-two p: steps are not phases
        r = summary(alg, tree)[top]
        assert r.max_up == r.max_down == tree.subtree_size(top), (alg, r)


@needs.ck_trace
def test_per_step_rows_and_every_message_counted():
    tree = ft.FatTree((8, 4, 2))
    trace = linkloads.trace_messages(ck_trace(), "fattree_opt", tree)
    # One send per phase per rank, the own block included: p phases of p messages.
    assert trace.messages == 64 * 64 and sorted(set(trace.step.tolist())) == list(range(64))
    rows = linkloads.loads(trace, tree)
    per_step = [r for r in rows if r.level == 1 and r.step is not None]
    assert len(per_step) == 64
    # Exactly one of the 8 sources of a level-1 subtree keeps its message inside, every phase.
    assert all(r.max_up == 7 for r in per_step)
    xor = linkloads.loads(linkloads.trace_messages(ck_trace(), "xor", tree), tree)
    top = [r for r in xor if r.level == 2 and r.step is not None]
    # XOR leaves the 32-leaf half in the 32 phases with bit 5 set, and stays inside in the others.
    assert sorted(r.max_up for r in top) == [0] * 32 + [32] * 32


@needs.ck_trace
def test_cli_csv(collkit):
    out = collkit("traffic", "--collective", "alltoall", "--algorithm", "fattree_opt", "--algorithm", "xor",
                  "--algorithm", "linear_shift", "--fattree", "8,4,2", "--link-loads", "--format", "csv")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert {"algorithm", "level", "step", "max_up", "max_down", "bound"} <= set(rows[0])
    maxes = {(r["algorithm"], r["level"]): (int(r["max_up"]), int(r["max_down"]), int(r["bound"]))
             for r in rows if r["step"] == "max"}
    assert maxes == {("fattree_opt", "1"): (7, 7, 7), ("fattree_opt", "2"): (16, 16, 16),
                     ("xor", "1"): (8, 8, 7), ("xor", "2"): (32, 32, 16),
                     ("linear_shift", "1"): (8, 8, 7), ("linear_shift", "2"): (32, 32, 16)}


@pytest.mark.parametrize("args, words", [
    (["--collective", "alltoall", "--algorithm", "xor", "--fattree", "8,x", "--link-loads"], "--fattree"),
    (["--collective", "alltoall", "--algorithm", "xor", "--fattree", "8,4", "--link-loads", "--ranks", "48"],
     "multiple of 32"),
    (["--collective", "allgather", "--algorithm", "ring", "--fattree", "8,4", "--link-loads"], "alltoall"),
    (["--collective", "alltoall", "--algorithm", "xor", "--ranks", "8", "--link-loads"], "needs the tree"),
    (["--collective", "alltoall", "--algorithm", "xor", "--fattree", "8,4"], "--link-loads"),
])
def test_cli_errors_are_one_line(collkit, args, words):
    one_line_error(collkit("traffic", *args), words)


def test_radices_rule():
    tree = ft.parse("8,4,2")
    assert tree.leaves == 64 and [tree.bmin(level) for level in range(4)] == [1, 7, 16, 0]
    assert ft.fit(64, tree).radices == (8, 4, 2)
    assert ft.fit(256, tree).radices == (4, 8, 4, 2)
    for bad in ("", "8,", "0,2", "-1", " 8", "8;4"):
        with pytest.raises(ValueError):
            ft.parse(bad)
    with pytest.raises(ValueError, match="multiple of 64"):
        ft.fit(96, tree)
    assert ft.misfit(96, {}) == ""
    assert ft.misfit(128, {"COLLKIT_FATTREE": "8,4,2"}) == ""
    assert "multiple of 64" in ft.misfit(96, {"COLLKIT_FATTREE": "8,4,2"})


def test_plan_skips_fattree_points_that_would_be_refused(monkeypatch):
    """CK_REQUIRES_FATTREE (registry JSON "fattree") makes the plan skip rank
    counts COLLKIT_FATTREE does not fit, with the reason, as the C code refuses."""
    from collkit.campaign import plan as planner
    from collkit.campaign import spec as specs
    from collkit.campaign.platform import Platform, PlatformMPI
    from collkit.mpis.install import MPIInstall
    from collkit.library.registry import Algorithm, Constraints

    platform = Platform("test", "test", {"openmpi": PlatformMPI(MPIInstall("openmpi", Path("/bin/true")),
                                                                   Path("/bin/true"))})
    reg = [Algorithm("alltoall", "fattree_opt", "ck_alltoall_fattree_opt", "", "",
                     Constraints(False, False, 0, fattree=True))]
    text = ('collectives = ["alltoall"]\nsizes = ["64B"]\nranks = [16, 24, 32]\nmpi = ["openmpi"]\n'
            '[backends]\ncollkit = ["alltoall/fattree_opt"]\n')
    monkeypatch.setenv(ft.ENV, "4,4")
    p = planner.build(specs.parse(text), platform, reg, discover=lambda pm: None)
    skipped = {x.ranks: x.skip_reason for x in p.skipped}
    assert set(skipped) == {24} and "COLLKIT_FATTREE=4,4" in skipped[24] and "multiple of 16" in skipped[24]
    monkeypatch.delenv(ft.ENV)
    p = planner.build(specs.parse(text), platform, reg, discover=lambda pm: None)
    assert not p.skipped


# Per physical link under SimGrid's FAT_TREE routing (--routing dmodk).

def hand_trace(messages: list[tuple[int, int, int]], ranks: int):
    """A messages-format trace of (src, dst, step) triples, one int8 each."""
    from collkit.traffic.trace import Trace, TraceKey
    src, dst, step = (np.array(col, dtype=np.int32) for col in zip(*messages))
    return Trace(TraceKey("alltoall", "hand", ranks, 1, fmt="messages"), 1, len(messages), src, dst,
                 np.ones(len(messages), dtype=np.int64), step)


def test_dmodk_rule_by_hand():
    """XGFT(2; 4,2; 1,2): a leaf's uplink port is the destination's position mod 2
    and the top switch reached goes down to the destination's leaf on its one link;
    with one top switch and 2 parallel links instead, up is the same rule and down
    takes the parallel link source mod 2."""
    msgs = [(0, 5, 0), (1, 7, 0), (2, 4, 0), (3, 3, 0), (5, 0, 1)]
    rows = {(r.level, r.step): r for r in linkloads.link_loads(hand_trace(msgs, 8), linkloads.parse_xgft("2;4,2;1,2"))}
    # step 0: 5 and 7 share leaf 0's port 1 and top switch 1's link into leaf 1; 3 -> 3 is the loopback.
    assert (rows[1, 0].max_up, rows[1, 0].max_down, rows[1, 0].spread, rows[1, 0].links) == (2, 2, 2, 2)
    assert (rows[1, 1].max_up, rows[1, 1].max_down, rows[1, 1].spread) == (1, 1, 1)
    assert (rows[1, None].max_up, rows[1, None].max_down) == (2, 2)
    par = {(r.level, r.step): r for r in linkloads.link_loads(hand_trace(msgs, 8), linkloads.parse_xgft("2;4,2;1,1;1,2"))}
    # Down over parallel link src mod 2: 0 -> 5 and 2 -> 4 share link 0, 1 -> 7 takes link 1.
    assert (par[1, 0].max_up, par[1, 0].max_down, par[1, 0].links) == (2, 2, 2)
    swapped = [(0, 5, 0), (1, 7, 0), (3, 4, 0)]
    par = {(r.level, r.step): r for r in linkloads.link_loads(hand_trace(swapped, 8), linkloads.parse_xgft("2;4,2;1,1;1,2"))}
    assert (par[1, 0].max_up, par[1, 0].max_down) == (2, 2)  # 3 -> 4 on link 1 with 1 -> 7


def physical(alg: str, xgft: str) -> dict[int, linkloads.PhysicalLoad]:
    x = linkloads.parse_xgft(xgft)
    rows = linkloads.link_loads(linkloads.trace_messages(ck_trace(), alg, ft.FatTree(x.down)), x)
    return {r.level: r for r in rows if r.step is None}


@needs.ck_trace
@pytest.mark.parametrize("xgft, opt, others", [
    # 16-node leaves: a leaf's sources send to 2 positions per phase, so D-mod-k
    # stacks 7 of the 14 leaving messages on one uplink (full and half tree).
    ("2;16,8;1,16;1,1", (7, 1, 1), (1, 1, 1)),
    ("2;16,8;1,8;1,1", (7, 2, 2), (2, 2, 2)),
    # ... and one top switch with parallel links: down by source, 7 and 14.
    ("2;16,8;1,1;1,16", (7, 7, 1), (1, 1, 1)),
    ("2;16,8;1,1;1,8", (7, 14, 2), (2, 2, 2)),
    # Top radix 2: the exchange's 32 leaving messages have 32 positions, one per
    # uplink even on the half tree, where XOR and linear shift need 2.
    ("2;64,2;1,32;1,1", (1, 1, 1), (2, 2, 2)),
    ("2;64,2;1,64;1,1", (1, 1, 1), (1, 1, 1)),
])
def test_dmodk_loads_of_the_simulated_trees(xgft, opt, others):
    """The per-link loads that explain docs/experiments/alltoall-fattree.md's
    SimGrid times: (max_up, max_down, spread) of the one level of links."""
    r = physical("fattree_opt", xgft)[1]
    assert (r.max_up, r.max_down, r.spread) == opt
    for alg in ("xor", "linear_shift"):
        r = physical(alg, xgft)[1]
        assert (r.max_up, r.max_down, r.spread) == others, alg


@needs.ck_trace
def test_dmodk_three_levels_xor_is_contention_free_on_a_full_tree():
    """D-mod-k routes XOR without contention on a full-bisection XGFT (every
    level's busiest link carries one message per phase), and never below spread."""
    for level, r in physical("xor", "3;4,4,2;1,4,4;1,1,1").items():
        assert (r.max_up, r.max_down, r.spread, r.links) == (1, 1, 1, 4 ** level), level
    for level, r in physical("fattree_opt", "3;4,4,2;1,4,2;1,1,1").items():
        assert max(r.max_up, r.max_down) >= r.spread  # pigeonhole: no routing beats spread


@needs.ck_trace
def test_cli_dmodk_csv(collkit):
    out = collkit("traffic", "--collective", "alltoall", "--algorithm", "fattree_opt", "--algorithm", "xor",
                  "--xgft", "2;16,8;1,8;1,1", "--link-loads", "--routing", "dmodk", "--format", "csv")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert list(rows[0]) == ["algorithm", "level", "step", "max_up", "max_down", "spread", "links"]
    maxes = {r["algorithm"]: (int(r["max_up"]), int(r["max_down"])) for r in rows if r["step"] == "max"}
    assert maxes == {"fattree_opt": (7, 2), "xor": (2, 2)}
    assert len(rows) == 2 * (128 + 1)


@pytest.mark.parametrize("args, words", [
    (["--fattree", "16,8", "--link-loads", "--routing", "dmodk"], "--xgft"),
    (["--xgft", "2;16,8;1,8", "--link-loads", "--routing", "dmodk", "--ranks", "256"], "one rank per host"),
])
def test_cli_dmodk_errors_are_one_line(collkit, args, words):
    one_line_error(collkit("traffic", "--collective", "alltoall", "--algorithm", "xor", *args), words)


def test_parse_xgft():
    x = linkloads.parse_xgft("2;16,8;1,8")
    assert (x.down, x.up, x.parallel) == ((16, 8), (1, 8), (1, 1))
    assert linkloads.parse_xgft("2;16,8;1,1;1,8").parallel == (1, 8)
    for bad in ("2;16,8", "2;16,8;1", "x;16,8;1,8", "2;16,8;1,0", "2;16,8;2,8", "2;16,8;1,8;1,1;1"):
        with pytest.raises(UserError, match="--xgft"):
            linkloads.parse_xgft(bad)



@needs.ck_trace
def test_linear_shift_takes_its_shift_and_copies_its_own_block(monkeypatch):
    """COLLKIT_LINEAR_SHIFT=2 at p = 4: phase i sends to rank + i + 2, phase 2
    is the own block (a local copy, no message), so the steps go to +2, +3, +1."""
    one_switch = ft.FatTree((4,))
    monkeypatch.setenv("COLLKIT_LINEAR_SHIFT", "2")
    t = linkloads.trace_messages(ck_trace(), "linear_shift", one_switch)
    for rank in range(4):
        mine = sorted((int(s), int(d)) for s, d, r in zip(t.step, t.dst, t.src) if r == rank)
        assert mine == [(0, (rank + 2) % 4), (1, (rank + 3) % 4), (2, (rank + 1) % 4)], (rank, mine)
    monkeypatch.setenv("COLLKIT_LINEAR_SHIFT", "2x")
    with pytest.raises(UserError, match=r"MPI_ERR_ARG$"):
        linkloads.trace_messages(ck_trace(), "linear_shift", one_switch)
