"""The backend protocol (backends/protocol.py, backends/families.py): each family's answers
from captured tool output, the documented default for a family collkit does not know, the
choice of a backend on a platform, and the per-call switching fact checked against the
installed libraries."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import needs
from collkit import backends
from collkit.backends import mpich, openmpi, smpi
from collkit.backends.protocol import DefaultOnlyBackend
from collkit.campaign import tuning
from collkit.campaign.platform import Platform, PlatformMPI
from collkit.common.errors import UserError
from collkit.mpis.install import MPIInstall

FIXTURES = Path(__file__).parent / "fixtures"
OMPI_OFFER = openmpi.build_offer(openmpi.parse((FIXTURES / "ompi_info-4.1.4.txt").read_text()), tool="ompi_info")
MPICH_OFFER = mpich.build_offer(mpich.parse((FIXTURES / "mpivars-5.0.2.txt").read_text()), tool="mpivars")


def _native(offer, collective: str, native: str):
    return next(a for a in offer.for_collective(collective) if a.native == native)


def _tuning_file(tmp_path: Path, name: str, text: str) -> tuning.TuningFile:
    path = tmp_path / name
    path.write_text(text)
    return tuning.load(path, name, "fix it")


# ---------------------------------------------------------------- choosing a backend

def test_each_family_has_one_backend_and_every_install_of_it_gets_it(tmp_path):
    ompi, mpi_ch = backends.backend_for("openmpi"), backends.backend_for("mpich")
    assert isinstance(ompi, openmpi.OpenMPIBackend) and isinstance(mpi_ch, mpich.MPICHBackend)
    assert isinstance(backends.backend_for("smpi"), smpi.SMPIBackend)
    # an install is its family's, whatever its name (a derivative, a second MPICH)
    cray = MPIInstall("cray-mpich", tmp_path / "mpirun", family="mpich", kind="cray-mpich")
    assert backends.backend_for(cray) is mpi_ch
    assert backends.tuning_formats() == ("openmpi", "mpich", "impi", "impi-json")
    assert backends.for_format("openmpi") is ompi and backends.for_format("mpich") is mpi_ch
    with pytest.raises(UserError, match="no MPI library reads tuning files of format 'collkit'"):
        backends.for_format("collkit")


def test_an_unknown_family_gets_the_documented_default(tmp_path):
    """An MPI of no family collkit knows: its default only, no MPI_T readback, no tuning
    file, variables passed hydra's way, nothing to switch at run time."""
    lam = MPIInstall("lam", tmp_path / "mpirun", kind="lam")
    backend = backends.backend_for(lam)
    assert isinstance(backend, DefaultOnlyBackend) and backends.backend_for("") is backend
    offer = backend.discover(lam)
    assert offer.algorithms == () and "not of an MPI family collkit knows" in offer.unforceable
    assert backend.forcing_source(lam).startswith("default only: ")
    assert backend.listing(lam) == "# not available: collkit reads no parameter listing of lam\n"
    assert backend.default_readback("bcast") == ()
    assert backend.parameter_variable("X_Y") == "X_Y"
    assert backend.env_flags({"A": "1"}) == ["-genv", "A", "1"]
    assert not backend.reads("openmpi") and not backend.reads("mpich") and not backend.tuning_format
    for call in (lambda: backend.tuned_env(offer, "/f"), lambda: backend.proof_env(tmp_path / "f", 2),
                 lambda: backend.broken_copy("1\n"), lambda: backend.cuda_aware(lam)):
        with pytest.raises(UserError):
            call()
    assert backend.switch_setting(offer, None) is None
    assert not backend.runtime_switch.per_call and not backend.runtime_switch.new_communicators


