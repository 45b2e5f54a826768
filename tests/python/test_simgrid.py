"""Simulated machines (issue #6): campaigns under SimGrid's smpirun end to end,
identical simulated times on rerun, the smpi backend's names as SimGrid gives
them, memory and rank-count refusals, failures SimGrid reports with exit status
0, and one-line errors for bad platforms. Needs `make setup` (SimGrid and
build/simgrid); about 30 s."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from collkit.backends import smpi
from collkit.common.errors import UserError
from collkit.common.paths import build_dir, repo_root
from collkit.launch import simgrid as sim_launch
from collkit.simulation import memory, settings
import needs
from cli_runner import collkit, one_line_error
from simgrid_paths import SMPICC, SMPIRUN

REPO = repo_root()
BENCH = settings.bench_path()

SPEC = """
name = "sim"
collectives = ["allreduce", "bcast"]
sizes = ["64B", "4KiB"]
ranks = [64]
mpi = ["smpi"]
[backends]
mpi = ["default", "allreduce/recursive_doubling"]
collkit = ["allreduce/recursive_doubling", "allreduce/bine_latency", "bcast/binomial_halving", "bcast/bine"]
[measure]
warmup = 1
min_iterations = 3
max_iterations = 3
validate = "first"
timeout_s = 120
"""


def records(campaign: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, (campaign / "records.jsonl").read_text().splitlines())}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The same 64-rank spec simulated twice on the 2:1 fat tree."""
    d = tmp_path_factory.mktemp("sim")
    (d / "spec.toml").write_text(SPEC)
    outs = [collkit("run", "spec.toml", "--platform", "sim:fattree-2to1", "--out", name, cwd=d) for name in ("a", "b")]
    return d, outs


@needs.simgrid_programs
def test_simulated_campaign_end_to_end(two_runs):
    d, (out, _) = two_runs
    assert out.returncode == 0, out.stderr
    assert "collkit:bine_latency" in out.stdout or "smpi:" in out.stdout   # the summary table
    recs = records(d / "a")
    # 2 sizes x (allreduce: default, forced rdb, 2 collkit; bcast: default, 2 collkit)
    assert len(recs) == 14
    assert {r["status"] for r in recs.values()} == {"ok"}
    for r in recs.values():
        assert r["simulated"] == "fattree-2to1" and r["shared_buffers"] is False
        assert r["validated_iterations"] >= 1 and len(r["times_us"]) == 3
    forced = recs["allreduce/mpi/smpi/recursive_doubling/p64/64B/int32/sum/r0/outofplace"]
    assert forced["native"] == "rdb" and forced["env"] == {"smpi/allreduce": "rdb"}
    assert "not charged" in forced["sim_note"] or "no simulated time" in forced["sim_note"]
    # the launch record names the simulated hosts, block placement, one rank per node
    launch = json.loads((d / "a" / "launches.jsonl").read_text().splitlines()[0])
    assert launch["hosts"] == [f"node{i}" for i in range(64)]
    meta = json.loads((d / "a" / "metadata.json").read_text())
    sim = meta["simgrid"]
    assert "smpi/simulate-computation:no" in sim["cfg"] and "network/model:CM02" in sim["cfg"]
    assert sim["settings"]["machine"]["name"] == "fattree-2to1"
    assert sim["simgrid_version"] == "SimGrid version 4.1"         # the one version collkit simulates with
    assert any("smpi/allreduce:rdb" in l["cfg"] for l in sim["launches"])
    assert (d / "a" / "simgrid" / "platform-64nodes-ppn1.xml").read_text().startswith("<?xml")
    assert len((d / "a" / "simgrid" / "hostfile-p64.txt").read_text().splitlines()) == 64


@needs.simgrid_programs
def test_identical_reruns_give_identical_times(two_runs):
    d, outs = two_runs
    assert all(o.returncode == 0 for o in outs), [o.stderr for o in outs]
    a, b = records(d / "a"), records(d / "b")
    assert a.keys() == b.keys()
    for pid in a:
        assert a[pid]["times_us"] == b[pid]["times_us"], pid
    # and the algorithms are told apart: simulation is not handing out one number
    assert len({tuple(r["times_us"]) for r in a.values()}) > 4


@needs.simgrid_programs
def test_smpi_names_come_from_simgrid_and_are_cached(tmp_path, monkeypatch):
    cache = tmp_path / "names.json"
    names = smpi.valid_names(Path(SMPIRUN), BENCH, cache)
    assert {"rdb", "lr", "rab_rdb", "default"} <= set(names["allreduce"])
    assert "binomial_tree" in names["bcast"] and set(names) == set(smpi.COLLECTIVES)
    # a second call reads the cache and asks SimGrid nothing
    monkeypatch.setattr(smpi, "probe", lambda *a: pytest.fail("probed despite the cache"))
    assert smpi.valid_names(Path(SMPIRUN), BENCH, cache) == names


