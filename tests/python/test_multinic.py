"""Simulated multi-NIC nodes (issue #19): the machine's nics key and its
validation, the explicit-zone platform SimGrid runs (an intra-node message
crosses only the intra-node links, ranks on different NICs each get a whole
NIC), COLLKIT_RANKS_PER_NODE for the simulated run, and `collkit traffic`'s
bytes per NIC (one NIC per direction for the flat ring, every NIC equally for
parallel_rings). The SimGrid checks compile a 30-line program with smpicc; about
10 s in all."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from collkit.campaign import platform as plat
from collkit.common.errors import UserError
from collkit.launch import simgrid as sim_launch
from collkit.simulation import settings
from collkit.simulation.platform_xml import multinic_xml, nic_of, rank_host
from collkit.topology.synthetic import FatTree, preset
from collkit.traffic.nics import nic_load
from collkit.traffic.trace import Trace, TraceKey

import needs
from cli_runner import collkit, one_line_error
from ck_trace_build import ck_trace

from simgrid_paths import SMPICC, SMPIRUN

REPO = Path(__file__).resolve().parents[2]

RAILS = preset("rails4-like")


def write_platform(tmp_path: Path, body: str) -> Path:
    f = tmp_path / "p.toml"
    f.write_text(f'name = "t"\n[simgrid]\n{body}\n')
    return f


# --------------------------------------------------------------------------- the machine and its settings

def test_rails_preset_has_four_nics_per_four_rank_node():
    assert RAILS.nics == 4 and RAILS.ppn == 4 and RAILS.shape == FatTree((64,), (1,))
    assert RAILS.describe()["nics"] == 4
    assert preset("lumi-like").nics == 0      # the cluster platforms are unchanged


def test_platform_file_sets_nics_and_the_run_gets_the_node_variable(tmp_path):
    p = plat.load(write_platform(tmp_path, 'preset = "rails4-like"\nnics = 2\nloopback_bw = "40GBps"'))
    s = p.simgrid
    assert s is not None and s.machine.nics == 2 and s.ppn == 4 and s.machine.loopback_bw == 40e9
    assert settings.node_env(s) == {"COLLKIT_RANKS_PER_NODE": "4"}
    inst, hosts = sim_launch.placement(s, 10)
    assert hosts == [rank_host(r // 4, r % 4) for r in range(10)]
    # a cluster machine needs no variable: SimGrid's hosts are the nodes
    cluster = plat.load(write_platform(tmp_path, 'preset = "fattree-2to1"\nppn = 4')).simgrid
    assert settings.node_env(cluster) == {}


@pytest.mark.parametrize("body, words", [
    ('preset = "rails4-like"\nnics = 8', "needs ppn >= 8"),
    ('preset = "rails4-like"\nnics = -1', "non-negative integer"),
    ('preset = "rails4-like"\nnics = "4"', "non-negative integer"),
    ('preset = "lumi-like"\nppn = 4\nnics = 4', "needs one non-blocking switch"),
    ('preset = "fattree-2to1"\nppn = 4\nnics = 2', "needs one non-blocking switch"),
    ('preset = "rails4-like"\nplacement = "cyclic"', "needs block placement"),
    ('preset = "rails4-like"\nnic = 4', "did you mean 'nics'"),
])
def test_bad_nic_settings_are_one_line_errors(tmp_path, body, words):
    f = write_platform(tmp_path, body)
    with pytest.raises(UserError) as exc:
        plat.load(f)
    text = str(exc.value)
    assert words in text and "\n" not in text and str(f) in text


def test_cli_refuses_bad_nic_settings_with_exit_2(tmp_path):
    f = write_platform(tmp_path, 'preset = "rails4-like"\nnics = 8')
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\ncollectives = ["allgather"]\nsizes = ["8B"]\nranks = [8]\nmpi = ["smpi"]\n'
                    '[backends]\ncollkit = ["allgather/ring"]\n')
    one_line_error(collkit("run", spec, "--platform", f, "--out", tmp_path / "c"), "nics = 8 needs ppn >= 8")


# --------------------------------------------------------------------------- the platform

def test_multinic_xml_binds_each_rank_to_its_nic_and_routes_inside_the_node():
    m = replace(RAILS, nics=2)
    root = ElementTree.fromstring(multinic_xml(m.instance(3), 3, 4).split("\n", 2)[2])
    top = root.find("zone")
    nodes = top.findall("zone")
    assert [z.get("id") for z in nodes] == ["node0", "node1", "node2"]
    hosts = [h.get("id") for z in nodes for h in z.findall("host")]
    assert hosts == [rank_host(i, l) for i in range(3) for l in range(4)]
    routes = {(r.get("src"), r.get("dst")): [(c.get("id"), c.get("direction")) for c in r.findall("link_ctn")]
              for r in nodes[1].findall("route")}
    # rank l leaves and enters through NIC l mod 2
    assert routes[("node1-c3", "node1-sw")] == [("node1-nic1", "UP")]
    assert routes[("node1-sw", "node1-c2")] == [("node1-nic0", "DOWN")]
    # inside the node: the sender's memory link up, the receiver's down, no NIC
    assert routes[("node1-c0", "node1-c3")] == [("node1-mem0", "UP"), ("node1-mem3", "DOWN")]
    assert len(routes) == 4 * 2 + 4 * 3
    assert len(top.findall("zoneRoute")) == 3                  # every pair of nodes, once
    assert [nic_of(l, 2) for l in range(4)] == [0, 1, 0, 1]


def test_multinic_xml_refuses_fewer_ranks_than_nics():
    with pytest.raises(UserError, match="at least 4 ranks per node"):
        multinic_xml(RAILS.instance(2), 2, 2)


PROBE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* mode 0: rank 0 -> rank 1 (one node). mode 1: ranks 0-3 (node 0) -> 4-7 (node 1), all at once. */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, n = 1 << 22, mode = atoi(argv[1]);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    char *b = malloc((size_t)n);
    if (b == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (mode == 0 && r == 0) MPI_Send(b, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
    if (mode == 0 && r == 1) MPI_Recv(b, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (mode == 1 && r < 4) MPI_Send(b, n, MPI_CHAR, r + 4, 0, MPI_COMM_WORLD);
    if (mode == 1 && r >= 4) MPI_Recv(b, n, MPI_CHAR, r - 4, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double t = MPI_Wtime() - t0;
    if ((mode == 0 && r == 1) || (mode == 1 && r >= 4)) printf("recv %d %.9f\n", r, t);
    free(b);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    d = tmp_path_factory.mktemp("probe")
    (d / "probe.c").write_text(PROBE)
    subprocess.run([SMPICC, "-O1", "probe.c", "-o", "probe"], cwd=d, check=True, capture_output=True, timeout=120)
    return d


def simulate(d: Path, nics: int, mode: int) -> dict[int, float]:
    m = replace(RAILS, nics=nics)
    xml = d / f"p{nics}.xml"
    xml.write_text(multinic_xml(m.instance(2), 2, 4))
    hostfile = d / "hosts"
    hostfile.write_text("".join(rank_host(r // 4, r % 4) + "\n" for r in range(8)))
    s = settings.SimSettings(machine=m, ppn=4)
    cfg = [f"--cfg={c}" for c in sim_launch.base_cfg(s)]
    proc = subprocess.run([SMPIRUN, "-platform", str(xml), "-hostfile", str(hostfile), "-np", "8", *cfg,
                           f"--cfg=smpi/tmpdir:{d}", "--log=root.thresh:warning", "./probe", str(mode)],
                          cwd=d, capture_output=True, text=True, timeout=120, env=dict(os.environ, TMPDIR=str(d)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {int(a): float(b) for a, b in re.findall(r"recv (\d+) (\S+)", proc.stdout)}


@needs.simgrid
def test_a_message_inside_a_node_crosses_only_the_intra_node_links(probe):
    n = 1 << 22
    expect = n / RAILS.loopback_bw + 2 * RAILS.loopback_lat     # mem up + mem down, no NIC, no switch
    for nics in (1, 4):
        t = simulate(probe, nics, 0)[1]
        # the barrier lets rank 1 enter up to a few latencies before rank 0 sends
        assert expect - 1e-8 <= t <= expect + 4e-6, (nics, t, expect)


@needs.simgrid
def test_ranks_on_their_own_nics_each_get_a_whole_nic(probe):
    n = 1 << 22
    one = n / RAILS.link_bw + 2 * RAILS.link_lat                 # NIC up, switch (no latency), NIC down
    times = {k: max(simulate(probe, k, 1).values()) for k in (1, 2, 4)}
    for k, t in times.items():
        # four flows over k NICs: 4/k flows share each NIC
        expect = (4 // k) * n / RAILS.link_bw + 2 * RAILS.link_lat
        assert expect - 1e-8 <= t <= expect + 4e-6, (k, t, expect)
    assert times[4] <= one + 4e-6


# --------------------------------------------------------------------------- traffic per NIC

def synthetic_trace(src, dst, nbytes, step, ranks) -> Trace:
    key = TraceKey("allgather", "x", ranks, ranks, fmt="messages")
    return Trace(key, 1, len(src), np.array(src, np.int32), np.array(dst, np.int32),
                 np.array(nbytes, np.int64), np.array(step, np.int32))


def test_nic_load_counts_off_node_bytes_on_the_two_nics_and_intra_node_on_neither():
    # 8 ranks, 4 per node, 2 NICs: rank 1 -> rank 6 (NIC 1 out of node 0, NIC 0 into node 1),
    # rank 0 -> rank 2 inside node 0, rank 7 -> rank 3 (NIC 1 -> NIC 1)
    t = synthetic_trace([1, 0, 7, 1], [6, 2, 3, 5], [10, 5, 3, 2], [0, 0, 0, 1], 8)
    x = nic_load(t, 4, 2)
    assert x.intra_node == 5
    assert x.out_bytes == (0, 15) and x.in_bytes == (10, 5)
    assert x.busiest_out == 12 and x.busiest_in == 10            # node 0's NIC 1 sends 10 + 2
    assert x.inter_sends == 2                                      # rank 1
    assert x.steps == ((0, 13), (0, 2))


@needs.ck_trace
def test_flat_ring_leaves_each_node_by_one_nic_and_enters_by_another(tmp_path):
    from collkit.traffic.analysis import message_traces
    from collkit.traffic.tracer import Tracer
    tracer = Tracer(binary=ck_trace(), cache_root=tmp_path)
    (t,) = message_traces(tracer, "allgather", ["ring"], 32)
    x = nic_load(t, 4, 4)
    # rank 4i+3 sends every block to the next node through NIC 3; rank 4i receives on NIC 0
    assert x.out_bytes[:3] == (0, 0, 0) and x.in_bytes[1:] == (0, 0, 0)
    assert x.out_bytes[3] == x.in_bytes[0] > 0
    assert x.balance == pytest.approx(4.0)
    assert x.inter_sends == 31                                     # P - 1 inter-node steps


@needs.ck_trace
@pytest.mark.parametrize("collective", ["allgather", "reduce_scatter", "allreduce"])
def test_parallel_rings_spread_the_bytes_over_every_nic(tmp_path, monkeypatch, collective):
    from collkit.traffic.analysis import message_traces
    from collkit.traffic.tracer import Tracer
    monkeypatch.setenv("COLLKIT_RANKS_PER_NODE", "4")
    tracer = Tracer(binary=ck_trace(), cache_root=tmp_path)
    p, k = 32, 4
    ring, pr = message_traces(tracer, collective, ["ring", "parallel_rings"], p)
    xr, xp = nic_load(ring, k, k), nic_load(pr, k, k)
    assert len(set(xp.out_bytes)) == 1 and len(set(xp.in_bytes)) == 1 and xp.out_bytes[0] > 0
    assert xp.balance == pytest.approx(1.0)
    # one block per inter-node step: the busiest NIC sends P/k - 1 blocks per ring
    # instead of the flat ring's P - 1
    assert xp.busiest_out * (p - 1) == xr.busiest_out * (p // k - 1)
    rounds = 2 if collective == "allreduce" else 1                 # reduce-scatter + allgather
    assert xp.inter_sends == rounds * (p // k - 1)                 # P/k - 1 inter-node steps per ring
    assert xr.inter_sends == rounds * (p - 1)


@needs.ck_trace
def test_traffic_cli_reports_nics_and_refuses_more_nics_than_ranks(tmp_path):
    env = {"COLLKIT_TRACE_CACHE": str(tmp_path), "COLLKIT_RANKS_PER_NODE": None}
    base = ["traffic", "--collective", "allgather", "--algorithm", "ring"]
    proc = collkit(*base, "--ranks", "16", "--ppn", "4", "--nics", "4", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    (ring,) = out["nics"]
    assert ring["nic_out_n"] == [0, 0, 0, 3.75] and ring["nic_in_n"] == [3.75, 0, 0, 0]   # 4 nodes x 15/16 n
    assert ring["busiest_nic_out_n"] == 0.9375 and ring["inter_node_sends_max"] == 15
    assert out["traffic"][0]["algorithm"] == "ring"
    bad = collkit(*base, "--ranks", "16", "--ppn", "2", "--nics", "4", env=env)
    assert one_line_error(bad) == "collkit: error: --nics 4 needs at least 4 ranks per node (--ppn), not 2"
