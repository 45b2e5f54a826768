"""Synthetic machines (collkit.topology.synthetic), their SimGrid platforms
(collkit.simulation.platform_xml) and traffic on them (`collkit traffic --map sim:NAME`).

The SimGrid tests compile a two-rank ping-pong with smpicc and check the
simulated one-way time between nodes of different groups against the model's
latency + size/bandwidth: the platform says what the model says. They skip,
saying so, where smpicc/smpirun are not installed (libsimgrid-dev, simgrid)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
import xml.etree.ElementTree as ET

import pytest

from collkit.common.errors import UserError
from collkit.simulation.platform_xml import platform_xml
from collkit.topology.synthetic import (
    PRESETS,
    Dragonfly,
    FatTree,
    Machine,
    Torus,
    from_table,
    parse_bandwidth,
    parse_latency,
    parse_speed,
    preset,
)


# ------------------------------------------------------------------ shapes and instances

def test_presets_describe_and_fit_their_real_node_counts():
    assert {"lumi-like", "leonardo-like", "marenostrum5-like", "fugaku-like"} <= set(PRESETS)
    expected = {"lumi-like": 2978, "leonardo-like": 3456, "marenostrum5-like": 6408, "fugaku-like": 158976}
    for name, nodes in expected.items():
        m = preset(name)
        assert m.max_nodes == nodes
        assert m.shape.capacity >= nodes
        d = json.loads(json.dumps(m.describe()))
        assert d["name"] == name and d["kind"] == m.kind and d["source"]
    assert preset("marenostrum5-like").shape.oversubscription() == [1.0, 2.0]


def test_fat_tree_instance_is_whole_pods_of_the_same_tree():
    m = Machine("t", FatTree((16, 16), (1, 8)), link_bw=25e9, link_lat=1e-6)
    assert m.shape.capacity == 256 and m.shape.oversubscription() == [2.0]
    inst = m.instance(40)
    assert inst.nodes == 48 and inst.shape == FatTree((16, 3), (1, 8))
    assert inst.hosts[:2] == ("node0", "node1") and len(inst.hosts) == 48
    topo = inst.topology()
    assert topo.groups == 3 and len(topo.switch_names) == 3
    assert topo.node_group.tolist() == [i // 16 for i in range(48)]
    # Three levels: the group is the level-2 subtree, the switch the leaf.
    m3 = Machine("t3", FatTree((4, 5, 6), (1, 4, 2)), link_bw=1e9, link_lat=1e-6)
    inst3 = m3.instance(21)
    assert inst3.nodes == 40 and inst3.shape.down == (4, 5, 2)
    t3 = inst3.topology()
    assert t3.groups == 2 and len(t3.switch_names) == 10
    assert t3.nodes[19].group == "pod0" and t3.nodes[20].group == "pod1" and t3.nodes[20].switch == "leaf5"


def test_dragonfly_instance_is_whole_groups():
    m = Machine("d", Dragonfly(groups=6, routers=8, nodes=4, global_links=3, local_links=2),
                link_bw=10e9, link_lat=1e-6)
    inst = m.instance(33)
    assert inst.nodes == 64 and inst.shape.groups == 2
    topo = inst.topology()
    assert topo.kind == "dragonfly" and topo.groups == 2 and len(topo.switch_names) == 16
    assert topo.nodes[35] .group == "group1" and topo.nodes[35].switch == "router8"
    assert inst.shape.topo_parameters() == "2,3;1,1;8,2;4"


def test_torus_instance_is_the_smallest_box_of_whole_units():
    m = preset("fugaku-like")
    for nodes in (1, 12, 13, 64, 256, 1000):
        inst = m.instance(nodes)
        assert inst.nodes >= nodes
        assert all(d % u == 0 for d, u in zip(inst.shape.dims, inst.shape.unit))
        # nothing smaller made of whole 2x3x2 units holds the nodes
        units = -(-nodes // 12)
        assert inst.nodes == 12 * units or all(
            a * b * c != units
            for a in range(1, 25) for b in range(1, 24) for c in range(1, 25))
    inst = m.instance(64)
    assert inst.nodes == 72
    topo = inst.topology()
    assert topo.groups == 6 and all(n.switch is None for n in topo.nodes)
    assert sum(1 for g in topo.node_group.tolist() if g == 0) == 12


def test_routes_between_used_nodes_do_not_change_when_fat_trees_and_dragonflies_are_cut():
    for m in (preset("marenostrum5-like"), preset("lumi-like"), preset("fattree-2to1")):
        full = m.instance(m.max_nodes)
        small = m.instance(300)
        for a, b in ((0, 1), (0, 17), (5, 250), (299, 3), (130, 170)):
            assert small.route(a, b) == full.route(a, b)


def test_route_link_classes():
    lumi = preset("lumi-like").instance(256)
    assert [x.what for x in lumi.route(0, 255)] == ["node", "local", "global", "local", "node"]
    assert [x.what for x in lumi.route(0, 1)] == ["node", "node"]
    assert [x.what for x in lumi.route(3, 3)] == ["loopback"]
    glob = lumi.route(0, 255)[2]
    assert glob.bw == 25e9 * 20
    ft = preset("fattree-2to1").instance(64)
    assert [x.what for x in ft.route(0, 63)] == ["up-1", "up-2", "down-2", "down-1"]
    torus = Machine("r", Torus((8, 4), (2, 2)), link_bw=1e9, link_lat=1e-7).instance(32)
    assert len(torus.route(0, 7)) == 1          # wraps round x
    assert len(torus.route(0, 4 + 8 * 2)) == 6  # 4 along x, 2 along y


@pytest.mark.parametrize("make, message", [
    (lambda: Dragonfly(groups=9, routers=8, nodes=2), "9 groups need at least 9 routers per group"),
    (lambda: FatTree((16, 16), (2, 8)), "up[0]"),
    (lambda: FatTree((16, 16), (1,)), "2 levels of children but 1 of parents"),
    (lambda: FatTree((16, 0), (1, 8)), "positive integers"),
    (lambda: Torus((6, 4), (4, 2)), "does not tile"),
    (lambda: Machine("x", FatTree((4,), (1,)), link_bw=-1, link_lat=0), "link_bw must be positive"),
    (lambda: Machine("x", FatTree((4,), (1,)), link_bw=1e9, link_lat=0, max_nodes=5), "max_nodes must be 1..4"),
    (lambda: preset("fattree-2to1").instance(1025), "1025 nodes do not fit fattree-2to1: it has 1024"),
    (lambda: preset("fattree-2to1").instance(0), "at least one node"),
    (lambda: preset("lumi_like"), "did you mean 'lumi-like'"),
])
def test_errors_are_one_line_user_errors(make, message):
    with pytest.raises(UserError) as exc:
        make()
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_sim_prefix_and_case_name_the_same_preset():
    assert preset("sim:LUMI-like") is preset("lumi-like")


# ------------------------------------------------------------------ tables and units

def test_units():
    assert parse_bandwidth("25GBps", "x") == 25e9
    assert parse_bandwidth("200Gbps", "x") == 25e9
    assert parse_bandwidth("1KiBps", "x") == 1024
    assert parse_bandwidth(3e9, "x") == 3e9
    assert parse_latency("500ns", "x") == pytest.approx(5e-7)
    assert parse_latency("1.5us", "x") == pytest.approx(1.5e-6)
    assert parse_speed("10Gf", "x") == 1e10
    for bad, fn in (("25GB", parse_bandwidth), ("fast", parse_latency), ("10G", parse_speed)):
        with pytest.raises(UserError):
            fn(bad, "x")


def test_from_table_preset_with_overrides_and_kinds():
    m = from_table({"preset": "marenostrum5-like", "link_bw": "100Gbps", "speed": "5Gf"}, "p.toml")
    assert m.kind == "fattree" and m.link_bw == 12.5e9 and m.speed == 5e9
    assert m.shape == preset("marenostrum5-like").shape and m.max_nodes == 6408
    assert "p.toml" in m.source
    d = from_table({"kind": "dragonfly", "groups": 4, "routers": 4, "nodes_per_router": 2, "global_links": 2,
                    "link_bw": "25GBps", "link_lat": "1us", "ppn": 4}, "q.toml")
    assert d.shape == Dragonfly(4, 4, 2, 2, 1) and d.ppn == 4 and d.max_nodes == 32
    t = from_table({"kind": "torus", "dims": [4, 4, 4], "unit": [2, 2, 2], "link_bw": 1e9, "link_lat": 1e-7},
                   "r.toml")
    assert t.shape.group_size == 8
    f = from_table({"kind": "fattree", "down": [16, 16], "up": [1, 8], "link_bw": 1e9, "link_lat": 0}, "s")
    assert f.shape.xgft() == "2;16,16;1,8"


@pytest.mark.parametrize("table, message", [
    ({"kind": "fattree", "down": [4], "up": [1], "link_bw": 1, "link_lat": 0, "grups": 2}, "did you mean 'groups'"),
    ({"kind": "fatree"}, "did you mean 'fattree'"),
    ({"link_bw": 1}, "kind"),
    ({"kind": "torus", "link_bw": 1, "link_lat": 0}, "a torus needs dims"),
    ({"kind": "fattree", "down": [4], "up": [1], "link_lat": 0}, "link_bw is required"),
    ({"kind": "fattree", "down": [4], "up": [1], "link_bw": 1, "link_lat": 0, "dims": [2]}, "belongs to a torus"),
    ({"preset": "lumi-like", "groups": 40}, "40 groups need at least 40 routers"),
    ({"preset": "lumi-like", "link_lat": "soon"}, "not a latency"),
])
def test_from_table_errors(table, message):
    with pytest.raises(UserError) as exc:
        from_table(table, "plat.toml")
    assert message in str(exc.value) and "plat.toml" in str(exc.value)


# ------------------------------------------------------------------ platform XML

def test_platform_xml_is_one_cluster_with_the_models_numbers():
    inst = preset("leonardo-like").instance(200)
    root = ET.fromstring(platform_xml(inst, 4))
    assert root.tag == "platform" and root.get("version") == "4.1"
    (world,) = list(root)          # SimGrid 4 crashes on a top-level cluster: it sits in a zone
    assert world.tag == "zone" and world.get("routing") == "Full"
    (cluster,) = list(world)
    assert cluster.tag == "cluster"
    a = cluster.attrib
    assert a["topology"] == "DRAGONFLY" and a["topo_parameters"] == "2,18;1,1;20,1;9"
    assert a["radical"] == "0-359" and a["prefix"] == "node" and a["core"] == "4"
    assert a["sharing_policy"] == "SPLITDUPLEX"
    assert float(a["bw"].removesuffix("Bps")) == 25e9 and float(a["lat"].removesuffix("s")) == 5e-7
    assert float(a["speed"].removesuffix("f")) == inst.machine.speed
    assert float(a["loopback_bw"].removesuffix("Bps")) == inst.machine.loopback_bw
    with pytest.raises(UserError):
        platform_xml(inst, 0)


PINGPONG = (Path(__file__).parent / "fixtures" / "sim_pingpong.c").read_text()

import needs  # noqa: E402
from cli_runner import one_line_error  # noqa: E402
from simgrid_paths import SMPICC, SMPIRUN  # noqa: E402


# Ranks 0 and 1 each send n bytes to rank 2 and rank 3 at the same time; the
# receivers print how long their message took.
TWO_FLOWS = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long n = atol(argv[1]);
    char *buf = calloc((size_t)n, 1);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank < 2) MPI_Send(buf, (int)n, MPI_CHAR, rank + 2, 0, MPI_COMM_WORLD);
    else MPI_Recv(buf, (int)n, MPI_CHAR, rank - 2, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank >= 2) printf("flow %.9e\n", MPI_Wtime() - t0);
    free(buf);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def pingpong(tmp_path_factory):
    d = tmp_path_factory.mktemp("pingpong")
    for name, text in (("pp", PINGPONG), ("two", TWO_FLOWS)):
        (d / f"{name}.c").write_text(text)
        subprocess.run([SMPICC, "-O1", "-o", str(d / name), str(d / f"{name}.c")], check=True,
                       capture_output=True, timeout=120)
    return d


def simulate(d, inst, program, hosts, args, ppn=1):
    xml = d / "platform.xml"
    xml.write_text(platform_xml(inst, ppn))
    hostfile = d / "hosts"
    hostfile.write_text("".join(f"{inst.hosts[i]}\n" for i in hosts))
    out = subprocess.run(
        [SMPIRUN, "-platform", str(xml), "-hostfile", str(hostfile), "-np", str(len(hosts)),
         "--cfg=smpi/simulate-computation:no", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
         "--cfg=smpi/wtime:0", "--cfg=smpi/tmpdir:" + str(d), str(d / program), *map(str, args)],
        capture_output=True, text=True, timeout=120, cwd=d)
    assert out.returncode == 0, out.stderr[-2000:]
    values = [float(x.split()[1]) for x in out.stdout.splitlines() if x.startswith(("oneway ", "flow "))]
    assert values, out.stdout + out.stderr[-2000:]
    return values


def simulated_oneway(d, inst, a, b, size, ppn=1):
    return simulate(d, inst, "pp", (a, b), (size,), ppn)[0]


SMPI_ENVELOPE = 16

CASES = [
    # machine, nodes asked, pairs (a, b) of different groups and one of the same switch
    ("fattree-2to1", 64, [(0, 63), (3, 37), (0, 1)]),
    ("marenostrum5-like", 200, [(0, 319), (20, 150), (0, 1)]),
    ("dragonfly-small", 64, [(0, 63), (32, 15), (17, 8)]),
    ("leonardo-like", 300, [(0, 359), (10, 200), (137, 64)]),
    ("fugaku-like", 64, [(0, 71), (3, 41), (17, 8)]),
]


@needs.simgrid
@pytest.mark.parametrize("name, nodes, pairs", CASES)
def test_simulated_time_is_latency_plus_size_over_bandwidth(pingpong, name, nodes, pairs):
    inst = preset(name).instance(nodes)
    groups = inst.topology().node_group
    assert groups[pairs[0][0]] != groups[pairs[0][1]]
    for a, b in pairs:
        for size in (0, 1 << 20):
            model = inst.transfer_time(a, b, size)
            sim = simulated_oneway(pingpong, inst, a, b, size)
            assert sim == pytest.approx(model, rel=0.03), (name, a, b, size, inst.route(a, b))
            # What is left is exact: SMPI 3.32 sends every message as if it were
            # SMPI_ENVELOPE bytes longer (measured on several bandwidths).
            assert sim == pytest.approx(inst.transfer_time(a, b, size + SMPI_ENVELOPE), rel=1e-6)


@needs.simgrid
def test_ranks_of_one_node_use_the_loopback_and_cut_instances_keep_times(pingpong):
    inst = preset("dragonfly-small").instance(64)
    sim = simulated_oneway(pingpong, inst, 5, 5, 1 << 20, ppn=2)
    assert sim == pytest.approx(inst.transfer_time(5, 5, (1 << 20) + SMPI_ENVELOPE), rel=1e-6)
    full = preset("dragonfly-small").instance(256)
    for a, b in ((0, 63), (40, 7)):
        assert simulated_oneway(pingpong, inst, a, b, 1 << 16) == simulated_oneway(pingpong, full, a, b, 1 << 16)


# ------------------------------------------------------------------ traffic on a simulated machine

@needs.ck_trace
def test_traffic_counts_groups_of_the_instance(collkit):
    # Recursive doubling on 64 ranks, one per node, pods of 16: the steps at
    # distance 16 and 32 cross pods (2 x 64 messages of n), the other four do not.
    r = collkit("traffic", "--collective", "allreduce", "--algorithm", "recursive_doubling", "--ranks", "64",
                "--map", "sim:fattree-2to1", "--format", "json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert (row["nodes"], row["groups"]) == (64, 4)
    assert (row["intra_node_n"], row["intra_group_n"], row["inter_group_n"]) == (0, 256, 128)
    r = collkit("traffic", "--collective", "allreduce", "--algorithm", "recursive_doubling", "--ranks", "64",
                "--ppn", "4", "--map", "sim:fattree-2to1", "--format", "json")
    (row,) = json.loads(r.stdout)
    assert (row["nodes"], row["groups"]) == (16, 1)
    assert (row["intra_node_n"], row["intra_group_n"], row["inter_group_n"]) == (128, 256, 0)


@needs.ck_trace
def test_traffic_on_an_allocation_of_a_simulated_machine(collkit, tmp_path):
    # lumi-like groups hold 128 nodes: node0/node1 and node128/node129 are two groups.
    alloc = tmp_path / "hosts"
    alloc.write_text("node0\nnode1\nnode128\nnode129\n")
    r = collkit("traffic", "--collective", "allreduce", "--algorithm", "recursive_doubling", "--alloc", str(alloc),
                "--map", "sim:lumi-like", "--format", "json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert (row["groups"], row["intra_group_n"], row["inter_group_n"]) == (2, 4, 4)
    alloc.write_text("node0\nnode99999\n")
    r = collkit("traffic", "--collective", "allreduce", "--algorithm", "recursive_doubling", "--alloc", str(alloc),
                "--map", "sim:lumi-like")
    one_line_error(r, "node99999' is not in the map sim:lumi-like")


def test_traffic_sim_errors(collkit):
    r = collkit("traffic", "--collective", "allreduce", "--algorithm", "ring", "--ranks", "8", "--map", "sim:lumy-like")
    one_line_error(r, "did you mean 'lumi-like'")
    r = collkit("traffic", "--collective", "allreduce", "--algorithm", "ring", "--ranks", "5000",
                "--map", "sim:lumi-like")
    one_line_error(r, "do not fit lumi-like")


@needs.simgrid
def test_parallel_fat_tree_links_carry_two_flows_at_full_speed(pingpong):
    size = 1 << 24
    alone = size / 1e9
    for parallel, expect in (((1, 1), 2 * alone), ((1, 2), alone)):
        inst = Machine("p", FatTree((4, 2), (1, 1), parallel), link_bw=1e9, link_lat=1e-6).instance(8)
        assert inst.shape.oversubscription() == [4 / parallel[1]]
        # 0 -> 4 and 1 -> 5 cross from leaf 0 to leaf 1 through the one top switch
        times = simulate(pingpong, inst, "two", (0, 1, 4, 5), (size,))
        assert times == pytest.approx([expect, expect], rel=0.01)
