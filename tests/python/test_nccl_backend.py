"""The nccl backend without a GPU: spec validation, the NCCL_ALGO/NCCL_PROTO
forcing logic, discovery from NCCL's header and library, the GPU check and
the CUDA-aware-MPI detection (backends/nccl.py, backends/gpu_mpi.py)."""

import stat
from pathlib import Path

import pytest

import needs
from cli_runner import one_line_error
from collkit.backends import gpu_mpi, nccl
from collkit.campaign import plan as planner
from collkit.campaign import spec as specs
from collkit.campaign.platform import Platform, PlatformMPI
from collkit.common.errors import UserError
from collkit.mpis.install import MPIInstall

OFFER_2_28 = nccl.offer_for((2, 28, 9), "nccl.h", "libnccl.so.2", None)
PLATFORM = Platform("test", "test", {"openmpi": PlatformMPI(MPIInstall("openmpi", Path("/bin/true")),
                                                            Path("/bin/true"))})


def spec_text(nccl_sel='["default"]', collectives='["allreduce", "allgather"]', ranks="[1]", extra=""):
    return (f"collectives = {collectives}\nsizes = [\"1KiB\"]\nranks = {ranks}\nmpi = [\"openmpi\"]\n{extra}"
            f"[backends]\nnccl = {nccl_sel}\n")


def fake_smi(tmp_path: Path, gpus: int, fail: bool = False) -> str:
    """An nvidia-smi that lists `gpus` H100s (or fails as without a driver)."""
    lines = "\n".join(f"echo '{i}, NVIDIA H100 80GB HBM3, 580.95.05, 81559, 00000000:{i:02d}:00.0'"
                      for i in range(gpus))
    body = ("echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'; exit 9"
            if fail else f'''
case "$1" in
  --query-gpu=*) {lines or ':'} ;;
  topo) printf '\\tGPU0\\nGPU0\\t X \\n' ;;
  *) echo '| NVIDIA-SMI 580.95.05  Driver Version: 580.95.05  CUDA Version: 13.0 |' ;;
esac''')
    path = tmp_path / "nvidia-smi"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# ---------------------------------------------------------------- spec

def test_spec_accepts_nccl_and_gpu_device():
    s = specs.parse(spec_text(extra='[gpu]\ndevice = [0, 1]\n'))
    assert s.backends["nccl"] == ("default",)
    assert s.gpu_device == "0,1"
    assert specs.parse(spec_text()).gpu_device == "local_rank"


@pytest.mark.parametrize("gpu, message", [
    ('device = "all"', "gpu.device must be \"local_rank\" or a list of device numbers"),
    ("device = []", "gpu.device must be"),
    ("device = [-1]", "gpu.device must be"),
    ("devices = [0]", "unknown key 'devices' in [gpu] (did you mean 'device'?)"),
])
def test_spec_refuses_bad_gpu_tables(gpu, message):
    with pytest.raises(UserError, match="^spec: " + __import__("re").escape(message)):
        specs.parse(spec_text(extra=f"[gpu]\n{gpu}\n"))


def test_gpu_table_without_nccl_is_refused():
    text = 'collectives = ["allreduce"]\nsizes = ["8B"]\nranks = [2]\n[gpu]\ndevice = [0]\n[backends]\nmpi = ["default"]\n'
    with pytest.raises(UserError, match=r"\[gpu\] chooses the devices of the nccl backend"):
        specs.parse(text)


# ---------------------------------------------------------------- forcing

def forcings(sel, colls=("allreduce", "allgather", "alltoall"), offer=OFFER_2_28):
    return {c: {f.name: (dict(f.env), why) for f, why in v} for c, v in nccl.resolve(sel, colls, offer).items()}


def test_forcing_sets_nccl_algo_and_proto():
    got = forcings(("default", "tree.ll128", "default.simple"))
    assert got["allreduce"]["default"] == ({}, "")
    assert got["allreduce"]["tree.ll128"] == ({"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL128"}, "")
    assert got["allreduce"]["default.simple"] == ({"NCCL_PROTO": "Simple"}, "")
    # tree is allreduce's only: elsewhere a skip with the reason, not an error
    assert got["allgather"]["tree.ll128"][1] == "NCCL has no tree allgather"
    assert "grouped ncclSend/ncclRecv" in got["alltoall"]["tree.ll128"][1]
    assert "grouped ncclSend/ncclRecv" in got["alltoall"]["default.simple"][1]


def test_all_is_every_algorithm_the_collective_has():
    got = forcings(("all",))
    assert set(got["allreduce"]) == {"ring", "tree", "collnet_direct", "collnet_chain", "nvls", "nvls_tree"}
    assert set(got["allgather"]) == {"ring", "collnet_direct", "nvls", "pat"}
    assert got["alltoall"] == {}


def test_native_names_are_accepted_and_names_counted_once():
    got = forcings(("Ring", "ring", "allreduce/ring"), colls=("allreduce",))
    assert got == {"allreduce": {"ring": ({"NCCL_ALGO": "Ring"}, "")}}