def test_parse_valid_reads_simgrids_abort_message():
    text = ("[0.000000] ./src/smpi/colls/smpi_coll.cpp:261: [root/CRITICAL] Collective 'bcast' has no "
            "algorithm '__x__'! Valid algorithms: default, binomial_tree, flattree, ompi, automatic.\nAborted\n")
    assert smpi.parse_valid(text) == {"bcast": ["default", "binomial_tree", "flattree", "ompi", "automatic"]}


NAMES = {"allreduce": ["default", "lr", "rdb", "rab_rdb", "rab1", "ompi", "mpich", "automatic"],
         "bcast": ["default", "binomial_tree", "flattree", "NTSL"], "alltoall": ["ring", "pair", "bruck"]}


def test_canonical_names_map_to_smpi_names_and_native_names_are_accepted():
    offer = smpi.offer("smpi", NAMES, "(SimGrid 4.1)")
    rd = offer.force("allreduce", "recursive_doubling")
    assert rd.native == "rdb" and rd.env == {"smpi/allreduce": "rdb"} and rd.readback == ()
    assert offer.force("allreduce", "rdb") == rd
    # SMPI's lr keeps its own name: its remainder handling differs from libcollkit's
    # ring (docs/algorithms.md, parity table); a canonical name it lacks is refused.
    assert offer.force("allreduce", "lr").native == "lr"
    assert offer.force("allreduce", "lr").unusable(64, 8) is not None     # count < ranks: SMPI's default runs
    assert offer.force("allreduce", "lr").unusable(64, 64) is None
    with pytest.raises(UserError, match="cannot be forced to run 'ring'"):
        offer.force("allreduce", "ring")
    assert offer.force("bcast", "binomial_halving").native == "binomial_tree"
    assert offer.force("alltoall", "linear_shift").native == "ring"
    assert offer.force("bcast", "ntsl").native == "NTSL"                    # no twin: SMPI's name, lower case
    with pytest.raises(UserError, match="not offered: times every algorithm"):
        offer.force("allreduce", "automatic")
    with pytest.raises(UserError, match="did you mean 'rdb'"):
        offer.force("allreduce", "rdbb")
    assert "selection logic" in offer.force("allreduce", "mpich").note


def test_openmpi_and_mpich_on_a_simulated_platform_are_smpi_selectors():
    ompi = smpi.offer("openmpi", NAMES, "")
    assert "Open MPI" in ompi.library and ompi.default_native["allreduce"] == ("ompi", "ompi")
    assert smpi.selector_cfg("openmpi") == ["smpi/coll-selector:ompi"]
    assert smpi.selector_cfg("mpich") == ["smpi/coll-selector:mpich"]
    assert smpi.selector_cfg("smpi") == []
    with pytest.raises(UserError, match="choose one of smpi, openmpi, mpich"):
        smpi.offer("intelmpi", NAMES, "")


def test_memory_estimate_and_refusal():
    # 64 ranks x (send + receive + temporary) of a 1 MiB allreduce
    total, big = memory.buffers("allreduce", 64, 262144, "int32")
    assert total == 64 * 2 * (1 << 20) and big == 1 << 20
    assert memory.refusal("allreduce", 64, 262144, "int32", False, "first", 64 << 30, 6500) == ""
    why = memory.refusal("alltoall", 1024, 4 << 20, "int32", False, "first", 64 << 30, 6500)
    assert why.startswith("simulating it needs about ") and "GiB" in why and "available memory" in why
    # validation off: the same point's buffers are shared (folded) and it fits
    assert memory.shared_for("alltoall", 256, 1 << 16, "int32", False, "none")
    assert not memory.shared_for("alltoall", 256, 1 << 16, "int32", False, "first")
    assert "validate = \"none\"" in memory.refusal("allreduce", 1024, 1 << 22, "int32", False, "first",
                                                   16 << 30, 6500)
    assert "privatise" in memory.refusal("bcast", 7000, 1, "int32", False, "none", 1 << 40, 6500)
    # shared: buffers at or above the threshold count as one block per call site
    folded = memory.estimate("allreduce", 1024, 262144, "int32", shared=True, thresh=1 << 18)
    assert folded < memory.estimate("allreduce", 1024, 262144, "int32") / 4
    assert memory.estimate("allreduce", 1024, 262144, "int32", shared=True, thresh=1 << 21) == \
        memory.estimate("allreduce", 1024, 262144, "int32")          # 1 MiB buffers below it: not folded