def test_the_platform_decides_between_smpi_and_the_library(tmp_path, monkeypatch):
    local = Platform(name="here", source="t", mpis={
        "mpich-5": PlatformMPI(MPIInstall("mpich-5", tmp_path / "mpirun", family="mpich"), tmp_path / "bench")})
    assert backends.platform_backend(local, "mpich-5") is backends.backend_for("mpich")
    # a simulated platform's "openmpi" is an install of the Open MPI family by its name,
    # but SMPI with Open MPI's selection logic runs it
    sim_install = MPIInstall("openmpi", tmp_path / "smpirun")
    assert sim_install.family == "openmpi"
    simulated = Platform(name="sim", source="sim:x", mpis={"openmpi": PlatformMPI(sim_install, tmp_path / "b")},
                         simgrid=object())
    chosen = backends.platform_backend(simulated, "openmpi")
    assert isinstance(chosen, smpi.SMPIBackend) and chosen.library == "openmpi" and chosen.bench == tmp_path / "b"
    asked = []
    monkeypatch.setattr(smpi, "discover", lambda lib, run, bench: asked.append((lib, run, bench)) or "offer")
    assert backends.platform_offer(simulated, "openmpi") == "offer"
    assert asked == [("openmpi", tmp_path / "smpirun", tmp_path / "b")]


def test_smpi_is_asked_only_through_a_simulated_platform(tmp_path):
    backend = backends.backend_for("smpi")
    with pytest.raises(UserError, match="sim:NAME"):
        backend.discover(MPIInstall("smpi", tmp_path / "smpirun"))
    with pytest.raises(UserError, match="--cfg"):
        backend.env_flags({"A": "1"})
    assert backend.default_readback("allreduce") == ()


# ---------------------------------------------------------------- Open MPI