@pytest.mark.parametrize("sel, message", [
    ("rign", "unknown NCCL algorithm 'rign' (did you mean 'ring'?)"),
    ("ring.ll129", "unknown NCCL protocol 'll129' (did you mean 'll128'?)"),
    ("allgather/tree", "NCCL has no tree allgather; allgather has ring, collnet_direct, nvls, pat"),
    ("bcast/ring", "names collective 'bcast', which the spec does not measure"),
])
def test_bad_names_are_one_line_errors(sel, message):
    with pytest.raises(UserError, match=__import__("re").escape(message)):
        nccl.resolve((sel,), ("allreduce", "allgather"), OFFER_2_28)


def test_an_algorithm_no_measured_collective_has_is_an_error():
    with pytest.raises(UserError, match="NCCL runs tree only for allreduce"):
        nccl.resolve(("tree",), ("bcast",), OFFER_2_28)


def test_older_nccl_lacks_newer_algorithms_as_skips():
    old = nccl.offer_for((2, 18, 5), "nccl.h", "", None)
    assert "pat" not in {a.name for a in old.algorithms}
    got = forcings(("pat",), colls=("allgather",), offer=old)
    assert got["allgather"]["pat"][1] == "NCCL 2.18.5 has no PAT (added in 2.23)"
    with pytest.raises(UserError, match=r"NCCL 2.4.8 has no LL128 \(added in 2.5\)"):
        nccl.resolve(("ring.ll128",), ("allreduce",), nccl.offer_for((2, 4, 8), "h", "", None))


# ---------------------------------------------------------------- discovery

def test_header_version_and_library_names(tmp_path):
    assert nccl.header_version("#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 9\n") == (2, 28, 9)
    assert nccl.header_version("#define NCCL_MAJOR 2\n") is None
    lib = tmp_path / "libnccl.so.2"
    lib.write_bytes(b"\x7fELF\0Tree\0Ring\0LL\0LL128\0Simple\0RingX\0")
    found = nccl.names_in_library(lib, ["Tree", "Ring", "PAT", "LL128", "NVLS"])
    assert found == {"Tree", "Ring", "LL128"}
    offer = nccl.offer_for((2, 28, 9), "h", str(lib), nccl.names_in_library(
        lib, [x.native for x in (*nccl.ALGORITHMS, *nccl.PROTOCOLS)]))
    assert {a.name for a in offer.algorithms} == {"ring", "tree"}
    assert offer.missing["pat"].startswith("the installed NCCL library")
    assert offer.source == "library"


@needs.nccl
def test_discovery_of_the_installed_nccl():
    offer = nccl.discover()
    assert offer.version.count(".") == 2
    assert {"ring", "tree"} <= {a.name for a in offer.algorithms}
    assert {"ll", "ll128", "simple"} <= {p.name for p in offer.protocols}


# ---------------------------------------------------------------- GPUs and points

def test_no_gpu_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("COLLKIT_NVIDIA_SMI", str(tmp_path / "absent"))
    with pytest.raises(UserError, match=r"^backends.nccl needs an NVIDIA GPU and this machine has none"):
        nccl.require_gpus()
    monkeypatch.setenv("COLLKIT_NVIDIA_SMI", fake_smi(tmp_path, 0, fail=True))
    with pytest.raises(UserError, match="could not communicate with the NVIDIA driver"):
        nccl.require_gpus()


def test_plan_skips_ranks_beyond_the_gpus_and_mismatched_in_place(monkeypatch, tmp_path):
    monkeypatch.setenv("COLLKIT_NVIDIA_SMI", fake_smi(tmp_path, 1))
    monkeypatch.setattr(nccl, "discover", lambda: OFFER_2_28)
    s = specs.parse(spec_text('["default", "ring"]', '["allreduce", "reduce_scatter"]', "[1, 2]",
                              extra="in_place = true\n[gpu]\ndevice = [0]\n"))
    plan = planner.build(s, PLATFORM, [])
    run = {p.id: p for p in plan.points}
    p = run["allreduce/nccl/openmpi/ring/p1/1024B/int32/sum/r0/inplace"]
    assert dict(p.env) == {"COLLKIT_BENCH_DEVICE": "0", "NCCL_ALGO": "Ring"}
    assert p.readback == ("NCCL_ALGO", "NCCL_PROTO") and p.native == "Ring" and p.label == "nccl:ring"
    assert "backend=nccl algorithm=ring" in p.to_line(s.measure)
    reasons = {p.id: p.skip_reason for p in plan.skipped}
    assert "Duplicate GPU detected" in reasons["allreduce/nccl/openmpi/default/p2/1024B/int32/sum/r0/inplace"]
    assert "rank x count" in reasons["reduce_scatter/nccl/openmpi/ring/p1/1024B/int32/sum/r0/inplace"]
    # nccl launches never share one with the unforced MPI points (own env)
    assert all(dict(p.env).get("COLLKIT_BENCH_DEVICE") for p in plan.points)


def test_nccl_on_a_simulated_platform_is_refused(monkeypatch):
    from dataclasses import replace
    sim = replace(PLATFORM, simgrid=object())
    with pytest.raises(UserError, match="cannot run on a simulated platform"):
        planner.build(specs.parse(spec_text()), sim, [])


