"""Dragonfly global links of their own (issue #53): ``global_link_lat`` (the
longer latency of the links between groups) and ``background_load`` (the share
of each global link's capacity other jobs use), written as an explicit
dragonfly (collkit.simulation.platform_xml.dragonfly_xml) because SimGrid's
DRAGONFLY cluster gives every link one latency and one base bandwidth.

The SimGrid tests compile two probes with smpicc and run them with smpirun on
the platform files directly (CM02, crosstraffic off, as test_synthetic.py), so
a difference in the simulated times can only come from the platform."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
import xml.etree.ElementTree as ET

import pytest

import needs
from cli_runner import collkit, one_line_error
from collkit.common.errors import UserError
from collkit.simulation.platform_xml import platform_xml
from collkit.topology.synthetic import Dragonfly, Machine, from_table, preset
from simgrid_paths import SMPICC, SMPIRUN

SMPI_ENVELOPE = 16      # SMPI sends every message as if it were 16 bytes longer (test_synthetic.py)

# dragonfly-small: 8 routers x 4 nodes per group, so group 0 = node0..31,
# group 1 = node32..63, group 2 = node64..95.
GROUP = 32


def small(**keys) -> Machine:
    return from_table({"preset": "dragonfly-small", **keys}, source="t.toml")


# ------------------------------------------------------------------ the model and its checks

def test_global_link_latency_and_load_enter_the_route_of_the_global_link_only():
    plain = preset("dragonfly-small").instance(96)
    slow = small(global_link_lat="2us", background_load=0.25).instance(96)
    # node0 is on router 0 of group 0; group 1's link is on router 1 of group 0,
    # and arrives at router 0 of group 1; node63 is on router 7 of group 1.
    assert [x.what for x in slow.route(0, 63)] == ["node", "local", "global", "local", "node"]
    for a, b in zip(plain.route(0, 63), slow.route(0, 63)):
        if a.what == "global":
            assert (b.lat, b.bw) == (2e-6, 25e9 * 2 * 0.75)
        else:
            assert a == b
    assert slow.route(0, 31) == plain.route(0, 31)          # inside group 0: no global link
    assert slow.machine.describe()["global_link_lat_s"] == 2e-6
    assert plain.machine.describe()["global_link_lat_s"] == 0.5e-6     # the default: link_lat


def test_todays_platforms_stay_clusters_and_the_new_keys_make_the_explicit_dragonfly():
    inst = preset("dragonfly-small").instance(64)
    assert ET.fromstring(platform_xml(inst, 1)).find("zone/cluster") is not None
    for machine in (small(global_link_lat="0.5us"), small(background_load=0.1)):
        root = ET.fromstring(platform_xml(machine.instance(64), 2))
        assert root.find("zone/cluster") is None
        groups = root.findall("zone/zone")
        assert [g.get("id") for g in groups] == ["g0", "g1"]
        assert len(groups[0].findall("host")) == GROUP and groups[0].find("host").get("core") == "2"
        (link,) = root.findall("zone/link")
        (route,) = root.findall("zone/zoneRoute")
        # router j of every group holds the link to group j, as SimGrid's cluster
        assert (route.get("gw_src"), route.get("gw_dst")) == ("g0-r1", "g1-r0")
        bw = float(link.get("bandwidth").removesuffix("Bps"))
        assert bw == 25e9 * 2 * (1 - machine.background_load)
    with pytest.raises(UserError, match="only a dragonfly"):
        platform_xml(preset("fattree-2to1").instance(16), 1, explicit=True)


@pytest.mark.parametrize("keys, message", [
    ({"global_link_lat": float("nan")}, "global_link_lat must be a latency >= 0"),
    ({"global_link_lat": -1e-6}, "global_link_lat must be a latency >= 0"),
    ({"global_link_lat": "-1us"}, "is not a latency"),
    ({"background_load": 1.0}, "background_load must be 0 <= load < 1"),
    ({"background_load": 1.5}, "background_load must be 0 <= load < 1"),
    ({"background_load": -0.1}, "background_load must be 0 <= load < 1"),
    ({"background_load": float("inf")}, "background_load must be"),
    ({"background_load": "0.3"}, "background_load must be"),
])
def test_bad_values_name_the_key(keys, message):
    with pytest.raises(UserError, match=message) as err:
        small(**keys)
    assert str(err.value).startswith("t.toml: ")


@pytest.mark.parametrize("table, message", [
    ({"preset": "fattree-2to1", "global_link_lat": "2us"}, "global_link_lat belongs to a dragonfly, not a fattree"),
    ({"kind": "torus", "dims": [4, 4], "link_bw": 1e9, "link_lat": 1e-6, "background_load": 0.2},
     "background_load belongs to a dragonfly, not a torus"),
])
def test_the_keys_belong_to_dragonflies(table, message):
    with pytest.raises(UserError, match=message):
        from_table(table, source="t.toml")
    with pytest.raises(UserError, match="applies to a dragonfly"):
        Machine("m", preset("fattree-2to1").shape, link_bw=1e9, link_lat=1e-6, global_link_lat=1e-6)


SPEC = ('name = "g"\ncollectives = ["bcast"]\nsizes = ["1KiB"]\nranks = [4]\nmpi = ["smpi"]\n'
        '[backends]\ncollkit = ["bine"]\n[measure]\nmin_iterations = 1\nmax_iterations = 1\n')


@pytest.mark.parametrize("keys, message", [
    ("global_link_lat = nan", "global_link_lat must be a latency >= 0"),
    ("global_link_lat = -1e-6", "global_link_lat must be a latency >= 0"),
    ("background_load = 1.0", "background_load must be 0 <= load < 1"),
    ("background_load = 2", "background_load must be 0 <= load < 1"),
    ("background_load = -0.1", "background_load must be 0 <= load < 1"),
    ('preset = "fattree-2to1"\nbackground_load = 0.3', "background_load belongs to a dragonfly, not a fattree"),
    ('preset = "fugaku-like"\nglobal_link_lat = "1us"', "global_link_lat belongs to a dragonfly, not a torus"),
])
def test_bad_platform_files_are_one_line_errors(tmp_path, keys, message):
    body = keys if keys.startswith("preset") else f'preset = "dragonfly-small"\n{keys}'
    (tmp_path / "df.toml").write_text(f"[simgrid]\n{body}\n")
    (tmp_path / "spec.toml").write_text(SPEC)
    line = one_line_error(collkit("run", "spec.toml", "--platform", "df.toml", "--out", "c", cwd=tmp_path), message)
    assert "df.toml" in line


# ------------------------------------------------------------------ simulated

COLL = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* One call of each of four collectives, barrier-aligned; rank 0 prints the
 * slowest rank's time of each. */
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long n = atol(argv[1]);
    char *a = calloc((size_t)n * size, 1), *b = calloc((size_t)n * size, 1);
    if (!a || !b) MPI_Abort(MPI_COMM_WORLD, 1);
    double t[4];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(a, b, (int)n, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD);
    t[0] = MPI_Wtime() - t0; MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime();
    MPI_Bcast(a, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
    t[1] = MPI_Wtime() - t0; MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime();
    MPI_Alltoall(a, (int)n, MPI_CHAR, b, (int)n, MPI_CHAR, MPI_COMM_WORLD);
    t[2] = MPI_Wtime() - t0; MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime();
    MPI_Allgather(a, (int)n, MPI_CHAR, b, (int)n, MPI_CHAR, MPI_COMM_WORLD);
    t[3] = MPI_Wtime() - t0;
    double m[4];
    MPI_Reduce(t, m, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("time %.12e %.12e %.12e %.12e\n", m[0], m[1], m[2], m[3]);
    free(a); free(b);
    MPI_Finalize();
    return 0;
}
"""