def test_open_mpi_answers(tmp_path):
    b = backends.backend_for("openmpi")
    assert b.default_readback("reduce_scatter") == ("coll_tuned_use_dynamic_rules",
                                                    "coll_tuned_reduce_scatter_block_algorithm")
    assert b.parameter_variable("coll_tuned_bcast_algorithm_segmentsize") == \
        "OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize"
    assert b.env_flags({"A": "1", "B": "x y"}) == ["-x", "A=1", "-x", "B=x y"]
    assert b.reads("openmpi") and not b.reads("mpich") and b.tuning_file_kind == "an Open MPI rules file"
    env = b.tuned_env(OMPI_OFFER, "/f.rules")
    assert env["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1"
    assert env["OMPI_MCA_coll_tuned_dynamic_rules_filename"] == "/f.rules"
    assert env["OMPI_MCA_coll_tuned_allreduce_algorithm"] == "0"      # the file decides, nothing forced
    assert b.tuned_readback("bcast")[-1] == "coll_tuned_dynamic_rules_filename"
    path = tmp_path / "t.rules"
    proof = b.proof_env(path, 4)
    assert proof["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1"
    assert proof["OMPI_MCA_coll_tuned_dynamic_rules_filename"] == str(path.resolve())
    # Open MPI 5.0 takes a forced id before the file: nothing is forced in the proof
    assert proof["OMPI_MCA_coll_tuned_reduce_scatter_block_algorithm"] == "0"
    assert proof["OMPI_MCA_coll_tuned_allreduce_algorithm"] == "0"
    rules = "1 # one collective\n2\n1\n4 2\n0 3 0 0 # small\n8192 4 0 0\n"
    broken = b.broken_copy(rules)
    assert "0 99 0 0 # small" in broken and "8192 99 0 0" in broken and broken.startswith("1 # one")
    assert "99" in b.broken_how
    assert b.switch_setting(OMPI_OFFER, _native(OMPI_OFFER, "allreduce", "ring")) == \
        ("coll_tuned_allreduce_algorithm", 4)
    assert b.switch_setting(OMPI_OFFER, _native(OMPI_OFFER, "reduce_scatter", "butterfly"))[0] == \
        "coll_tuned_reduce_scatter_block_algorithm"


def test_open_mpi_refuses_a_rules_file_with_an_id_it_lacks(tmp_path):
    b = backends.backend_for("openmpi")
    good = _tuning_file(tmp_path, "good.rules", "1\n2\n1\n4 1\n0 4 0 0\n")
    b.check_tuning_file(good, OMPI_OFFER, ("allreduce",))
    bad = _tuning_file(tmp_path, "bad.rules", "1\n2\n1\n4 1\n0 42 0 0\n")
    with pytest.raises(UserError, match="names algorithm 42, which Open MPI 4.1.4 does not have"):
        b.check_tuning_file(bad, OMPI_OFFER, ())


# ---------------------------------------------------------------- MPICH

def test_mpich_answers(tmp_path):
    b = backends.backend_for("mpich")
    assert b.default_readback("bcast") == ("MPIR_CVAR_BCAST_INTRA_ALGORITHM", "MPIR_CVAR_DEVICE_COLLECTIVES",
                                           "MPIR_CVAR_COLLECTIVE_FALLBACK", "MPIR_CVAR_BCAST_DEVICE_COLLECTIVE")
    assert b.parameter_variable("MPIR_CVAR_BCAST_TREE_KVAL") == "MPIR_CVAR_BCAST_TREE_KVAL"
    assert b.env_flags({"A": "1"}) == ["-genv", "A", "1"]
    assert b.reads("mpich") and not b.reads("openmpi") and "JSON" in b.tuning_file_kind
    env = b.tuned_env(MPICH_OFFER, "/f.json", {"MPIR_CVAR_DEVICE_COLLECTIVES": "percoll"})
    assert env["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] == "/f.json"
    assert env["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "auto"
    assert env["MPIR_CVAR_DEVICE_COLLECTIVES"] == "percoll"              # the file's companion kept
    assert b.tuned_readback("bcast")[-1] == "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"
    path = tmp_path / "t.json"
    assert b.proof_env(path, 4) == {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(path.resolve()),
                                 "MPIR_CVAR_DEVICE_COLLECTIVES": "none", "MPIR_CVAR_COLLECTIVE_FALLBACK": "error"}
    tree = {"collective=bcast": {"algorithm=MPIR_Bcast_intra_binomial": {}},
            "collective=allreduce": {"algorithm=MPIR_Allreduce_intra_ring": {}}}
    broken = json.loads(b.broken_copy(json.dumps(tree)))
    assert broken["collective=bcast"] == {f"algorithm={mpich.BROKEN_ALGORITHM}": {}}
    assert broken["collective=allreduce"] == tree["collective=allreduce"]
    assert b.switch_setting(MPICH_OFFER, _native(MPICH_OFFER, "allreduce", "ring")) == \
        ("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", 8)


def test_mpich_refuses_a_selection_file_missing_a_measured_collective(tmp_path):
    b = backends.backend_for("mpich")
    tf = _tuning_file(tmp_path, "sel.json", json.dumps(
        {"collective=allreduce": {"algorithm=MPIR_Allreduce_intra_ring": {}},
         "collective=reduce_scatter_block": {"algorithm=MPIR_Reduce_scatter_block_intra_recursive_halving": {}}}))
    b.check_tuning_file(tf, MPICH_OFFER, ("allreduce", "reduce_scatter"))
    b.check_tuning_file(tf, MPICH_OFFER, ())     # a trial: the program's collectives are not known
    with pytest.raises(UserError, match='no rules for bcast.*add "collective=bcast"'):
        b.check_tuning_file(tf, MPICH_OFFER, ("allreduce", "bcast"))


# ---------------------------------------------------------------- switching while running

def test_the_per_call_fact_of_each_family_with_its_evidence():
    switch = {b.family: b.runtime_switch for b in backends.BACKENDS}
    assert switch["mpich"].per_call and switch["mpich"].new_communicators
    assert not switch["openmpi"].per_call and switch["openmpi"].new_communicators
    assert not switch["smpi"].per_call and not switch["smpi"].new_communicators
    assert not switch[""].per_call
    # the evidence names the library's files and functions
    assert "mpir_coll.c" in switch["mpich"].evidence and "MPIR_T_cvar_write_impl" in switch["mpich"].evidence
    assert "coll_tuned_module.c" in switch["openmpi"].evidence
    assert "ompi_coll_tuned_forced_getvalues" in switch["openmpi"].evidence
    assert "set_collectives" in switch["smpi"].evidence
    assert set(switch["mpich"].to_json()) == {"per_call", "new_communicators", "how", "evidence"}


# Starts with one allreduce algorithm forced, writes another through MPI_T, and counts the
# user op's calls on rank 1 for an allreduce on MPI_COMM_WORLD before and after the write,
# and on a communicator duplicated after it.
SWITCH_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int calls;
static void sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    calls++;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}
static int ops(MPI_Comm comm, MPI_Op op) {
    static int s[1024], r[1024];
    calls = 0;
    MPI_Allreduce(s, r, 1024, MPI_INT, op, comm);
    return calls;
}
int main(int argc, char **argv) {
    int provided, rank, n, index = -1;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Op op;
    MPI_Op_create(sum, 1, &op);
    int before = ops(MPI_COMM_WORLD, op);
    MPI_T_cvar_get_num(&n);
    for (int i = 0; i < n && index < 0; i++) {
        char name[256], desc[2048];
        int nl = sizeof name, dl = sizeof desc, verbosity, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_cvar_get_info(i, name, &nl, &verbosity, &dt, &en, desc, &dl, &bind, &scope);
        if (strcmp(name, argv[1]) == 0) index = i;
    }
    MPI_T_cvar_handle h;
    int count, value = atoi(argv[2]), written = -1;
    if (index < 0 || MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS) return 3;
    if (MPI_T_cvar_write(h, &value) != MPI_SUCCESS) return 4;
    MPI_T_cvar_read(h, &written);
    MPI_T_cvar_handle_free(&h);
    int world = ops(MPI_COMM_WORLD, op);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int fresh = ops(dup, op);
    if (rank == 1) printf("written %d ops %d %d %d\n", written, before, world, fresh);
    MPI_Comm_free(&dup);
    MPI_Op_free(&op);
    /* no MPI_T_finalize: after MPI_Finalize it crashes Open MPI 4.1.4 (seen here) */
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.parametrize("name", needs.each_mpi())
def test_live_runtime_switch_is_what_the_library_does(name, tmp_path):
    """At 4 ranks and 1024 ints recursive doubling calls the op twice per rank, the ring
    three times: which one ran after the write shows whether it took effect."""
    from collkit.mpis import known
    install = known.find_install(name)
    backend = backends.backend_for(install)
    offer = backend.discover(install)
    start = _native(offer, "allreduce", "recursive_doubling")
    target = _native(offer, "allreduce", "ring")
    variable, value = backend.switch_setting(offer, target)
    prog = tmp_path / "switch"
    (tmp_path / "switch.c").write_text(SWITCH_C)
    subprocess.run([known.find(name).mpicc, "-O1", "-o", str(prog), str(tmp_path / "switch.c")], check=True,
                   capture_output=True, timeout=120)
    env = install.environment()
    # The start-up algorithm in the environment (MPICH's too: recursive doubling runs
    # MPI_Init's own collectives at 4 ranks).
    env.update(start.env)
    env.update(start.cvars)
    proc = subprocess.run(install.launch(4, prog, [variable, str(value)]), env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("written ")), None)
    assert proc.returncode == 0 and line is not None, proc.stdout + proc.stderr[-2000:]
    written, before, world, fresh = (int(w) for w in line.split()[1:2] + line.split()[3:])
    assert written == value and before == 2, line
    switch = backend.runtime_switch
    assert world == (3 if switch.per_call else 2), line
    assert fresh == (3 if switch.new_communicators else 2), line