def test_metadata_reads_gpus_versions_and_topology(monkeypatch, tmp_path):
    monkeypatch.setenv("COLLKIT_NVIDIA_SMI", fake_smi(tmp_path, 2))
    monkeypatch.setattr(nccl, "discover", lambda: OFFER_2_28)
    meta = nccl.metadata()
    assert [g["name"] for g in meta["gpus"]] == ["NVIDIA H100 80GB HBM3"] * 2
    assert meta["gpus"][1]["driver"] == "580.95.05"
    assert meta["driver_cuda_version"] == "13.0"
    assert "GPU0" in meta["topology"]
    assert meta["nccl"]["version"] == "2.28.9"


def test_cli_on_a_machine_without_gpu_says_one_line_and_launches_nothing(collkit, tmp_path):
    spec = tmp_path / "gpu.toml"
    spec.write_text(spec_text())
    out = tmp_path / "campaign"
    res = collkit("run", str(spec), "--out", str(out), env={"COLLKIT_NVIDIA_SMI": str(tmp_path / "absent")})
    one_line_error(res, "needs an NVIDIA GPU and this machine has none")
    assert not out.exists()


# ---------------------------------------------------------------- CUDA-aware MPI

def test_cuda_awareness_from_the_libraries_own_reports():
    ompi = "mca:mpi:base:param:mpi_built_with_cuda_support:value:false\n"
    assert gpu_mpi.from_ompi_info(ompi).aware is False
    assert gpu_mpi.from_ompi_info(ompi.replace("false", "true")).aware is True
    assert "built without CUDA" in gpu_mpi.from_ompi_info("").how
    ver = "MPICH configure:    --with-device=ch4:ofi --with-cuda=/usr/local/cuda\n"
    assert gpu_mpi.from_mpich(ver, "MPIR_CVAR_ENABLE_GPU            =1\t...", {}).aware is True
    assert gpu_mpi.from_mpich(ver, "MPIR_CVAR_ENABLE_GPU            =1", {"MPIR_CVAR_ENABLE_GPU": "0"}).aware is False
    assert gpu_mpi.from_mpich("MPICH configure:    --with-device=ch4:ofi\n", "", {}).aware is False


@pytest.mark.parametrize("name", needs.each_mpi())
def test_the_mpis_installed_here_are_not_cuda_aware(name):
    from collkit.mpis import known
    install = known.find_install(name)
    from collkit.backends import backend_for
    got = backend_for(install).cuda_aware(install)
    assert got.aware is False and got.how


def test_device_parallel_rings_is_an_allgather_without_forcing():
    got = forcings(("parallel_rings",), colls=("allgather", "allreduce"))
    assert got["allgather"]["parallel_rings"] == ({}, "")
    assert got["allreduce"]["parallel_rings"][1] == "parallel_rings is an allgather"
    assert "parallel_rings" not in forcings(("all",))["allgather"]
    with pytest.raises(UserError, match="NCCL_PROTO does not choose its protocol"):
        nccl.resolve(("parallel_rings.ll",), ("allgather",), OFFER_2_28)
    with pytest.raises(UserError, match="parallel_rings is an allgather, which the spec does not measure"):
        nccl.resolve(("parallel_rings",), ("allreduce",), OFFER_2_28)
    with pytest.raises(UserError, match=r"did you mean 'parallel_rings'"):
        nccl.resolve(("parallel_ring",), ("allgather",), OFFER_2_28)


def test_cli_with_a_gpu_but_without_the_nccl_build_names_the_build_option(collkit, tmp_path):
    from ck_trace_build import built
    bench = built("openmpi", "bench")
    if bench is not None and nccl.bench_beside(bench).exists():
        pytest.skip("openmpi's build has collkit-bench-nccl here")
    spec = tmp_path / "gpu.toml"
    spec.write_text(spec_text())
    res = collkit("run", str(spec), "--out", str(tmp_path / "c"), env={"COLLKIT_NVIDIA_SMI": fake_smi(tmp_path, 1)})
    one_line_error(res, "needs collkit-bench-nccl for openmpi", "-DCOLLKIT_NCCL=ON")
    assert not (tmp_path / "c").exists()


def test_cli_refuses_instrument_with_nccl(collkit, tmp_path):
    spec = tmp_path / "gpu.toml"
    spec.write_text(spec_text(extra="instrument = true\n"))
    res = collkit("run", str(spec), "--out", str(tmp_path / "c"), env={"COLLKIT_NVIDIA_SMI": fake_smi(tmp_path, 1)})
    one_line_error(res, "instrument = true and backends.nccl cannot be combined")


def test_gpu_topology_in_metadata_has_no_terminal_codes():
    # nvidia-smi topo -m as an H100 machine printed it into a pipe (driver 580.159.04)
    raw = "\x1b[4mGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\nGPU0\t X \t0-15\t0\t\tN/A\n"
    clean = nccl.strip_terminal_codes(raw)
    assert clean == "GPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-15\t0\t\tN/A\n"
    assert "\x1b" not in clean