PINGPONG = (Path(__file__).parent / "fixtures" / "sim_pingpong.c").read_text()   # prints "oneway S"


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    d = tmp_path_factory.mktemp("dragonfly")
    for name, text in (("coll", COLL), ("pp", PINGPONG)):
        (d / f"{name}.c").write_text(text)
        subprocess.run([SMPICC, "-O1", "-o", str(d / name), str(d / f"{name}.c")], check=True,
                       capture_output=True, timeout=120)
    return d


def simulate(d, xml_text, hosts, program, size):
    xml = d / "platform.xml"
    xml.write_text(xml_text)
    (d / "hosts").write_text("".join(f"node{i}\n" for i in hosts))
    out = subprocess.run(
        [SMPIRUN, "-platform", str(xml), "-hostfile", str(d / "hosts"), "-np", str(len(hosts)),
         "--cfg=smpi/simulate-computation:no", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
         "--cfg=smpi/wtime:0", "--cfg=smpi/tmpdir:" + str(d), str(d / program), str(size)],
        capture_output=True, text=True, timeout=300, cwd=d)
    assert out.returncode == 0, out.stderr[-2000:]
    (line,) = [x for x in out.stdout.splitlines() if x.startswith(("time ", "oneway "))]
    return [float(v) for v in line.split()[1:]]


@needs.simgrid
@pytest.mark.parametrize("hosts, ppn", [
    ([0, 5, 13, 31, 32, 40, 45, 63, 64, 70, 95, 3], 1),     # three groups, several routers each
    ([1, 1, 33, 33, 62, 62, 94, 94], 2),                    # two ranks per node: the loopback too
])
def test_the_explicit_dragonfly_simulates_the_clusters_times(probes, hosts, ppn):
    # With the global links as SimGrid's cluster has them, the explicit file
    # must give the same times: same links, same routes, same sharing (the
    # alltoall and allgather load shared links with several flows at once).
    inst = preset("dragonfly-small").instance(96)
    for size in (8, 1 << 16):
        cluster = simulate(probes, platform_xml(inst, ppn), hosts, "coll", size)
        explicit = simulate(probes, platform_xml(inst, ppn, explicit=True), hosts, "coll", size)
        assert explicit == pytest.approx(cluster, rel=1e-9, abs=0), (size, cluster, explicit)
        assert min(cluster) > 0