def test_shared_blocks_hold_a_whole_buffer():
    # SMPI maps folded memory one block at a time; at 1 MiB blocks 1,024 ranks of a
    # 16 KiB-block alltoall (16 MiB buffers) hit the kernel's map count and aborted
    assert memory.shared_blocksize("alltoall", 1024, 4096, "int32") == 16 << 20     # 1024 x 16 KiB
    assert memory.shared_blocksize("alltoall", 1024, 3000, "int32") == 16 << 20     # 11.7 MiB, rounded up
    assert memory.shared_blocksize("allreduce", 64, 1024, "int32") == memory.SHARED_BLOCK   # 4 KiB: the default
    assert memory.shared_blocksize("allreduce", 4, 1 << 30, "int32") == memory.MAX_SHARED_BLOCK
    # the estimate pays one such block per folded call site
    small = memory.estimate("alltoall", 1024, 256, "int32", shared=True, thresh=1 << 16)      # 1 MiB blocks
    big = memory.estimate("alltoall", 1024, 4096, "int32", shared=True, thresh=1 << 16)       # 16 MiB blocks
    assert big - small == 3 * ((16 << 20) - (1 << 20))     # send, receive, temporary


def test_a_launch_with_large_folded_buffers_asks_for_larger_blocks():
    from collkit.campaign.points import Point
    from collkit.campaign.spec import Measure
    s = settings.from_name("sim:lumi-like")
    m = Measure(validate="none", max_iterations=1)

    def cfg(count: int) -> list[str]:
        p = Point("alltoall", "collkit", "smpi", "bine", 1024, count, 4 * count, "int32", "sum", 0, False)
        return sim_launch.launch_cfg(s, "smpi", [p], m, True)
    assert "smpi/shared-malloc-blocksize:16777216" in cfg(4096)
    assert not any("blocksize" in c for c in cfg(16))      # 64 KiB buffers: SMPI's default block


def test_count_zero_needs_no_buffers():
    # MPI allows count 0; the estimate once took max() of no buffers (issue #32)
    assert memory.buffers("allreduce", 4, 0, "int32") == (0, 0)
    assert memory.estimate("allreduce", 4, 0, "int32") == memory.estimate("bcast", 4, 0, "int32")
    assert memory.estimate("alltoall", 4, 0, "int32") < memory.estimate("alltoall", 4, 1, "int32")


