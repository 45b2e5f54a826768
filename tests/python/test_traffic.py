"""collkit traffic: allocations, placement, trace parsing, counting, the CLI,
the published PICO figures and byte conservation against docs/algorithms.md.

The last two need the real ck_trace (build/<mpi>/tools/trace/ck_trace) and are
skipped, saying so, where it is not built."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from collkit.common.errors import UserError
from collkit.topology import Node, Topology, read_map
from collkit.traffic.allocation import from_hostlist, read_allocation
from collkit.traffic.analysis import allocation_nodes, analyse, placement_for, ranks_only
from collkit.traffic.count import count, inter_group_bytes, reduction_pct
from collkit.traffic.placement import place
from collkit.traffic.trace import (
    Trace,
    TraceFailure,
    TraceFormatError,
    TraceKey,
    parse_traces,
    trace_count,
    vector_bytes,
    whole_vector_algorithms,
)
from collkit.traffic.tracer import Tracer

REPO = Path(__file__).resolve().parents[2]
LEONARDO = REPO / "data" / "leonardo"
NODES = LEONARDO / "nodes.txt"


import needs  # noqa: E402
from cli_runner import one_line_error  # noqa: E402
from ck_trace_build import ck_trace  # noqa: E402


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


# ------------------------------------------------------------------ allocations

def test_pico_csv_in_any_row_order(tmp_path):
    path = write(tmp_path, "a.csv", "MPI_Rank,allocation\n1,lrdn0002.x\n0,lrdn0001.x\n2,lrdn0001.x\n")
    a = read_allocation(path)
    assert a.hosts == ("lrdn0001.x", "lrdn0002.x", "lrdn0001.x")
    assert a.where(1) == f"{path} line 2"


def test_pico_csv_without_header(tmp_path):
    a = read_allocation(write(tmp_path, "a.csv", "0,n1\n1,n2\n"))
    assert a.hosts == ("n1", "n2")


@pytest.mark.parametrize("text, words", [
    ("MPI_Rank,allocation\n0,n1\n0,n2\n", "rank 0 already placed on line 2"),
    ("MPI_Rank,allocation\n0,n1\n2,n2\n", "rank 1 is missing"),
    ("MPI_Rank,allocation\nx,n1\n", "line 2: expected 'rank,host'"),
    ("MPI_Rank,allocation\n0,\n", "expected 'rank,host'"),
    ("MPI_Rank,allocation\n", "places no ranks"),
    ("", "is empty"),
    ("n1 slots=2\n", "one host name or hostlist per line"),
    ("n[1-\n", "line 1: hostlist"),
])
def test_allocation_errors(tmp_path, text, words):
    with pytest.raises(UserError, match=words):
        read_allocation(write(tmp_path, "a.txt", text))


def test_missing_allocation_file(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        read_allocation(tmp_path / "nope.csv")


def test_hostfile_with_hostlists_and_comments(tmp_path):
    a = read_allocation(write(tmp_path, "h.txt", "# job 42\nn1\n\nn[2-3]  # two\nn1\n"))
    assert a.hosts == ("n1", "n2", "n3", "n1")
    assert a.lines == (2, 4, 4, 5)


def test_nodelist():
    a = from_hostlist("lrdn[0063,0110-0111]")
    assert a.hosts == ("lrdn0063", "lrdn0110", "lrdn0111") and a.lines is None


def test_unknown_host_says_which_and_where(tmp_path):
    topo = Topology((Node("n1", "a"), Node("n2", "b")))
    alloc = read_allocation(write(tmp_path, "h.txt", "n1\nn2\nn9.dom\n"))
    with pytest.raises(UserError, match=r"line 3: host 'n9.dom' is not in the map"):
        allocation_nodes(alloc, topo)


# ------------------------------------------------------------------ placement

def test_block_cyclic_explicit():
    entries = np.array([5, 7, 9])
    assert place(entries).rank_node.tolist() == [5, 7, 9]
    assert place(entries, "block", 2).rank_node.tolist() == [5, 5, 7, 7, 9, 9]
    assert place(entries, "cyclic", 2).rank_node.tolist() == [5, 7, 9, 5, 7, 9]
    assert place(entries, "block", 2, ranks=5).rank_node.tolist() == [5, 5, 7, 7, 9]


def test_repeated_hosts_default_to_explicit():
    entries = np.array([1, 1, 2, 1])
    p = place(entries)
    assert p.mode == "explicit" and p.rank_node.tolist() == [1, 1, 2, 1] and p.nodes == 2
    # block collapses repeats to nodes in order of first appearance
    assert place(entries, "block", 2).rank_node.tolist() == [1, 1, 2, 2]
    with pytest.raises(UserError, match="--ppn does not apply"):
        place(entries, "explicit", 2)


def test_ranks_only_placement():
    topo, pl = ranks_only(5, None, None, 2)
    assert len(topo) == 3 and topo.groups == 1
    assert pl.rank_node.tolist() == [0, 0, 1, 1, 2]
    big = Topology(tuple(Node(f"n{i}", str(i // 2)) for i in range(4)))
    topo, pl = ranks_only(4, big, "cyclic", 1)
    assert topo is big and pl.rank_node.tolist() == [0, 1, 2, 3]
    with pytest.raises(UserError, match="need 5 nodes"):
        ranks_only(5, big, None, None)
    with pytest.raises(UserError, match="explicit"):
        ranks_only(4, big, "explicit", None)


# ------------------------------------------------------------------ parsing

SAMPLE = """\
# trace collective=bcast algorithm=binomial_doubling ranks=4 count=8 root=0 dtype=int8 bytes_per_element=1 messages=3
0 1 8 0
0 2 8 1
2 3 8 0
# error collective=bcast algorithm=foo ranks=4 count=8 root=0 dtype=int8 reason=unknown algorithm 'foo'
# trace collective=allgather algorithm=ring ranks=1 count=1 root=0 dtype=int32 bytes_per_element=4 messages=0
"""


def test_parse_messages():
    out = parse_traces(SAMPLE, "messages")
    assert len(out) == 3
    t, err, empty = out
    assert isinstance(t, Trace) and t.key.algorithm == "binomial_doubling" and t.key.ranks == 4
    assert t.src.tolist() == [0, 0, 2] and t.dst.tolist() == [1, 2, 3]
    assert t.nbytes.tolist() == [8, 8, 8] and t.step.tolist() == [0, 1, 0]
    assert t.n == 8 and t.total_bytes == 24
    assert isinstance(err, TraceFailure) and err.reason == "unknown algorithm 'foo'"
    assert err.key.algorithm == "foo"
    assert isinstance(empty, Trace) and empty.src.size == 0 and empty.n == 4


def test_parse_pairs():
    text = ("# trace collective=alltoall algorithm=linear ranks=2 count=3 root=0 dtype=int32 "
            "bytes_per_element=4 messages=2\n0 1 12\n1 0 12\n")
    (t,) = parse_traces(text, "pairs")
    assert t.step is None and t.nbytes.tolist() == [12, 12] and t.n == 2 * 3 * 4


@pytest.mark.parametrize("text", [
    "0 1 8 0\n",                                   # body without header
    "# trace collective=bcast algorithm=x ranks=2 count=1 root=0 dtype=int8 bytes_per_element=1 messages=2\n0 1 1 0\n",
    "# trace collective=bcast algorithm=x ranks=2 count=1 root=0 dtype=int8 bytes_per_element=1 messages=1\n0 1 x 0\n",
    "# trace collective=bcast ranks=2\n",
])
def test_parse_rejects_malformed(text):
    with pytest.raises(TraceFormatError):
        parse_traces(text, "messages")


def test_counts_split_blocks_exactly():
    assert trace_count("allreduce", 128) == 128
    assert trace_count("allreduce", 96) == 192       # lcm(96, 64)
    assert trace_count("allreduce", 96, "rabenseifner") == 192
    assert trace_count("allreduce", 96, "bine_latency") == 96  # whole vectors only
    assert trace_count("bcast", 1) == 1
    assert trace_count("alltoall", 96) == 1
    assert vector_bytes("alltoall", 96, 1, 1) == 96
    assert vector_bytes("allreduce", 96, 192, 4) == 768


# ------------------------------------------------------------------ counting

def tiny(src, dst, nbytes, step=None, ranks=4, count=10):
    key = TraceKey("bcast", "hand", ranks, count, fmt="messages" if step is not None else "pairs")
    arr = np.asarray
    return Trace(key, 1, len(src), arr(src, dtype=np.int32), arr(dst, dtype=np.int32),
                 arr(nbytes, dtype=np.int64), None if step is None else arr(step, dtype=np.int32))


def test_count_classes_and_steps():
    # ranks 0,1 on node 0; rank 2 on node 1 (same group); rank 3 on node 2 (other group)
    t = tiny([0, 0, 1, 2, 3], [1, 2, 3, 3, 0], [10, 10, 10, 5, 1], step=[0, 1, 0, 0, 0])
    rank_node = np.array([0, 0, 1, 2])
    node_group = np.array([0, 0, 1])
    r = count(t, rank_node, node_group, per_step=True)
    assert (r.volume.intra_node, r.volume.intra_group, r.volume.inter_group) == (10, 10, 16)
    assert r.volume.total == 36 and r.nodes == 3 and r.groups == 2
    assert r.in_n(r.volume.inter_group) == 1.6
    assert [(v.intra_node, v.intra_group, v.inter_group) for v in r.steps] == [(10, 0, 16), (0, 10, 0)]
    assert inter_group_bytes(t, node_group[rank_node]) == 16


def test_count_needs_steps_for_per_step():
    t = tiny([0], [1], [1])
    with pytest.raises(ValueError):
        count(t, np.array([0, 1, 2, 3]), np.array([0, 0, 0, 0]), per_step=True)


def test_reduction():
    assert reduction_pct(122, 37) == pytest.approx(69.672, abs=1e-3)
    assert reduction_pct(0, 0) is None


def test_count_is_vectorised_enough():
    """A million messages count in well under a second."""
    import time
    rng = np.random.default_rng(1)
    m = 1_000_000
    t = tiny(rng.integers(0, 2048, m), rng.integers(0, 2048, m), rng.integers(1, 100, m), ranks=2048)
    rank_node = np.arange(2048)
    node_group = rng.integers(0, 20, 2048)
    start = time.perf_counter()
    r = count(t, rank_node, node_group)
    assert time.perf_counter() - start < 1.0
    assert r.volume.total == int(t.nbytes.sum())


# ------------------------------------------------------------------ CLI errors

@pytest.mark.parametrize("args, words", [
    (["--collective", "bcst", "--algorithm", "linear", "--ranks", "4"], "did you mean 'bcast'"),
    (["--collective", "bcast", "--algorithm", "binomal_doubling", "--ranks", "4"],
     "did you mean 'binomial_doubling'"),
    (["--collective", "bcast", "--algorithm", "linear"], "one of the arguments"),
    (["--collective", "bcast", "--algorithm", "linear", "--ranks", "0"], "at least 1"),
    (["--collective", "bcast", "--algorithm", "linear", "--alloc", "/nonexistent.csv", "--map", "/nonexistent"],
     "allocation file /nonexistent.csv does not exist"),
    (["--collective", "bcast", "--algorithm", "linear", "--ranks", "4", "--map", "/nonexistent"],
     "map file /nonexistent does not exist"),
    (["--collective", "bcast", "--algorithm", "linear", "--nodelist", "n[1-"], "never closed"),
    (["--collective", "bcast", "--algorithm", "linear", "--nodelist", "n1"], "needs --map"),
    (["--collective", "allreduce", "--algorithm", "ring", "--ranks", "4", "--root", "1"], "--root does not apply"),
    (["--collective", "bcast", "--algorithm", "linear", "--ranks", "4", "--placement", "explicit"], "explicit"),
    (["--collective", "bcast", "--algorithm", "linear", "--algorithm", "linear", "--ranks", "4"], "named twice"),
])
def test_cli_user_errors(collkit, args, words):
    one_line_error(collkit("traffic", *args), words)


def test_cli_unknown_host_in_allocation(collkit, tmp_path):
    m = write(tmp_path, "map.csv", "n1,g0\nn2,g1\n")
    a = write(tmp_path, "alloc.csv", "MPI_Rank,allocation\n0,n1.dom\n1,n7.dom\n")
    one_line_error(collkit("traffic", "--collective", "bcast", "--algorithm", "linear", "--alloc", str(a),
                           "--map", str(m)), f"{a} line 3: host 'n7.dom' is not in the map")


def test_cli_jobs_errors(collkit, tmp_path):
    m = write(tmp_path, "map.csv", "n1,g0\nn2,g1\n")
    base = ["traffic", "--collective", "allreduce", "--algorithm", "ring"]
    one_line_error(collkit(*base, "--jobs", str(tmp_path), "--map", str(m)), "exactly two algorithms")
    one_line_error(collkit(*base, "--algorithm", "rabenseifner", "--jobs", str(tmp_path / "none"),
                           "--map", str(m)), "is not a directory")
    one_line_error(collkit(*base, "--algorithm", "rabenseifner", "--jobs", str(tmp_path)), "needs --map")
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    write(jobs, "j1.txt", "n1\nn3\n")
    one_line_error(collkit(*base, "--algorithm", "rabenseifner", "--jobs", str(jobs), "--map", str(m)),
                   "j1.txt line 2: host 'n3' is not in the map")
    # beside readable allocations, a stray file is passed over and named, not fatal
    write(jobs, "j2.txt", "n1\nn2\n")
    write(jobs, "README.md", "these are the jobs of March\n")
    res = collkit(*base, "--algorithm", "rabenseifner", "--jobs", str(jobs), "--map", str(m))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[1].startswith("j2,") and len(res.stdout.splitlines()) == 2
    assert "passed over 2 files" in res.stderr and "Traceback" not in res.stderr


def test_cli_help_explains_formats(collkit):
    res = collkit("traffic", "--help")
    assert res.returncode == 0
    for words in ("MPI_Rank,allocation", "hostfile", "lrdn[0063,0110-0112]", "NODE 0063", "host,group[,switch]",
                  "cyclic", "lcm(p, 2^floor(log2 p))"):
        assert words in res.stdout, words


# ------------------------------------------------------- with the real ck_trace

@needs.ck_trace
def test_published_pico_figures():
    """PICO: binomial bcast from rank 0 on alloc_128_example.csv, n per message."""
    topo = read_map(NODES)
    placement = placement_for(read_allocation(LEONARDO / "alloc_128_example.csv"), topo, None, None)
    doubling, halving = analyse(Tracer(), "bcast", ["binomial_doubling", "binomial_halving"], placement, topo)
    for r, inter, intra in ((doubling, 122, 5), (halving, 37, 90)):
        assert r.ranks == 128 and r.volume.intra_node == 0
        assert (r.in_n(r.volume.inter_group), r.in_n(r.volume.intra_group)) == (inter, intra), r.algorithm
        assert r.in_n(r.volume.total) == 127


@needs.ck_trace
def test_cli_table_csv_json(collkit):
    alloc = str(LEONARDO / "alloc_128_example.csv")
    base = ["traffic", "--collective", "bcast", "--algorithm", "binomial_doubling",
            "--algorithm", "binomial_halving", "--alloc", alloc, "--map", str(NODES)]
    res = collkit(*base)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[1].split()[:8] == ["collective", "algorithm", "ranks", "groups", "intra_node_n",
                                    "intra_group_n", "inter_group_n", "total_n"]
    assert lines[3].split() == ["bcast", "binomial_doubling", "128", lines[3].split()[3], "0", "5", "122",
                                "127", "-"]
    assert lines[4].split()[4:] == ["0", "90", "37", "127", "69.67"]
    res = collkit(*base, "--format", "json", "--per-step")
    data = json.loads(res.stdout)
    assert data[1]["inter_group_n"] == 37 and data[1]["inter_group_reduction_pct"] == pytest.approx(69.67, 0.01)
    assert sum(s["inter_group_bytes"] for s in data[0]["steps"]) == data[0]["inter_group_bytes"]
    res = collkit(*base, "--format", "csv")
    header = res.stdout.splitlines()[0].split(",")
    assert {"intra_node_bytes", "inter_group_bytes", "n_bytes"} <= set(header)


@needs.ck_trace
def test_cli_ranks_without_map_is_one_group(collkit):
    res = collkit("traffic", "--collective", "allreduce", "--algorithm", "ring", "--ranks", "8", "--ppn", "2",
                  "--format", "json")
    assert res.returncode == 0, res.stderr
    (r,) = json.loads(res.stdout)
    assert r["groups"] == 1 and r["nodes"] == 4 and r["inter_group_bytes"] == 0
    # ring neighbours: 4 of 8 pairs inside a node; total 2(p-1) n
    assert r["total_n"] == 14 and r["intra_node_n"] == 7


@needs.ck_trace
def test_cli_jobs(collkit, tmp_path):
    m = write(tmp_path, "map.csv", "".join(f"n{i},g{i // 4}\n" for i in range(16)))
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    write(jobs, "a.csv", "MPI_Rank,allocation\n" + "".join(f"{i},n{i}\n" for i in range(8)))
    write(jobs, "b.txt", "n[0-3]\n")  # one group
    out = tmp_path / "out.csv"
    res = collkit("traffic", "--jobs", str(jobs), "--map", str(m), "--collective", "allreduce",
                  "--algorithm", "recursive_doubling", "--algorithm", "bine_latency", "--out", str(out))
    assert res.returncode == 0, res.stderr
    rows = out.read_text().splitlines()
    assert rows[0] == "job,ranks,groups,recursive_doubling_inter_group_n,bine_latency_inter_group_n,reduction_pct"
    assert rows[2] == "b,4,1,0,0,"
    job, ranks, groups, rd, bine, pct = rows[1].split(",")
    assert (job, ranks, groups) == ("a", "8", "2")
    assert float(rd) == 8  # only the distance-4 step crosses: 8 ranks x n


# Total bytes (in n) over all ranks, from docs/algorithms.md: the per-rank
# figures summed, for p = 2^k and where the documented folding fixes them for
# other p. k = log2 p', e = p - p' (ranks folded away), pc = sum of popcount(r), r < p
# (the depth sum of a binomial tree, i.e. what its subtrees forward).
def _k(p):
    return p.bit_length() - 1


def _pp(p):
    return 1 << _k(p)


def _e(p):
    return p - _pp(p)


def _pc(p):
    return sum(bin(r).count("1") for r in range(p))


ANY = "any"
POW2 = "pow2"
TREE = lambda p: p - 1                                                      # noqa: E731
# binomial scatter (each subtree's blocks once: pc/p) then an allgather ((p-1)n)
SCATTER_ALLGATHER = lambda p: (p - 1) + Fraction(_pc(p), p)                 # noqa: E731
# folded pairs: e whole vectors in, then scatter-allgather / reduce-scatter-gather on p'
FOLDED_SCATTER_ALLGATHER = lambda p: _e(p) + (_pp(p) - 1) + Fraction(_k(p), 2)  # noqa: E731
# allgather: e blocks (n/p) in, (p'-1)n in the core, e whole vectors out;
# reduce-scatter the mirror image
FOLDED_BUTTERFLY = lambda p: Fraction(_e(p), p) + (_pp(p) - 1) + _e(p)      # noqa: E731
ALLREDUCE_LATENCY = lambda p: _pp(p) * _k(p) + 2 * _e(p)                    # noqa: E731
ALLREDUCE_BANDWIDTH = lambda p: 2 * (_pp(p) - 1) + 2 * _e(p)                # noqa: E731
# bine/swing_latency_agreed: the butterfly, plus from p' = 8 on a broadcast of one
# rank's result over the core so that every rank returns the same bits
# (lib/core/bine_latency.c); bine/swing_latency send what recursive doubling sends
BINE_LATENCY = lambda p: ALLREDUCE_LATENCY(p) + (_pp(p) - 1) * (_pp(p) >= 8)  # noqa: E731

# (collective, algorithm, which p, total in n as a function of p)
CONSERVATION = [
    ("bcast", "linear", ANY, TREE),
    ("bcast", "binomial_doubling", ANY, TREE),
    ("bcast", "binomial_halving", ANY, TREE),
    ("bcast", "chain", ANY, TREE),
    ("bcast", "bine", ANY, TREE),
    ("bcast", "scatter_allgather_rd", ANY, SCATTER_ALLGATHER),
    ("bcast", "scatter_allgather_ring", ANY, SCATTER_ALLGATHER),
    ("bcast", "bine_scatter_allgather", ANY, FOLDED_SCATTER_ALLGATHER),
    ("reduce", "linear", ANY, TREE),
    ("reduce", "binomial_doubling", ANY, TREE),
    ("reduce", "binomial_halving", ANY, TREE),
    ("reduce", "bine", ANY, TREE),
    ("reduce", "rabenseifner", ANY, FOLDED_SCATTER_ALLGATHER),
    ("reduce", "rabenseifner_halving", ANY, FOLDED_SCATTER_ALLGATHER),
    ("reduce", "bine_rsag", ANY, FOLDED_SCATTER_ALLGATHER),
    ("gather", "linear", ANY, lambda p: Fraction(p - 1, p)),
    ("gather", "binomial", ANY, lambda p: Fraction(_pc(p), p)),
    ("gather", "bine", POW2, lambda p: Fraction(_k(p), 2)),
    ("gather", "bine_halving", POW2, lambda p: Fraction(_k(p), 2)),
    ("scatter", "linear", ANY, lambda p: Fraction(p - 1, p)),
    ("scatter", "binomial", ANY, lambda p: Fraction(_pc(p), p)),
    ("scatter", "bine", POW2, lambda p: Fraction(_k(p), 2)),
    ("scatter", "bine_halving", POW2, lambda p: Fraction(_k(p), 2)),
    ("allgather", "ring", ANY, TREE),
    ("allgather", "recursive_doubling", ANY, FOLDED_BUTTERFLY),
    ("allgather", "bruck", ANY, TREE),
    ("allgather", "neighbor_exchange", ANY, TREE),
    ("allgather", "sparbit", ANY, TREE),
    ("allgather", "bine_permute", ANY, FOLDED_BUTTERFLY),
    ("allgather", "butterfly_halving", ANY, FOLDED_BUTTERFLY),
    ("allgather", "bine_noncontig", ANY, FOLDED_BUTTERFLY),
    ("allgather", "swing", ANY, FOLDED_BUTTERFLY),
    ("reduce_scatter", "recursive_halving", ANY, FOLDED_BUTTERFLY),
    ("reduce_scatter", "ring", ANY, TREE),
    ("reduce_scatter", "recursive_doubling", POW2, lambda p: p * _k(p) - 2 * p + _k(p) + 2),
    ("reduce_scatter", "bine_permute", ANY, FOLDED_BUTTERFLY),
    ("reduce_scatter", "butterfly_doubling", ANY, FOLDED_BUTTERFLY),
    ("reduce_scatter", "bine_noncontig", ANY, FOLDED_BUTTERFLY),
    ("reduce_scatter", "swing", ANY, FOLDED_BUTTERFLY),
    ("allreduce", "recursive_doubling", ANY, ALLREDUCE_LATENCY),
    ("allreduce", "rabenseifner", ANY, ALLREDUCE_BANDWIDTH),
    ("allreduce", "rabenseifner_halving", ANY, ALLREDUCE_BANDWIDTH),
    ("allreduce", "ring", ANY, lambda p: 2 * (p - 1)),
    ("allreduce", "ring_seg", ANY, lambda p: 2 * (p - 1)),
    ("allreduce", "reduce_bcast", ANY, lambda p: 2 * (p - 1)),
    ("allreduce", "binary_blocks", ANY, lambda p: 2 * (p - 1)),
    ("allreduce", "swing_latency", ANY, ALLREDUCE_LATENCY),
    ("allreduce", "swing_latency_agreed", ANY, BINE_LATENCY),
    ("allreduce", "swing_bandwidth", ANY, ALLREDUCE_BANDWIDTH),
    ("allreduce", "bine_latency", ANY, ALLREDUCE_LATENCY),
    ("allreduce", "bine_latency_agreed", ANY, BINE_LATENCY),
    ("allreduce", "bine_bandwidth", ANY, ALLREDUCE_BANDWIDTH),
    ("allreduce", "bine_bandwidth_seg", ANY, ALLREDUCE_BANDWIDTH),
    ("alltoall", "linear", ANY, TREE),
    ("alltoall", "pairwise", ANY, TREE),
    ("alltoall", "bruck", ANY, lambda p: _pc(p)),   # block j travels popcount(j) hops
    ("alltoall", "bine", POW2, lambda p: Fraction(p * _k(p), 2)),
    ("alltoall", "bine_butterfly", POW2, lambda p: Fraction(p * _k(p), 2)),
    # one sendrecv per phase, the own block sent to itself too (steps = phases)
    *[("alltoall", a, ANY, lambda p: p) for a in ("xor", "fattree_opt")],
    # linear_shift copies its own block: one send in each of the other p - 1 phases
    ("alltoall", "linear_shift", ANY, TREE),
    # node-aware, traced without COLLKIT_RANKS_PER_NODE: one node of p ranks.
    # Parallel Rings move every block once at any node shape; the hierarchical
    # Bine allreduce is then a binomial reduce and broadcast inside the node
    ("allgather", "parallel_rings", ANY, TREE),
    ("reduce_scatter", "parallel_rings", ANY, TREE),
    ("allreduce", "parallel_rings", ANY, lambda p: 2 * (p - 1)),
    ("allreduce", "bine_hierarchical", ANY, lambda p: 2 * (p - 1)),
]
# Bounded rather than exact: the remap variants add a fix-up of one block on
# ranks whose slot differs from their rank (a local copy otherwise).
BOUNDED = [
    ("allgather", "bine_remap", POW2, TREE),
    ("reduce_scatter", "bine_remap", POW2, TREE),
]

# The busiest rank's bytes sent, the "bytes sent per rank" column of
# docs/algorithms.md, for p = 2^k (k = log2 p).
_HALF = lambda p: Fraction(p - 1, p)          # noqa: E731
_TWICE = lambda p: 2 * Fraction(p - 1, p)     # noqa: E731
BUSIEST = {
    ("bcast", "linear"): lambda p: p - 1,
    ("bcast", "binomial_doubling"): _k, ("bcast", "binomial_halving"): _k, ("bcast", "bine"): _k,
    ("bcast", "scatter_allgather_rd"): _TWICE, ("bcast", "scatter_allgather_ring"): _TWICE,
    ("bcast", "bine_scatter_allgather"): _TWICE, ("bcast", "chain"): lambda p: 1,
    ("reduce", "linear"): lambda p: 1, ("reduce", "binomial_doubling"): lambda p: 1,
    ("reduce", "binomial_halving"): lambda p: 1, ("reduce", "bine"): lambda p: 1,
    ("reduce", "rabenseifner"): lambda p: Fraction(3, 2) - Fraction(1, p),
    ("reduce", "rabenseifner_halving"): lambda p: Fraction(3, 2) - Fraction(1, p),
    ("reduce", "bine_rsag"): lambda p: _HALF(p) + Fraction(1, 2),
    ("gather", "linear"): lambda p: Fraction(1, p), ("gather", "binomial"): lambda p: Fraction(1, 2),
    ("gather", "bine"): lambda p: Fraction(1, 2), ("gather", "bine_halving"): lambda p: Fraction(1, 2),
    ("scatter", "bine_halving"): _HALF,
    ("scatter", "linear"): _HALF, ("scatter", "binomial"): _HALF, ("scatter", "bine"): _HALF,
    **{("allgather", a): _HALF for a in ("ring", "recursive_doubling", "bruck", "neighbor_exchange", "sparbit",
                                         "bine_permute", "bine_noncontig", "swing", "butterfly_halving")},
    # the fix-up block is a message only where slot(r) != r: never at p = 2
    ("allgather", "bine_remap"): lambda p: _HALF(p) + Fraction(p > 2, p),
    **{("reduce_scatter", a): _HALF for a in ("recursive_halving", "ring", "bine_permute", "bine_noncontig",
                                              "swing", "butterfly_doubling")},
    ("reduce_scatter", "recursive_doubling"): lambda p: _k(p) - 2 + Fraction(_k(p) + 2, p),
    ("reduce_scatter", "bine_remap"): lambda p: _HALF(p) + Fraction(p > 2, p),
    **{("allreduce", a): _k for a in ("recursive_doubling", "reduce_bcast", "swing_latency", "bine_latency")},
    # rank 0 also roots the broadcast that makes the results agree (p >= 8)
    **{("allreduce", a): lambda p: _k(p) * (1 + (p >= 8)) for a in ("swing_latency_agreed", "bine_latency_agreed")},
    **{("allreduce", a): _TWICE for a in ("rabenseifner", "rabenseifner_halving", "ring", "ring_seg", "binary_blocks", "swing_bandwidth",
                                          "bine_bandwidth", "bine_bandwidth_seg")},
    ("allgather", "parallel_rings"): _HALF, ("reduce_scatter", "parallel_rings"): _HALF,
    ("allreduce", "parallel_rings"): _TWICE, ("allreduce", "bine_hierarchical"): _k,
    ("alltoall", "linear"): _HALF, ("alltoall", "pairwise"): _HALF,
    ("alltoall", "bruck"): lambda p: Fraction(_k(p), 2), ("alltoall", "bine"): lambda p: Fraction(_k(p), 2),
    ("alltoall", "bine_butterfly"): lambda p: Fraction(_k(p), 2),
    **{("alltoall", a): lambda p: 1 for a in ("xor", "fattree_opt")},
    ("alltoall", "linear_shift"): _HALF,
}
# Where the column gives an exact figure for other p too (p' = 2^floor(log2 p)).
BUSIEST_ANY = {
    ("bcast", "scatter_allgather_ring"): _TWICE,
    ("bcast", "bine_scatter_allgather"): lambda p: _TWICE(_pp(p)) + (p != _pp(p)),
    ("allgather", "recursive_doubling"): lambda p: (
        Fraction(_pp(p) - 1 + sum(min(_e(p), 1 << k) for k in range(_k(p))), p) + (p != _pp(p))),
    ("allreduce", "recursive_doubling"): lambda p: _k(p) + (p != _pp(p)),
    ("allreduce", "bine_latency"): lambda p: _k(p) + (p != _pp(p)),
    ("allreduce", "swing_latency"): lambda p: _k(p) + (p != _pp(p)),
    ("allreduce", "bine_latency_agreed"): lambda p: _k(p) * (1 + (_pp(p) >= 8)) + (p != _pp(p)),
    ("allreduce", "swing_latency_agreed"): lambda p: _k(p) * (1 + (_pp(p) >= 8)) + (p != _pp(p)),
    ("allreduce", "rabenseifner"): lambda p: _TWICE(_pp(p)) + (p != _pp(p)),
    ("allreduce", "rabenseifner_halving"): lambda p: _TWICE(_pp(p)) + (p != _pp(p)),
    ("allreduce", "bine_bandwidth"): lambda p: _TWICE(_pp(p)) + (p != _pp(p)),
    ("allreduce", "swing_bandwidth"): lambda p: _TWICE(_pp(p)) + (p != _pp(p)),
    ("allreduce", "ring"): _TWICE,
    ("alltoall", "linear"): _HALF,
}
POW2_P = (2, 4, 8, 16, 32, 64)
OTHER_P = (3, 5, 6, 7, 12, 24, 48)


def _cases(table):
    for coll, alg, which, formula in table:
        for p in POW2_P + (OTHER_P if which == ANY else ()):
            yield pytest.param(coll, alg, p, formula, id=f"{coll}-{alg}-p{p}")


@pytest.fixture(scope="module")
def tracer():
    """One tracer for the module, its traces made in one ck_trace batch."""
    t = Tracer()
    if ck_trace() is not None:
        keys = [TraceKey(c, a, p, trace_count(c, p, a), 0, "int8", "pairs")
                for c, a, _, _ in CONSERVATION + BOUNDED for p in POW2_P + OTHER_P]
        t.get_many(keys)
    return t


def _trace(tracer, coll, alg, p):
    return tracer.get(TraceKey(coll, alg, p, trace_count(coll, p, alg), 0, "int8", "pairs"))


def _total_in_n(tracer, coll, alg, p):
    t = _trace(tracer, coll, alg, p)
    return Fraction(t.total_bytes, t.n)


def _busiest_in_n(tracer, coll, alg, p):
    t = _trace(tracer, coll, alg, p)
    sent = np.bincount(t.src, weights=t.nbytes, minlength=p)
    return Fraction(int(sent.max()), t.n)


@needs.registry
def test_conservation_covers_every_registered_algorithm():
    from collkit.library import registry
    algs = registry.load()
    covered = {(c, a) for c, a, _, _ in CONSERVATION + BOUNDED}
    assert {(a.collective, a.name) for a in algs} == covered


@needs.ck_trace
@pytest.mark.parametrize("coll, alg, p, formula", list(_cases(CONSERVATION)))
def test_conservation(tracer, coll, alg, p, formula):
    assert _total_in_n(tracer, coll, alg, p) == formula(p)


@needs.ck_trace
@pytest.mark.parametrize("coll, alg, p, formula", list(_cases(BOUNDED)))
def test_conservation_bounded(tracer, coll, alg, p, formula):
    got = _total_in_n(tracer, coll, alg, p)
    assert formula(p) <= got <= formula(p) + 1
    assert (got * p).denominator == 1  # whole blocks


@needs.ck_trace
@pytest.mark.parametrize("coll, alg, p", [pytest.param(c, a, p, id=f"{c}-{a}-p{p}")
                                          for (c, a) in BUSIEST for p in POW2_P])
def test_busiest_rank_power_of_two(tracer, coll, alg, p):
    assert _busiest_in_n(tracer, coll, alg, p) == BUSIEST[(coll, alg)](p)


@needs.ck_trace
@pytest.mark.parametrize("coll, alg, p", [pytest.param(c, a, p, id=f"{c}-{a}-p{p}")
                                          for (c, a) in BUSIEST_ANY for p in OTHER_P])
def test_busiest_rank_other_p(tracer, coll, alg, p):
    assert _busiest_in_n(tracer, coll, alg, p) == BUSIEST_ANY[(coll, alg)](p)


def test_busiest_covers_every_conservation_entry():
    assert set(BUSIEST) == {(c, a) for c, a, _, _ in CONSERVATION + BOUNDED}


def _whole_vector_cases() -> list[tuple[str, str]]:
    try:
        return sorted(whole_vector_algorithms())
    except UserError:  # no build: nothing to trace either
        return []


@needs.ck_trace
@pytest.mark.parametrize("coll, alg", _whole_vector_cases())
def test_whole_vector_algorithms_scale_with_the_count(tracer, coll, alg):
    """The algorithms traced at count p send the same pairs at any count,
    bytes in proportion: so count p gives exact multiples of n."""
    for p in (2, 3, 5, 8, 12, 24, 64):
        small = trace_count(coll, p, alg)
        big = 3 * trace_count(coll, p)
        a = tracer.get(TraceKey(coll, alg, p, small, 0, "int8", "pairs"))
        b = tracer.get(TraceKey(coll, alg, p, big, 0, "int8", "pairs"))
        assert a.src.tolist() == b.src.tolist() and a.dst.tolist() == b.dst.tolist(), p
        assert (a.nbytes * big).tolist() == (b.nbytes * small).tolist(), p


# The distance-halving Bine gather at p = 8, root 0, worked out by hand from
# the Bine broadcast tree (root 0 -> 3 -> 4 -> 5 ...: rho = 3, -1, 1 from an
# even rank, negated from an odd one): (sender, receiver, blocks). Every
# subtree is a run of ranks ({2..5} under 3, {6, 7} under 7) and the root's
# half-the-blocks child is 3 ranks away, where MPICH's binomial gather sends
# its half from rank 4.
BINE_HALVING_GATHER_P8 = {(1, 0, 1), (6, 7, 1), (2, 3, 1), (5, 4, 1), (7, 0, 2), (4, 3, 2), (3, 0, 4)}
BINOMIAL_GATHER_P8 = {(1, 0, 1), (3, 2, 1), (5, 4, 1), (7, 6, 1), (2, 0, 2), (6, 4, 2), (4, 0, 4)}


@needs.ck_trace
@pytest.mark.parametrize("coll", ["gather", "scatter"])
def test_bine_halving_runs_the_bine_broadcast_tree_on_runs_of_ranks(tracer, coll):
    for alg, expected in (("bine_halving", BINE_HALVING_GATHER_P8), ("binomial", BINOMIAL_GATHER_P8)):
        t = tracer.get(TraceKey(coll, alg, 8, 1, 0, "int8", "pairs"))  # one byte a block
        got = {(int(s), int(d), int(b)) for s, d, b in zip(t.src, t.dst, t.nbytes)}
        if coll == "scatter":
            expected = {(d, s, b) for s, d, b in expected}
        assert got == expected, alg


@needs.ck_trace
def test_bine_halving_gather_crosses_groups_less_than_binomial_on_unaligned_groups(tracer):
    # 16 ranks in groups of 4 shifted by 2 (ranks 0-1, 2-5, 6-9, 10-13, 14-15),
    # counted by hand from the two trees, in blocks: binomial 24 (the half
    # from 8, the quarters from 4 and 12, the eighths from 2, 6, 10 and 14 all
    # cross), bine_halving 18 (the half from 11 = 0 - 5, the quarters from 3
    # and from 8 to 11, the eighth from 15 = 0 - 1; subtrees [6, 13], [2, 5],
    # [6, 9] and [14, 15] keep the rest inside groups).
    groups = [(r + 2) // 4 for r in range(16)]
    got = {}
    for alg in ("binomial", "bine_halving"):
        t = tracer.get(TraceKey("gather", alg, 16, 1, 0, "int8", "pairs"))
        got[alg] = sum(int(b) for s, d, b in zip(t.src, t.dst, t.nbytes) if groups[s] != groups[d])
    assert got == {"binomial": 24, "bine_halving": 18}


# The Bine butterfly alltoall at p = 8, worked out by hand: step k pairs an
# even rank r with r + rho(k) (rho = 1, -1, 3), each sending the other 4 of
# its 8 blocks. Bruck's pairs at step k are r -> r + 2^k.
BINE_BUTTERFLY_PAIRS_P8 = [{(0, 1), (2, 3), (4, 5), (6, 7)},
                           {(0, 7), (2, 1), (4, 3), (6, 5)},
                           {(0, 3), (2, 5), (4, 7), (6, 1)}]


@needs.ck_trace
def test_bine_butterfly_alltoall_swaps_half_the_blocks_with_its_butterfly_partner(tracer):
    t = tracer.get(TraceKey("alltoall", "bine_butterfly", 8, 1, 0, "int8", "messages"))  # one byte a block
    got = sorted((int(st), int(s), int(d), int(b)) for st, s, d, b in zip(t.step, t.src, t.dst, t.nbytes))
    expected = sorted((k, a, b, 4) for k, pairs in enumerate(BINE_BUTTERFLY_PAIRS_P8)
                      for x, y in pairs for a, b in ((x, y), (y, x)))
    assert got == expected


@needs.ck_trace
def test_bine_butterfly_alltoall_crosses_groups_less_than_bruck(tracer):
    # 8 ranks in two groups of 4, messages of 4 blocks. Bruck's cross 2 of 8 at step 0
    # (r -> r + 1 from 3 and 7), 4 at step 1 (r + 2 from 2, 3, 6, 7), 8 at step 2
    # (r + 4): 14 x 4 = 56. The butterfly's pairs above cross at step 1 ((0, 7) and
    # (4, 3)) and at step 2 ((2, 5) and (6, 1)), each both ways: 8 x 4 = 32.
    groups = [r // 4 for r in range(8)]
    got = {}
    for alg in ("bruck", "bine_butterfly"):
        t = tracer.get(TraceKey("alltoall", alg, 8, 1, 0, "int8", "pairs"))
        got[alg] = sum(int(b) for s, d, b in zip(t.src, t.dst, t.nbytes) if groups[s] != groups[d])
    assert got == {"bruck": 56, "bine_butterfly": 32}


# The XOR butterflies in the Bine butterflies' step order, at p = 8 by hand:
# (step, partner distance, blocks sent). The allgather halves the distance
# while the data doubles (Rabenseifner's allgather half), the reduce-scatter
# doubles the distance while the data halves (its reduce-scatter half);
# recursive_doubling's allgather and recursive_halving's reduce-scatter run
# the opposite orders.
BUTTERFLY_STEPS_P8 = {("allgather", "butterfly_halving"): [(0, 4, 1), (1, 2, 2), (2, 1, 4)],
                      ("allgather", "recursive_doubling"): [(0, 1, 1), (1, 2, 2), (2, 4, 4)],
                      ("reduce_scatter", "butterfly_doubling"): [(0, 1, 4), (1, 2, 2), (2, 4, 1)],
                      ("reduce_scatter", "recursive_halving"): [(0, 4, 4), (1, 2, 2), (2, 1, 1)]}


@needs.ck_trace
@pytest.mark.parametrize("coll, alg", list(BUTTERFLY_STEPS_P8))
def test_xor_butterflies_run_their_distances_in_order(tracer, coll, alg):
    t = tracer.get(TraceKey(coll, alg, 8, 1, 0, "int8", "messages"))  # one byte a block
    got = sorted((int(st), int(s), int(d), int(b)) for st, s, d, b in zip(t.step, t.src, t.dst, t.nbytes))
    expected = sorted((k, r, r ^ dist, nb) for k, dist, nb in BUTTERFLY_STEPS_P8[coll, alg] for r in range(8))
    assert got == expected


@needs.ck_trace
def test_disk_cache_round_trip(tmp_path):
    key = TraceKey("allreduce", "ring", 6, trace_count("allreduce", 6, "ring"), 0, "int8", "messages")
    first = Tracer(cache_root=tmp_path)
    made = first.get(key)
    assert first.generated == 1
    files = list(tmp_path.rglob("*.npz"))
    assert len(files) == 1 and files[0].parent.parent.parent.name == first.version
    second = Tracer(cache_root=tmp_path)
    again = second.get(key)
    assert second.generated == 0 and second.loaded == 1
    for name in ("src", "dst", "nbytes", "step"):
        assert getattr(again, name).tolist() == getattr(made, name).tolist()
    assert (again.messages, again.bytes_per_element, again.n) == (made.messages, made.bytes_per_element, made.n)


@needs.ck_trace
def test_refused_and_unknown_traces_are_user_errors(tmp_path):
    tracer = Tracer(cache_root=tmp_path)
    with pytest.raises(UserError, match="no trace of bcast/linear at p = 4, count 4 root 9"):
        tracer.get(TraceKey("bcast", "linear", 4, 4, 9, "int8", "pairs"))
    got = tracer.get_many([TraceKey("bcast", "nope", 4, 4, 0, "int8", "pairs"),
                           TraceKey("bcast", "linear", 4, 4, 0, "int8", "pairs")])
    assert sum(isinstance(r, TraceFailure) for r in got.values()) >= 1