@needs.simgrid
def test_a_longer_global_latency_adds_its_difference_once_per_crossing(probes):
    # 8 B from node0 (group 0, router 0) to node63 (group 1, router 7): node,
    # local, global, local, node. One-way time = 4 x 0.5 us + the global
    # link's latency + (8 + 16) B over the node link's 25 GB/s.
    base = simulate(probes, platform_xml(preset("dragonfly-small").instance(64), 1), [0, 63], "pp", 8)[0]
    slow = simulate(probes, platform_xml(small(global_link_lat="3us").instance(64), 1), [0, 63], "pp", 8)[0]
    wire = (8 + SMPI_ENVELOPE) / 25e9
    assert base == pytest.approx(5 * 0.5e-6 + wire, rel=1e-9)
    assert slow == pytest.approx(4 * 0.5e-6 + 3e-6 + wire, rel=1e-9)
    assert slow - base == pytest.approx(3e-6 - 0.5e-6, rel=1e-6)      # the round trip: twice that
    # inside group 0 there is no global link: unchanged to the bit
    assert simulate(probes, platform_xml(small(global_link_lat="3us").instance(64), 1), [0, 31], "pp", 8) == \
        simulate(probes, platform_xml(preset("dragonfly-small").instance(64), 1), [0, 31], "pp", 8)


@needs.simgrid
def test_background_load_slows_the_global_link_by_one_over_one_minus_load(probes):
    # global_links = 1: the one global link has the node link's 25 GB/s, so
    # with any load it is the bottleneck of a cross-group message, and the
    # bandwidth part of the time grows as 1 / (1 - load).
    size = 1 << 20
    lat = 5 * 0.5e-6
    times = {}
    for load in (0.0, 0.3, 0.6):
        machine = small(global_links=1, background_load=load)
        assert machine.explicit_dragonfly == (load > 0)
        inst = machine.instance(64)
        times[load] = simulate(probes, platform_xml(inst, 1), [0, 63], "pp", size)[0]
        assert times[load] == pytest.approx(lat + (size + SMPI_ENVELOPE) / (25e9 * (1 - load)), rel=1e-9)
        assert times[load] == pytest.approx(inst.transfer_time(0, 63, size + SMPI_ENVELOPE), rel=1e-9)
    for load in (0.3, 0.6):
        assert (times[load] - lat) / (times[0.0] - lat) == pytest.approx(1 / (1 - load), rel=1e-9)
    # within a group the global links are not crossed: the same time to the bit
    inside = [simulate(probes, platform_xml(small(global_links=1, background_load=load).instance(64), 1),
                       [0, 31], "pp", size)[0] for load in (0.0, 0.6)]
    assert inside[0] == inside[1] == pytest.approx(3 * 0.5e-6 + (size + SMPI_ENVELOPE) / 25e9, rel=1e-9)


@needs.simgrid_programs
def test_collkit_run_on_the_explicit_dragonfly_gives_the_presets_times(tmp_path):
    # End to end: `global_link_lat` equal to link_lat writes the explicit
    # platform through the launcher; the times must be the preset's.
    (tmp_path / "spec.toml").write_text(
        'name = "e"\ncollectives = ["allreduce", "bcast"]\nsizes = ["64B", "16KiB"]\nranks = [48]\nmpi = ["smpi"]\n'
        '[backends]\ncollkit = ["allreduce/recursive_doubling", "bcast/bine"]\n'
        '[measure]\nmin_iterations = 2\nmax_iterations = 2\nwarmup = 1\n')
    (tmp_path / "df.toml").write_text('name = "df"\n[simgrid]\npreset = "dragonfly-small"\nglobal_link_lat = "0.5us"\n')
    times = {}
    for platform, out in (("sim:dragonfly-small", "a"), ("df.toml", "b")):
        r = collkit("run", "spec.toml", "--platform", platform, "--out", out, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        recs = [json.loads(x) for x in (tmp_path / out / "records.jsonl").read_text().splitlines()]
        assert recs and all(x["status"] == "ok" for x in recs)
        times[out] = {x["id"]: x["times_us"] for x in recs}
    assert times["a"].keys() == times["b"].keys() and len(times["a"]) == 4
    for key, a in times["a"].items():
        assert all(math.isclose(x, y, rel_tol=1e-9) for x, y in zip(a, times["b"][key])), (key, a, times["b"][key])
    # the launcher wrote the explicit platform for the file, the cluster for the preset
    (explicit,) = (tmp_path / "b").rglob("platform-*.xml")
    (cluster,) = (tmp_path / "a").rglob("platform-*.xml")
    assert "<cluster" not in explicit.read_text() and "global-0-1" in explicit.read_text()
    assert "<cluster" in cluster.read_text()