@needs.simgrid_programs
def test_a_zero_byte_point_is_simulated(tmp_path):
    (tmp_path / "spec.toml").write_text(
        'name = "zero"\ncollectives = ["allreduce", "alltoall"]\nsizes = ["0B"]\nranks = [4]\nmpi = ["smpi"]\n'
        '[backends]\ncollkit = ["allreduce/ring", "alltoall/pairwise"]\n')
    out = collkit("run", "spec.toml", "--platform", "sim:lumi-like", "--out", "c", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    recs = records(tmp_path / "c")
    assert {r["status"] for r in recs.values()} == {"ok"} and len(recs) == 2


def test_the_shared_threshold_keeps_the_harness_buffers_private():
    """SMPI copies no message data into folded buffers: rank 0's gather of every
    host name and the timing vectors must stay below the threshold."""
    for ranks, iters in ((64, 3), (1024, 3), (6500, 1000), (16, 65536), (16, 10**6)):
        t = memory.shared_threshold(ranks, iters)
        assert t >= 65536 and t & (t - 1) == 0
        assert ranks * memory.PROCESSOR_NAME < t and (2 * min(iters, 65536) + 2) * 8 < t


@needs.simgrid_programs
def test_points_too_large_are_refused_before_launch(tmp_path):
    (tmp_path / "spec.toml").write_text(
        'name = "big"\ncollectives = ["alltoall", "bcast"]\nsizes = ["16MiB"]\nranks = [1024, 8192]\nmpi = ["smpi"]\n'
        '[backends]\ncollkit = ["alltoall/pairwise", "bcast/bine"]\n')
    out = collkit("run", "spec.toml", "--platform", "sim:fugaku-like", "--out", "c", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    recs = records(tmp_path / "c")
    a2a = recs["alltoall/collkit/smpi/pairwise/p1024/16777216B/int32/sum/r0/outofplace"]
    assert a2a["status"] == "skipped" and "simulating it needs about" in a2a["reason"]
    big = recs["bcast/collkit/smpi/bine/p8192/16777216B/int32/sum/r0/outofplace"]
    assert big["status"] == "skipped" and "privatise" in big["reason"]
    assert not list((tmp_path / "c" / "raw").glob("launch-*"))       # nothing was launched


def test_deadlock_and_abort_markers_are_found(tmp_path):
    err = tmp_path / "err"
    err.write_text("[0.000000] [smpi_config/INFO] noise\n"
                   "[0.000000] ./src/kernel/EngineImpl.cpp:718: [ker_engine/CRITICAL] Oops! Deadlock detected, "
                   "some activities are still around but will never complete.\n")
    assert sim_launch.diagnose(err).startswith("Oops! Deadlock detected")
    err.write_text("[node3:3:(4) 0.000028] ./src/xbt/exception.cpp:48: [xbt_exception/CRITICAL] Uncaught exception "
                   "std::invalid_argument: allgather pair algorithm can't be used with non power of two number\n"
                   "[node3:3:(4) 0.000028] ./src/xbt/exception.cpp:75: [xbt_exception/CRITICAL] Current backtrace:\n")
    assert "can't be used with non power of two" in sim_launch.diagnose(err)
    err.write_text("[0.000000] [smpi/INFO] all fine\n")
    assert sim_launch.diagnose(err) is None


@needs.simgrid
def test_a_real_simgrid_deadlock_exits_0_and_is_diagnosed(tmp_path):
    """SimGrid's own words, from a real deadlock: what diagnose() relies on."""
    src = tmp_path / "dl.c"
    src.write_text("#include <mpi.h>\nint main(int argc, char **argv)\n{\n    int rank, x = 0;\n"
                   "    MPI_Init(&argc, &argv);\n    MPI_Comm_rank(MPI_COMM_WORLD, &rank);\n"
                   "    MPI_Recv(&x, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n"
                   "    MPI_Finalize();\n    return 0;\n}\n")
    subprocess.run([SMPICC, "-o", str(tmp_path / "dl"), str(src)], check=True, capture_output=True, timeout=120)
    (tmp_path / "one.xml").write_text(smpi._ONE_HOST)
    (tmp_path / "hosts").write_text("h0\nh0\n")
    err = tmp_path / "err"
    with open(err, "w") as f:
        proc = subprocess.run([SMPIRUN, "-platform", str(tmp_path / "one.xml"), "-hostfile", str(tmp_path / "hosts"),
                               "-np", "2", f"--cfg=smpi/tmpdir:{tmp_path}", str(tmp_path / "dl")], stdout=f,
                              stderr=subprocess.STDOUT, timeout=120, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert proc.returncode == 0                      # why stderr must be searched
    assert "Deadlock detected" in sim_launch.diagnose(err)


@needs.simgrid_programs
def test_agreements_through_host_memory_keep_communicators_apart(tmp_path):
    """bench/sim_board.c, the harness's agreements under SimGrid, through
    tests/bench/sim_board_test.c on 8 ranks: right values on disjoint halves
    and on overlapping groups agreeing at once, no simulated time, the same
    error on every rank, the registry gone once every communicator is freed;
    and parallel contexts are refused."""
    prog = tmp_path / "sim_board_test"
    subprocess.run([SMPICC, "-std=c11", "-D_POSIX_C_SOURCE=200809L", f"-I{REPO / 'bench'}", "-o", str(prog),
                    str(REPO / "tests" / "bench" / "sim_board_test.c"), str(REPO / "bench" / "sim_board.c")],
                   check=True, capture_output=True, timeout=120)
    (tmp_path / "one.xml").write_text(smpi._ONE_HOST)
    (tmp_path / "hosts").write_text("h0\n" * 8)

    def run(ranks: int, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([SMPIRUN, "-platform", str(tmp_path / "one.xml"), "-hostfile", str(tmp_path / "hosts"),
                               "-np", str(ranks), f"--cfg=smpi/tmpdir:{tmp_path}", "--cfg=smpi/wtime:0",
                               "--cfg=smpi/simulate-computation:no",   # as collkit launches (exact times)
                               "--log=root.thresh:warning", *args], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, TMPDIR=str(tmp_path)))

    proc = run(8, str(prog))
    assert "sim_board: ok" in proc.stdout, proc.stdout + proc.stderr
    # one rank: SimGrid 4.1's own start of several ranks in parallel contexts
    # (a copy of the program per rank) sometimes fails before main
    proc = run(1, "--cfg=contexts/nthreads:2", str(prog), "refused")
    assert "need contexts/nthreads:1" in proc.stdout, proc.stdout + proc.stderr


FAKE_SMPIRUN = """#!/usr/bin/env python3
# Stand-in smpirun: writes the launch record, then reports a deadlock the way
# SimGrid does (see test_a_real_simgrid_deadlock_exits_0_and_is_diagnosed) and exits 0.
import json, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("SimGrid version 4.1"); sys.exit(0)
n = int(args[args.index("-np") + 1])
hosts = open(args[args.index("-hostfile") + 1]).read().split()
out = args[args.index("--out") + 1]
with open(out, "a") as f:
    f.write(json.dumps({"type": "launch", "ranks": n, "hosts": hosts, "library_version": "SMPI"}) + "\\n")
print("[0.000000] ./src/kernel/EngineImpl.cpp:718: [ker_engine/CRITICAL] Oops! Deadlock detected, some "
      "activities are still around but will never complete.")
print("[0.000000] [smpi/INFO] Stalling SMPI instance: smpirun. Do all your MPI ranks call MPI_Finalize()?")
"""


@needs.simgrid_programs
def test_a_launch_that_deadlocks_with_exit_status_0_fails_its_point(tmp_path):
    # the stand-in is a SimGrid of its own (COLLKIT_SIMGRID_PREFIX) beside the
    # real collkit-bench, used as it is (COLLKIT_BUILD_ROOT)
    fake = tmp_path / "bin" / "smpirun"
    fake.parent.mkdir()
    fake.write_text(FAKE_SMPIRUN)
    fake.chmod(0o755)
    (tmp_path / "bin" / "smpicc").symlink_to(fake)
    (tmp_path / "build").mkdir()
    for tree in ("simgrid", "openmpi"):
        (tmp_path / "build" / tree).symlink_to(build_dir(tree))
    (tmp_path / "spec.toml").write_text(
        'name = "dl"\ncollectives = ["allreduce"]\nsizes = ["8B"]\nranks = [4]\nmpi = ["smpi"]\n'
        '[backends]\ncollkit = ["ring"]\n[measure]\ntimeout_s = 20\n')
    out = collkit("run", "spec.toml", "--platform", "sim:dragonfly-small", "--out", "c", cwd=tmp_path,
                  env={"COLLKIT_SIMGRID_PREFIX": str(tmp_path), "COLLKIT_BUILD_ROOT": str(tmp_path / "build")})
    # nothing succeeded: exit 1, with the point's own failure on stderr
    assert out.returncode == 1 and "no point succeeded" in out.stderr, out.stderr
    (rec,) = records(tmp_path / "c").values()
    assert rec["status"] == "failed"
    assert "exited with status 0" in rec["reason"] and "Deadlock detected" in rec["reason"]


def test_point_messages_and_fallbacks_are_attributed_to_their_point():
    text = ("[0.000000] [smpi_coll/INFO] Switch to algorithm arrival_scatter for collective bcast\n"
            "collkit-bench: point A\n"
            "[node0:0:(1) 0.000000] [smpi_colls/INFO] MPI_bcast_arrival_scatter: count < size, use default MPI_bcast.\n"
            "collkit-bench: point B\n"
            "[node0:0:(1) 0.1] ./src/smpi/mpi/smpi_request.cpp:1050: [smpi_request/WARNING] recv - returned "
            "MPI_ERR_TRUNCATE instead of MPI_SUCCESS\n")
    seg = sim_launch.segments(text)
    assert set(seg) == {"A", "B"}
    a, b = sim_launch.point_notes(seg["A"]), sim_launch.point_notes(seg["B"])
    assert a["smpi_fallback"].startswith("MPI_bcast_arrival_scatter: count < size, use default")
    assert "smpi_fallback" not in b and b["smpi_messages"] == [
        "1x recv - returned MPI_ERR_TRUNCATE instead of MPI_SUCCESS"]


def test_placement_block_cyclic_and_allocation(tmp_path):
    from collkit.topology.synthetic import preset
    m = preset("dragonfly-small")
    block = settings.SimSettings(machine=m, ppn=2)
    inst, hosts = sim_launch.placement(block, 6)
    assert hosts == ["node0", "node0", "node1", "node1", "node2", "node2"] and inst.nodes >= 3
    cyclic = settings.SimSettings(machine=m, ppn=2, placement="cyclic")
    assert sim_launch.placement(cyclic, 6)[1] == ["node0", "node1", "node2", "node0", "node1", "node2"]
    alloc = settings.SimSettings(machine=m, ppn=1, allocation=("node40", "node7"), allocation_file="a.txt")
    inst, hosts = sim_launch.placement(alloc, 2)
    assert hosts == ["node40", "node7"] and "node40" in inst.hosts
    with pytest.raises(UserError, match="more than ppn = 1"):
        sim_launch.placement(settings.SimSettings(machine=m, allocation=("node1", "node1")), 2)
    with pytest.raises(UserError, match="does not have"):
        sim_launch.placement(settings.SimSettings(machine=m, allocation=("lrdn0001",), allocation_file="a"), 1)


@needs.simgrid_programs
def test_platform_file_with_a_simgrid_table(tmp_path):
    (tmp_path / "alloc.txt").write_text("# rank i on line i\nnode5\nnode5\nnode9\nnode9\n")
    (tmp_path / "df.toml").write_text(
        'name = "my-dragonfly"\n[simgrid]\npreset = "dragonfly-small"\nppn = 2\nallocation = "alloc.txt"\n'
        'network_model = "CM02"\n')
    (tmp_path / "spec.toml").write_text(
        'name = "f"\ncollectives = ["bcast"]\nsizes = ["1KiB"]\nranks = [4]\nmpi = ["smpi"]\n'
        '[backends]\ncollkit = ["bine"]\n[measure]\nmin_iterations = 2\nmax_iterations = 2\n')
    out = collkit("run", "spec.toml", "--platform", "df.toml", "--out", "c", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    (rec,) = records(tmp_path / "c").values()
    assert rec["status"] == "ok"
    launch = json.loads((tmp_path / "c" / "launches.jsonl").read_text().splitlines()[0])
    assert launch["hosts"] == ["node5", "node5", "node9", "node9"]
    meta = json.loads((tmp_path / "c" / "metadata.json").read_text())
    assert meta["platform"]["name"] == "my-dragonfly" and meta["simgrid"]["settings"]["ppn"] == 2


@pytest.mark.parametrize("platform, text, message", [
    ("sim:nosuch", None, "unknown simulated machine 'nosuch'"),
    ("sim:", None, "name a simulated machine after 'sim:'"),
    ("bad.toml", '[simgrid]\npreset = "fattree-2to1"\nplacement = "blok"\n', "did you mean 'block'"),
    ("bad.toml", '[simgrid]\npreset = "fattree-2to1"\n[slurm]\npartition = "x"\n', "takes no [slurm]"),
    ("bad.toml", '[simgrid]\nplacement = "block"\n', "needs preset"),
    ("bad.toml", '[simgrid]\npreset = "fattree-2to1"\nplacment = "block"\n', "did you mean 'placement'"),
])
def test_bad_platforms_are_one_line_errors(tmp_path, platform, text, message):
    (tmp_path / "spec.toml").write_text(SPEC)
    if text is not None:
        (tmp_path / platform).write_text(text)
    one_line_error(collkit("run", "spec.toml", "--platform", platform, "--out", "c", cwd=tmp_path), message)


@needs.simgrid_programs
def test_a_spec_naming_two_platforms_runs_one_campaign_on_each(tmp_path):
    (tmp_path / "spec.toml").write_text(
        'name = "two"\nplatforms = ["sim:fattree-2to1", "sim:dragonfly-small"]\ncollectives = ["bcast"]\n'
        'sizes = ["64KiB"]\nranks = [16]\nmpi = ["smpi"]\n[backends]\ncollkit = ["binomial_halving"]\n'
        '[measure]\nmin_iterations = 1\nmax_iterations = 1\n')
    out = collkit("run", "spec.toml", "--out", "c", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("== platform sim:") == 2 and out.stdout.count("campaign complete") == 2
    fat, df = (records(tmp_path / "c" / name) for name in ("fattree-2to1", "dragonfly-small"))
    (a,), (b,) = fat.values(), df.values()
    assert a["simulated"] == "fattree-2to1" and b["simulated"] == "dragonfly-small"
    assert a["times_us"] != b["times_us"]          # two networks, two answers
    # --platform overrides the list: one campaign
    one = collkit("run", "spec.toml", "--platform", "sim:dragonfly-small", "--out", "d", cwd=tmp_path)
    assert one.returncode == 0 and "== platform" not in one.stdout and (tmp_path / "d" / "records.jsonl").exists()


def test_platforms_must_be_names():
    from collkit.campaign import spec
    with pytest.raises(UserError, match="platforms must be a name or a non-empty list"):
        spec.parse('collectives = ["bcast"]\nsizes = ["8B"]\nranks = [2]\nplatforms = 3\n'
                   '[backends]\ncollkit = ["bine"]\n')


@needs.simgrid_programs
def test_a_real_machine_spec_runs_on_a_simulated_platform(tmp_path):
    """mpi = openmpi/mpich there is SMPI with their selection logic; a canonical name
    SMPI lacks is skipped with the reason, an unknown name is still an error."""
    spec = ('name = "port"\ncollectives = ["bcast"]\nsizes = ["1KiB"]\nranks = [8]\nmpi = ["openmpi", "mpich"]\n'
            '[backends]\nmpi = ["default", "binomial_doubling", "binomial_halving"]\n'
            '[measure]\nmin_iterations = 1\nmax_iterations = 1\n')
    (tmp_path / "spec.toml").write_text(spec)
    out = collkit("run", "spec.toml", "--platform", "sim:dragonfly-small", "--out", "c", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    recs = records(tmp_path / "c")
    assert len(recs) == 6
    skipped = recs["bcast/mpi/openmpi/binomial_doubling/p8/1024B/int32/sum/r0/outofplace"]
    assert skipped["status"] == "skipped" and "has no bcast algorithm 'binomial_doubling'" in skipped["reason"]
    halving = recs["bcast/mpi/mpich/binomial_halving/p8/1024B/int32/sum/r0/outofplace"]
    assert halving["status"] == "ok" and halving["native"] == "binomial_tree"
    cfgs = [json.loads(l)["cfg"] for l in (tmp_path / "c" / "simgrid" / "launches.jsonl").read_text().splitlines()]
    assert any("smpi/coll-selector:ompi" in c for c in cfgs) and any("smpi/coll-selector:mpich" in c for c in cfgs)
    (tmp_path / "bad.toml").write_text(spec.replace("binomial_halving", "binomal_halving"))
    bad = collkit("run", "bad.toml", "--platform", "sim:dragonfly-small", "--out", "d", cwd=tmp_path)
    one_line_error(bad, "unknown MPI library algorithm 'binomal_halving'")


# Mapped names whose messages are the same but whose posting differs, so their
# simulated times differ (backends/smpi.py): SMPI's flattree bcast posts every
# send at once where libcollkit sends one after another; SMPI's linear gather and
# scatter take one rank at a time where libcollkit posts them all.
POSTING_DIFFERS = {("bcast", "linear"), ("gather", "linear"), ("scatter", "linear")}


@needs.simgrid_programs
def test_smpi_algorithms_named_like_libcollkits_simulate_to_the_same_time(tmp_path):
    """The canonical-name table says "same algorithm": with local work made free
    (a very fast host) the same messages must take the same simulated time."""
    from collkit.library import registry
    ours = {(a.collective, a.name) for a in registry.load()}
    pairs = sorted((coll, canon) for coll, table in smpi.NAMES.items() for canon in table.values()
                   if (coll, canon) in ours and (coll, canon) not in POSTING_DIFFERS)
    colls = sorted({c for c, _ in pairs})
    names = sorted({f"{c}/{a}" for c, a in pairs})
    (tmp_path / "fast.toml").write_text('[simgrid]\npreset = "fattree-2to1"\nspeed = "1000Tf"\n')
    (tmp_path / "spec.toml").write_text(
        f'name = "pairs"\ncollectives = {json.dumps(colls)}\nsizes = ["64KiB"]\nranks = [16]\nmpi = ["smpi"]\n'
        f'[backends]\nmpi = {json.dumps(names)}\ncollkit = {json.dumps(names)}\n'
        '[measure]\nwarmup = 0\nmin_iterations = 1\nmax_iterations = 1\n')
    out = collkit("run", "spec.toml", "--platform", "fast.toml", "--out", "c", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    t = {(r["collective"], r["backend"], r["algorithm"]): r for r in records(tmp_path / "c").values()}
    # the names SMPI shares with libcollkit after the parity audit (docs/algorithms.md):
    # those whose schedules differ (lr, rab_rdb, ring, ...) keep their own names
    assert len(pairs) >= 10
    for coll, alg in pairs:
        a, b = t[(coll, "collkit", alg)], t[(coll, "mpi", alg)]
        assert a["status"] == b["status"] == "ok", (coll, alg, a["reason"], b["reason"])
        ta, tb = a["times_us"][0], b["times_us"][0]
        assert abs(ta - tb) <= 1e-3 * tb, (coll, alg, b["native"], ta, tb)


@needs.simgrid_programs
def test_shared_buffers_keep_the_launch_record_right(tmp_path):
    """700 ranks: the host-name gather (70 KB) is above SMPI's usual 64 KiB fold
    threshold; collkit raises the threshold so it arrives intact."""
    (tmp_path / "spec.toml").write_text(
        'name = "sh"\ncollectives = ["bcast"]\nsizes = ["2MiB"]\nranks = [700]\nmpi = ["smpi"]\n'
        '[backends]\ncollkit = ["binomial_halving"]\n'
        '[measure]\nwarmup = 0\nmin_iterations = 1\nmax_iterations = 1\nvalidate = "none"\n')
    out = collkit("run", "spec.toml", "--platform", "sim:fattree-2to1", "--out", "c", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    (rec,) = records(tmp_path / "c").values()
    assert rec["status"] == "ok" and rec["shared_buffers"] is True and rec["times_us"][0] > 0
    launch = json.loads((tmp_path / "c" / "launches.jsonl").read_text().splitlines()[0])
    assert launch["hosts"] == [f"node{i}" for i in range(700)]
    cfg = json.loads((tmp_path / "c" / "simgrid" / "launches.jsonl").read_text().splitlines()[0])["cfg"]
    assert f"smpi/auto-shared-malloc-thresh:{memory.shared_threshold(700, 1)}" in cfg


WINDOW_SPEC = """
name = "start"
collectives = ["gather", "scatter"]
sizes = ["4B"]
ranks = [4]
mpi = ["smpi"]
dtype = "int32"
[backends]
collkit = ["binomial", "bine_halving"]
[measure]
warmup = 0
min_iterations = 1
max_iterations = 1
time_budget_s = 0
validate = "none"
sync = "{sync}"
"""


@needs.simgrid_programs
def test_window_sync_starts_every_simulated_rank_at_once(tmp_path):
    """Ranks 0-1 and 2-3 on two routers of a lumi-like group (nodes 2-5, 4 a router).
    The 4-rank binomial gather (1 -> 0, 3 -> 2, then 2 -> 0 with two blocks) and the
    Bine tree (1 -> 0, 2 -> 3, then 3 -> 0) are mirror images there: from one start
    they take the same time, to the simulator's precision (smpirun's default 1e-9 s:
    the local copies of a few bytes round differently), as do the scatters. The
    dissemination barrier lets the ranks go at different simulated instants, and
    each times the call from its own: there the two differ."""
    (tmp_path / "hosts.txt").write_text("".join(f"node{i}\n" for i in range(2, 6)))
    (tmp_path / "platform.toml").write_text('[simgrid]\npreset = "lumi-like"\nmessage_costs = "loggp"\n'
                                            'allocation = "hosts.txt"\n')
    times = {}
    for sync in ("window", "dissemination"):
        (tmp_path / f"{sync}.toml").write_text(WINDOW_SPEC.replace("{sync}", sync))
        out = collkit("run", f"{sync}.toml", "--platform", "platform.toml", "--out", sync, cwd=tmp_path)
        assert out.returncode == 0, out.stdout + out.stderr
        for rec in records(tmp_path / sync).values():
            assert rec["status"] == "ok" and rec["late_iterations"] == 0, rec
            times[sync, rec["collective"], rec["algorithm"]] = rec["times_us"][0]
    for coll in ("gather", "scatter"):
        assert times["window", coll, "binomial"] == pytest.approx(times["window", coll, "bine_halving"], abs=0.002)
    assert times["dissemination", "gather", "binomial"] != pytest.approx(
        times["dissemination", "gather", "bine_halving"], abs=0.1)


@needs.simgrid_programs
def test_records_taken_in_on_resume_get_the_simulation_fields(tmp_path):
    """collkit killed after the launches wrote their records: --resume takes them
    in from raw/ with the same SimGrid fields, fallbacks included."""
    (tmp_path / "spec.toml").write_text(
        'name = "res"\ncollectives = ["allreduce"]\nsizes = ["4KiB"]\nranks = [12]\nmpi = ["smpi"]\n'
        '[backends]\nmpi = ["lr"]\ncollkit = ["ring"]\n[measure]\nmin_iterations = 1\nmax_iterations = 1\n')
    out = collkit("run", "spec.toml", "--platform", "sim:dragonfly-small", "--out", "c", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    first = records(tmp_path / "c")
    lr = first["allreduce/mpi/smpi/lr/p12/4096B/int32/sum/r0/outofplace"]
    # 1,024 elements on 12 ranks: SMPI's lr reduces the remainder with its default
    assert lr["status"] == "skipped" and "SMPI ran its default instead of lr" in lr["reason"]
    (tmp_path / "c" / "records.jsonl").write_text("")          # as if never copied
    again = collkit("run", "--resume", "c", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "took in 2 records" in again.stderr
    taken = records(tmp_path / "c")
    for pid, rec in first.items():
        for key in ("status", "reason", "simulated", "shared_buffers", "times_us"):
            assert taken[pid].get(key) == rec.get(key), (pid, key)
