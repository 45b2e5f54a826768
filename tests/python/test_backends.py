"""collkit.backends: what Open MPI and MPICH offer, canonical names, forcing, `collkit list`.

Parsing runs on trimmed captures of the real tools (fixtures/); the live tests
ask the installed libraries and run a small MPI program under the forcing
environment to see that the forced algorithm is the one that runs."""

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

import needs
from cli_runner import one_line_error
from collkit import backends
from collkit.backends import mpich, openmpi
from collkit.mpis.identity import FAMILIES
from collkit.common.errors import UserError
from collkit.mpis import known
from collkit.mpis.install import MPIInstall
from collkit.mpis.known import find_install as find

FIXTURES = Path(__file__).parent / "fixtures"
OMPI_INFO = (FIXTURES / "ompi_info-4.1.4.txt").read_text()
MPIVARS = (FIXTURES / "mpivars-5.0.2.txt").read_text()
MPICHVERSION = (FIXTURES / "mpichversion-5.0.2.txt").read_text()


@pytest.fixture(autouse=True)
def _fresh_cache():
    backends.clear_cache()
    yield
    backends.clear_cache()


def ompi_offer(text=OMPI_INFO):
    return openmpi.build_offer(openmpi.parse(text), tool="/usr/bin/ompi_info")


def mpich_offer(text=MPIVARS):
    return mpich.build_offer(mpich.parse(text), version=mpich.parse_version(MPICHVERSION), tool="mpivars")


def names(offer, coll):
    return [a.name for a in offer.for_collective(coll)]


# --- Open MPI, from the ompi_info capture -------------------------------------------------

def test_ompi_info_is_parsed():
    info = openmpi.parse(OMPI_INFO)
    assert info.version == "4.1.4"
    assert info.priorities["tuned"] == 30 and info.priorities["han"] == 0
    assert "tuned" in info.components and "base" not in info.components
    assert info.enumerators["allreduce"][:2] == [("0", "ignore"), ("1", "basic_linear")]
    # MPI_Reduce_scatter_block has its own parameter in 4.1.4.
    assert dict(info.enumerators["reduce_scatter_block"]) == {
        "0": "ignore", "1": "basic_linear", "2": "recursive_doubling", "3": "recursive_halving", "4": "butterfly"}
    # Other components' enumerations are not tuned's.
    assert "iallreduce" not in info.enumerators


def test_ompi_offer_lists_every_tuned_algorithm_under_its_canonical_name():
    offer = ompi_offer()
    assert offer.mpi == "openmpi" and offer.library == "Open MPI 4.1.4"
    assert names(offer, "allreduce") == ["basic_linear", "nonoverlapping", "recursive_doubling", "ring",
                                         "segmented_ring", "redscat_allgather"]
    assert names(offer, "bcast") == ["linear", "multi_chain", "chain", "split_binary_tree", "binary_tree",
                                     "binomial_doubling", "knomial", "scatter_allgather",
                                     "ompi_scatter_allgather_ring"]
    assert names(offer, "reduce") == ["linear", "multi_chain", "chain", "binary", "binomial_doubling",
                                      "in_order_binary", "redscat_gather"]
    assert names(offer, "reduce_scatter") == ["basic_linear", "recursive_doubling_full", "recursive_halving",
                                              "butterfly"]
    assert names(offer, "alltoall") == ["basic_linear", "linear_shift", "bruck", "linear_sync", "two_proc"]
    assert names(offer, "allgather") == ["linear", "bruck", "recursive_doubling", "ring", "neighbor_exchange",
                                         "two_proc"]
    # "ignore" is the library's own choice, not an algorithm.
    assert all(a.native != "ignore" for a in offer.algorithms)
    assert offer.default_native["allreduce"] == ("ignore", "0")
    assert "decision rules" in offer.defaults["allreduce"]


def test_ompi_forcing_allreduce_ring():
    ring = ompi_offer().force("allreduce", "ring")
    assert (ring.native, ring.native_id) == ("ring", "4")
    # Nothing ranks above tuned on this install, so nothing is excluded. Dynamic rules in
    # the launch's environment (shared with the default's launch), the id through MPI_T
    # for the point, read by tuned when the point's own communicator is made.
    assert ring.env == {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}
    assert ring.cvars == {"coll_tuned_allreduce_algorithm": "4"} and ring.fresh_comm
    assert ompi_offer().launch_env == ring.env
    assert ring.readback == ("coll_tuned_use_dynamic_rules", "coll_tuned_allreduce_algorithm")


def test_ompi_reduce_scatter_forces_the_block_variant_the_benchmark_calls():
    rh = ompi_offer().force("reduce_scatter", "recursive_halving")
    assert rh.cvars["coll_tuned_reduce_scatter_block_algorithm"] == "3"
    assert "coll_tuned_reduce_scatter_block_algorithm" in rh.readback


def test_ompi_segmented_algorithms_get_their_segment_size():
    offer = ompi_offer()
    chain = offer.force("bcast", "chain")
    assert chain.native == "pipeline"
    assert chain.cvars["coll_tuned_bcast_algorithm_segmentsize"] == "65536"
    assert "coll_tuned_bcast_algorithm_segmentsize" in chain.readback
    seg = offer.force("allreduce", "segmented_ring")
    assert seg.cvars["coll_tuned_allreduce_algorithm_segmentsize"] == str(1 << 20)
    assert "coll_tuned_bcast_algorithm_segmentsize" not in offer.force("bcast", "binomial").cvars


def test_ompi_force_accepts_canonical_native_and_id():
    offer = ompi_offer()
    by_name = offer.force("alltoall", "bruck")
    assert offer.force("alltoall", "modified_bruck") is by_name
    assert offer.force("alltoall", "3") is by_name
    # Canonical names win: bcast "chain" is the single chain (native "pipeline"),
    # Open MPI's own "chain" is reachable as multi_chain or by id.
    assert offer.force("bcast", "chain").native == "pipeline"
    assert offer.force("bcast", "multi_chain").native == "chain"
    assert offer.force("bcast", "2").native == "chain"


def test_ompi_unknown_name_suggests_the_closest():
    with pytest.raises(UserError, match=r"did you mean 'rabenseifner'\?"):
        ompi_offer().force("allreduce", "rabenseiffner")


def test_ompi_invalid_numeric_id_is_refused():
    # Open MPI itself would only print a warning and run its default.
    with pytest.raises(UserError, match=r"no allreduce algorithm with id 99 \(ids: 1 basic_linear"):
        ompi_offer().force("allreduce", "99")
    with pytest.raises(UserError, match="not offered"):
        ompi_offer().force("allreduce", "0")


def test_unknown_collective_is_a_user_error():
    with pytest.raises(UserError, match="did you mean 'allreduce'"):
        ompi_offer().force("allredcue", "ring")


def test_ompi_components_above_tuned_are_excluded():
    text = OMPI_INFO + ("mca:coll:hcoll:version:\"component:4.1.4\"\n"
                        "mca:coll:hcoll:param:coll_hcoll_priority:value:90\n"
                        "mca:coll:han:param:coll_han_priority:value:35\n")
    ring = ompi_offer(text).force("allreduce", "ring")
    assert ring.env["OMPI_MCA_coll"] == "^han,hcoll"
    assert "coll" in ring.readback


def test_ompi_dynamic_rules_file_is_switched_off():
    text = OMPI_INFO.replace("coll_tuned_dynamic_rules_filename:value:",
                             "coll_tuned_dynamic_rules_filename:value:/etc/rules.conf")
    ring = ompi_offer(text).force("allreduce", "ring")
    assert ring.env["OMPI_MCA_coll_tuned_dynamic_rules_filename"] == ""
    assert "/etc/rules.conf" in ompi_offer(text).defaults["allreduce"]


def test_ompi_without_tuned_is_a_user_error():
    text = "\n".join(ln for ln in OMPI_INFO.splitlines() if ":tuned:" not in ln)
    with pytest.raises(UserError, match="no coll/tuned"):
        ompi_offer(text)


def test_ompi_silent_substitutions_make_a_point_unusable():
    offer = ompi_offer()
    ring = offer.force("allreduce", "ring")
    assert ring.unusable(ranks=8, count=8) is None
    assert "silently runs recursive_doubling" in ring.unusable(ranks=8, count=4)
    rd = offer.force("allgather", "recursive_doubling")
    assert rd.unusable(ranks=8, count=1) is None
    assert "power-of-two" in rd.unusable(ranks=6, count=1)
    rab = offer.force("allreduce", "redscat_allgather")
    assert rab.unusable(ranks=6, count=4) is None and rab.unusable(ranks=6, count=3)
    assert offer.force("alltoall", "two_proc").unusable(ranks=4, count=1)
    # one rank: coll/self serves it (test_ompi_components.py), so no tuned algorithm runs
    assert all("coll/self serves one rank" in a.unusable(ranks=1, count=64) for a in offer.algorithms)
    assert rd.unusable(ranks=2, count=1) is None


def test_ompi_readback_values_decode():
    offer = ompi_offer()
    assert offer.decode("coll_tuned_allreduce_algorithm", "4") == "ring"
    assert offer.decode("coll_tuned_use_dynamic_rules", "1") == "true"
    assert offer.decode("coll_tuned_allreduce_algorithm", "ring") == "ring"


# --- MPICH, from the mpivars capture ------------------------------------------------------

def test_mpivars_is_parsed():
    cvars = mpich.parse(MPIVARS)
    allreduce = [n for n, _ in cvars["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"].items]
    assert allreduce[0] == "auto" and allreduce.index("ring") == 8  # MPI_T reads ring back as 8
    assert [n for n, _ in cvars["MPIR_CVAR_GATHER_INTRA_ALGORITHM"].items] == ["auto", "binomial", "nb"]
    assert [n for n, _ in cvars["MPIR_CVAR_DEVICE_COLLECTIVES"].items] == ["all", "none", "percoll"]
    assert [n for n, _ in cvars["MPIR_CVAR_COLLECTIVE_FALLBACK"].items] == ["error", "print", "silent"]
    assert cvars["MPIR_CVAR_BCAST_TREE_KVAL"].items == ()
    assert mpich.parse_version(MPICHVERSION) == "5.0.2"


def test_mpich_offer_lists_every_value_under_its_canonical_name():
    offer = mpich_offer()
    assert offer.library == "MPICH 5.0.2"
    assert names(offer, "allreduce") == ["nb", "recursive_doubling", "recursive_multiplying", "rabenseifner",
                                         "tree", "recexch", "mpich_ring", "k_reduce_scatter_allgather"]
    assert names(offer, "bcast") == ["binomial_halving", "nb", "scatter_recursive_doubling_allgather",
                                     "scatter_ring_allgather", "pipelined_tree", "tree"]
    assert names(offer, "alltoall") == ["bruck", "k_brucks", "nb", "pairwise", "pairwise_sendrecv_replace",
                                        "linear"]
    assert names(offer, "reduce") == ["binomial_doubling", "nb", "rabenseifner"]
    assert names(offer, "reduce_scatter") == ["noncommutative", "recursive_doubling_full", "pairwise",
                                              "recursive_halving", "nb"]
    excluded = {(e.collective, e.native) for e in offer.excluded}
    assert {("allreduce", "smp"), ("allreduce", "ccl"), ("bcast", "smp"), ("reduce", "smp"),
            ("allreduce", "auto")} <= excluded
    assert offer.default_native["bcast"] == ("auto", "auto")
    assert offer.defaults["allreduce"].startswith("auto: Internal algorithm selection")


def test_mpich_forcing_allreduce_ring():
    ring = mpich_offer().force("allreduce", "mpich_ring")
    assert (ring.native, ring.native_id) == ("ring", "ring")
    # MPIR_CVAR_DEVICE_COLLECTIVES is percoll: the algorithm and the device's own
    # allreduce switched per point (MPI_T), inside the default's launch.
    assert ring.env == {"MPIR_CVAR_COLLECTIVE_FALLBACK": "error"} == mpich_offer().launch_env
    assert ring.cvars == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring", "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0"}
    assert ring.readback[0] == "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"
    assert "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE" in ring.readback and not ring.fresh_comm


def test_mpich_without_per_collective_device_switch_forces_in_a_launch_of_its_own():
    # DEVICE_COLLECTIVES=all (the device decides every collective whatever the
    # per-collective switches say): forcing switches the device off for the whole
    # launch, which changes the default, so the forced points get their own launch.
    text = MPIVARS.replace("MPIR_CVAR_DEVICE_COLLECTIVES    =2", "MPIR_CVAR_DEVICE_COLLECTIVES    =0")
    offer = mpich.build_offer(mpich.parse(text))
    ring = offer.force("allreduce", "mpich_ring")
    assert offer.launch_env is None
    assert ring.env == {"MPIR_CVAR_DEVICE_COLLECTIVES": "none", "MPIR_CVAR_COLLECTIVE_FALLBACK": "error"}
    assert ring.cvars == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}


def test_mpich_reduce_scatter_forces_the_block_variant():
    rh = mpich_offer().force("reduce_scatter", "recursive_halving")
    assert rh.cvars["MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM"] == "recursive_halving"


def test_mpich_force_by_native_name_and_refusals():
    offer = mpich_offer()
    assert offer.force("allreduce", "reduce_scatter_allgather").name == "rabenseifner"
    assert offer.force("alltoall", "scattered").name == "linear"
    with pytest.raises(UserError, match="not offered: needs ranks on more than one node"):
        offer.force("allreduce", "smp")
    with pytest.raises(UserError, match="did you mean 'recursive_doubling'"):
        offer.force("allreduce", "recursive_doubeling")
    with pytest.raises(UserError, match="cannot be forced"):
        offer.force("allreduce", "7")


def test_mpich_requirements():
    offer = mpich_offer()
    rab = offer.force("allreduce", "rabenseifner")
    assert rab.unusable(ranks=4, count=1024) is None
    assert "count >= the largest power of two" in rab.unusable(ranks=4, count=2)
    rep = offer.force("alltoall", "pairwise_sendrecv_replace")
    assert rep.unusable(ranks=4, count=8) and rep.unusable(ranks=4, count=8, in_place=True) is None
    assert offer.force("allgather", "recursive_doubling").unusable(ranks=6, count=8)


def test_mpich_readback_values_decode():
    offer = mpich_offer()
    assert offer.decode("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "8") == "ring"
    assert offer.decode("MPIR_CVAR_DEVICE_COLLECTIVES", "1") == "none"
    assert offer.decode("MPIR_CVAR_COLLECTIVE_FALLBACK", "0") == "error"


def test_default_readback():
    assert backends.default_readback("openmpi", "reduce_scatter") == (
        "coll_tuned_use_dynamic_rules", "coll_tuned_reduce_scatter_block_algorithm")
    assert backends.default_readback("mpich", "bcast")[0] == "MPIR_CVAR_BCAST_INTRA_ALGORITHM"
    # An MPI collkit cannot force has no algorithm variables to read back.
    assert backends.default_readback("", "bcast") == ()


def test_an_mpi_of_no_known_family_offers_its_default_only(tmp_path):
    offer = backends.discover(MPIInstall("lam", tmp_path / "mpirun", kind="mpi"))
    assert offer.algorithms == () and "not of an MPI family collkit knows" in offer.unforceable
    assert "no forcing" in offer.defaults["bcast"]


def test_a_derivative_without_its_family_tool_offers_its_default_only(tmp_path):
    """Cray MPICH is of the MPICH family, but has no mpivars: default only, with the reason.
    Intel MPI is a family of its own: without impi_info it is a broken installation."""
    _script(tmp_path / "mpirun", "exit 0\n")
    offer = backends.discover(MPIInstall("cray-mpich", tmp_path / "mpirun", family="mpich", kind="cray-mpich"))
    assert offer.algorithms == () and "cannot find mpivars" in offer.unforceable
    with pytest.raises(UserError, match="cannot find impi_info"):
        backends.discover(MPIInstall("intel-mpi", tmp_path / "mpirun", family="impi", kind="intel-mpi"))
    # MPICH itself without mpivars is a broken installation: an error.
    with pytest.raises(UserError, match="cannot find mpivars"):
        backends.discover(MPIInstall("mpich", tmp_path / "mpirun"))


# --- canonical names ---------------------------------------------------------------------

# The same algorithm in both libraries, under libcollkit's registry name.
SHARED = {
    "bcast": set(),
    "reduce": {"binomial_doubling"},
    "gather": {"binomial"},
    "scatter": set(),
    "allgather": {"bruck", "recursive_doubling", "ring"},
    "reduce_scatter": {"recursive_halving"},
    "allreduce": {"recursive_doubling"},
    "alltoall": {"bruck"},
}

# Library algorithms that are libcollkit registry algorithms (checked by reading the sources).
REGISTRY_TWINS = {
    ("openmpi", "bcast", "basic_linear"): "linear",
    ("openmpi", "bcast", "pipeline"): "chain",
    ("openmpi", "bcast", "binomial"): "binomial_doubling",
    ("mpich", "bcast", "binomial"): "binomial_halving",
    ("openmpi", "reduce", "binomial"): "binomial_doubling",
    ("mpich", "reduce", "binomial"): "binomial_doubling",
    ("mpich", "reduce", "reduce_scatter_gather"): "rabenseifner",
    ("mpich", "allreduce", "reduce_scatter_allgather"): "rabenseifner",
    ("openmpi", "allgather", "neighbor"): "neighbor_exchange",
    ("openmpi", "alltoall", "modified_bruck"): "bruck",
    ("mpich", "alltoall", "scattered"): "linear",
    ("mpich", "allgather", "brucks"): "bruck",
    ("openmpi", "allreduce", "ring"): "ring",
    ("mpich", "scatter", "binomial"): "binomial",
    ("mpich", "gather", "binomial"): "binomial",
}


def test_shared_algorithms_have_one_name_in_both_libraries():
    ompi, mpi_ch = ompi_offer(), mpich_offer()
    for coll, shared in SHARED.items():
        assert shared <= set(names(ompi, coll)), coll
        assert shared <= set(names(mpi_ch, coll)), coll
    # one library schedule under one name that libcollkit does not use
    # (tests/python/test_parity.py): Open MPI's recursive doubling is MPICH's
    assert "recursive_doubling_full" in set(names(ompi, "reduce_scatter")) & set(names(mpi_ch, "reduce_scatter"))


@needs.registry
def test_a_library_name_that_is_another_libcollkit_algorithm_is_refused():
    offer = ompi_offer()
    with pytest.raises(UserError, match="force it as 'redscat_allgather'"):
        offer.force("allreduce", "rabenseifner")
    with pytest.raises(UserError, match="force it as 'linear_shift'"):
        offer.force("alltoall", "pairwise")
    with pytest.raises(UserError, match="force it as 'binomial_doubling'"):
        offer.force("scatter", "binomial")
    with pytest.raises(UserError, match="force it as 'recursive_doubling_full'"):
        offer.force("reduce_scatter", "recursive_doubling")
    with pytest.raises(UserError, match="force it as 'mpich_ring'"):
        mpich_offer().force("allreduce", "ring")
    assert offer.force("allreduce", "6").name == "redscat_allgather"


def test_registry_twins_map_to_registry_names():
    offers = {"openmpi": ompi_offer(), "mpich": mpich_offer()}
    for (mpi, coll, native), name in REGISTRY_TWINS.items():
        assert offers[mpi].force(coll, native).name == name, (mpi, coll, native)


def test_canonical_names_are_unique_lower_case_identifiers():
    for offer in (ompi_offer(), mpich_offer()):
        for coll in backends.COLLECTIVES:
            got = names(offer, coll)
            assert len(got) == len(set(got)), (offer.mpi, coll)
            assert all(n.isidentifier() and n == n.lower() for n in got), got


@needs.registry
def test_registry_names_used_exist_in_the_registry():
    from collkit.library import registry
    reg = {(a.collective, a.name) for a in registry.load()}
    for (_, coll, _), name in REGISTRY_TWINS.items():
        assert (coll, name) in reg
    for coll, shared in SHARED.items():
        assert {(coll, n) for n in shared} <= reg


# --- discovery plumbing with stand-in tools ----------------------------------------------

def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_discover_reads_the_tools_next_to_mpirun(tmp_path):
    _script(tmp_path / "mpirun.openmpi", "exit 0\n")
    _script(tmp_path / "ompi_info", f"cat '{FIXTURES / 'ompi_info-4.1.4.txt'}'\n")
    offer = backends.discover(MPIInstall("openmpi", tmp_path / "mpirun.openmpi"))
    assert offer.library == "Open MPI 4.1.4" and offer.tool == str(tmp_path / "ompi_info")
    _script(tmp_path / "mpirun", "exit 0\n")
    _script(tmp_path / "mpivars", f"cat '{FIXTURES / 'mpivars-5.0.2.txt'}'\n")
    _script(tmp_path / "mpichversion", f"cat '{FIXTURES / 'mpichversion-5.0.2.txt'}'\n")
    offer = backends.discover(MPIInstall("mpich", tmp_path / "mpirun"))
    assert offer.library == "MPICH 5.0.2"
    assert backends.discover(MPIInstall("mpich", tmp_path / "mpirun")) is offer  # cached


def test_missing_tool_is_one_clear_line(tmp_path):
    _script(tmp_path / "mpirun.openmpi", "exit 0\n")
    with pytest.raises(UserError, match="cannot find ompi_info next to"):
        backends.discover(MPIInstall("openmpi", tmp_path / "mpirun.openmpi"))
    _script(tmp_path / "mpirun", "exit 0\n")
    with pytest.raises(UserError, match="cannot find mpivars"):
        backends.discover(MPIInstall("mpich", tmp_path / "mpirun"))


def test_failing_tool_is_one_clear_line(tmp_path):
    _script(tmp_path / "mpirun.openmpi", "exit 0\n")
    _script(tmp_path / "ompi_info", "echo 'noise' >&2\necho 'ompi_info: cannot open help file' >&2\nexit 3\n")
    with pytest.raises(UserError) as err:
        backends.discover(MPIInstall("openmpi", tmp_path / "mpirun.openmpi"))
    assert str(err.value).endswith("failed (exit status 3): ompi_info: cannot open help file")
    assert "\n" not in str(err.value)


def test_mpivars_runs_without_stale_algorithm_variables(tmp_path):
    _script(tmp_path / "mpirun", "exit 0\n")
    _script(tmp_path / "mpivars", f"env > '{tmp_path / 'env.txt'}'\ncat '{FIXTURES / 'mpivars-5.0.2.txt'}'\n")
    inst = MPIInstall("mpich", tmp_path / "mpirun", env={"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "bogus",
                                                         "MPIR_CVAR_POLLS_BEFORE_YIELD": "1"})
    backends.discover(inst)
    seen = (tmp_path / "env.txt").read_text()
    assert "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM" not in seen and "MPIR_CVAR_POLLS_BEFORE_YIELD=1" in seen


# --- live: the installed libraries -------------------------------------------------------

@pytest.mark.parametrize("name", needs.each_library())
def test_live_discovery(name):
    offer = backends.discover(find(name))
    for coll in backends.COLLECTIVES:
        assert offer.for_collective(coll), coll
        assert coll in offer.defaults
    ring = offer.force("allreduce", "ring" if find(name).family == "openmpi" else "mpich_ring")
    assert ring.env and ring.cvars
    fixture = ompi_offer() if name == "openmpi" else mpich_offer()
    if offer.library == fixture.library:  # the capture came from this very install
        assert [a.to_json() for a in offer.algorithms] == [a.to_json() for a in fixture.algorithms]


# Each rank logs the lengths its user-defined (commutative) op is called with:
# that sequence tells the algorithms apart without any library internals.
FINGERPRINT_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int ncalls, lens[64];
static void sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
    if (ncalls < 64) lens[ncalls] = *len;
    ncalls++;
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, p, count = atoi(argv[2]), provided;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* NAME=VALUE arguments (integers) are set through MPI_T after MPI_Init, and the
     * call runs on a communicator made after them: collkit-bench's set + comm=fresh. */
    MPI_Comm comm = MPI_COMM_WORLD;
    if (argc > 4) {
        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
        for (int a = 4; a < argc; a++) {
            char *eq = strchr(argv[a], '=');
            int idx, cnt, v = atoi(eq + 1);
            MPI_T_cvar_handle h;
            *eq = '\0';
            if (MPI_T_cvar_get_index(argv[a], &idx) != MPI_SUCCESS ||
                MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt) != MPI_SUCCESS || MPI_T_cvar_write(h, &v) != MPI_SUCCESS) {
                printf("rank %d cannot set %s\n", rank, argv[a]);
                return 1;
            }
            MPI_T_cvar_handle_free(&h);
        }
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    }
    MPI_Op op;
    if (strcmp(argv[1], "builtin") == 0) op = MPI_SUM; else MPI_Op_create(sum, 1, &op);
    int *s = calloc(count, sizeof(int)), *r = calloc(count, sizeof(int));
    int rc = strcmp(argv[3], "reduce") == 0
        ? MPI_Reduce(s, r, count, MPI_INT, op, 0, comm)
        : MPI_Allreduce(s, r, count, MPI_INT, op, comm);
    char line[1024];
    int n = snprintf(line, sizeof line, "rank %d rc %d lens", rank, rc);
    for (int i = 0; i < ncalls && i < 64; i++) n += snprintf(line + n, sizeof line - n, " %d", lens[i]);
    for (int q = 0; q < p; q++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (q == rank) { puts(line); fflush(stdout); }
    }
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def fingerprint(tmp_path_factory):
    built = {}

    def program(mpi: MPIInstall) -> Path:
        if mpi.name not in built:
            out = tmp_path_factory.mktemp(mpi.name) / "fingerprint"
            src = out.with_suffix(".c")
            src.write_text(FINGERPRINT_C)
            subprocess.run([known.find(mpi.name).mpicc, "-O1", "-o", str(out), str(src)], check=True,
                           capture_output=True, timeout=120)
            built[mpi.name] = out
        return built[mpi.name]

    return program


def _fingerprint(mpi, prog, alg, args, ranks=4, mpit=False):
    """Op-call lengths per rank with `alg` forced: its per-point settings in the
    environment (which also binds MPI_Init's own collectives), or, with mpit, set
    through MPI_T after MPI_Init and the call on a communicator made after them, as
    collkit-bench forces it (`set`, `comm=fresh`)."""
    env = mpi.environment()
    env.update(alg.env)
    backend = backends.backend_for(mpi.family)
    if mpit:
        enums = backends.discover(mpi).enums
        values = {k: next((i for i, n in enums.get(k, {}).items() if n == v), v) for k, v in alg.cvars.items()}
        args = [*args, *(f"{k}={v}" for k, v in values.items())]
    else:
        env.update({backend.parameter_variable(k): v for k, v in alg.cvars.items()})
    proc = subprocess.run(mpi.launch(ranks, prog, args), env=env, capture_output=True, text=True, timeout=120)
    ranks_out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("rank "):
            parts = line.split()
            ranks_out[int(parts[1])] = (int(parts[3]), [int(x) for x in parts[5:]])
    return proc, ranks_out


# Op calls per rank at 4 ranks, count 1024: what each algorithm must look like.
PATTERNS = {
    "ring": [256, 256, 256],                    # ring reduce-scatter, one block a step
    "recursive_doubling": [1024, 1024],         # whole vector, log2 p steps
    "rabenseifner": [512, 256],                 # recursive halving
}


@pytest.mark.parametrize("name", needs.each_library())
@pytest.mark.parametrize("algorithm", sorted(PATTERNS))
@pytest.mark.parametrize("mpit", [False, True], ids=["environment", "mpit"])
def test_live_forced_allreduce_is_the_one_that_runs(name, algorithm, mpit, fingerprint):
    mpi = find(name)
    # Open MPI's own Rabenseifner keeps its own name (test_parity.py).
    # MPICH's ring cuts other blocks (mpich_ring; the same op calls here).
    forced = {("openmpi", "rabenseifner"): "redscat_allgather",
              ("mpich", "ring"): "mpich_ring"}.get((mpi.family, algorithm), algorithm)
    alg = backends.discover(mpi).force("allreduce", forced)
    if alg.unusable(ranks=4, count=1024):
        pytest.skip(alg.unusable(ranks=4, count=1024))
    if (name, algorithm) == ("mpich", "rabenseifner"):
        pytest.skip("forced through the environment it aborts MPI_Init (next test); set through MPI_T after "
                    "MPI_Init it refuses this probe's user-defined op ('User set collective algorithm is not "
                    "usable'); test_run_real.py runs it through collkit-bench, on MPI_SUM")
    proc, got = _fingerprint(mpi, fingerprint(mpi), alg, ["user", "1024", "allreduce"], mpit=mpit)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(got) == [0, 1, 2, 3]
    for rank, (rc, lens) in got.items():
        assert rc == 0 and lens == PATTERNS[algorithm], (rank, lens)


@needs.mpich
def test_live_mpich_inapplicable_forced_algorithm_fails_loudly(fingerprint):
    mpi = find("mpich")
    alg = backends.discover(mpi).force("reduce", "rabenseifner")
    assert alg.unusable(ranks=4, count=2)  # count 2 < 4
    proc, got = _fingerprint(mpi, fingerprint(mpi), alg, ["builtin", "2", "reduce"])
    assert got and all(rc != 0 for rc, _ in got.values()), proc.stdout
    proc, got = _fingerprint(mpi, fingerprint(mpi), alg, ["builtin", "1024", "reduce"])
    assert got and all(rc == 0 for rc, _ in got.values()), proc.stdout + proc.stderr[-2000:]


@needs.mpich
def test_live_mpich_rabenseifner_allreduce_in_the_environment_aborts_mpi_init(fingerprint):
    # Why MPICH's algorithms are forced through MPI_T after MPI_Init.
    mpi = find("mpich")
    alg = backends.discover(mpi).force("allreduce", "rabenseifner")
    proc, got = _fingerprint(mpi, fingerprint(mpi), alg, ["builtin", "1024", "allreduce"])
    assert proc.returncode != 0 and not got
    assert "not usable" in proc.stderr or "cannot be applied" in proc.stderr


@pytest.mark.parametrize("name", needs.each_open_mpi())
def test_live_ompi_silent_substitution_matches_the_requirement(name, fingerprint):
    mpi = find(name)
    ring = backends.discover(mpi).force("allreduce", "ring")
    assert ring.unusable(ranks=4, count=2)
    proc, got = _fingerprint(mpi, fingerprint(mpi), ring, ["user", "2", "allreduce"])
    assert proc.returncode == 0 and all(lens == [2, 2] for _, lens in got.values())  # recursive doubling


# --- collkit list ------------------------------------------------------------------------

def test_list_mpi_json(collkit):
    out = collkit("list", "--backend", "mpi", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"mpi"}
    assert {e["mpi"] for e in data["mpi"]} <= set(FAMILIES)
    for entry in data["mpi"]:
        if not entry["available"]:
            assert entry["error"]
            continue
        assert set(entry["defaults"]) == set(backends.COLLECTIVES)
        for alg in entry["algorithms"]:
            assert {"collective", "name", "native", "native_id", "env", "readback"} <= set(alg)


@needs.mpich
def test_list_one_library_and_collective_as_text(collkit):
    out = collkit("list", "--backend", "mpi", "--mpi", "mpich", "--collective", "allreduce")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("MPICH ")
    assert "* default" in out.stdout and "reduce_scatter_allgather" in out.stdout
    assert "bcast" not in out.stdout


def test_list_missing_mpi_asked_for_is_exit_2(collkit, tmp_path):
    out = collkit("list", "--mpi", "mpich", env={"COLLKIT_CACHE": str(tmp_path / "none")})
    assert one_line_error(out).startswith("collkit: error: no MPI named 'mpich'")


def test_list_notes_a_missing_mpi_it_was_not_asked_for(collkit, tmp_path):
    from ck_trace_build import cache_with
    env = {"COLLKIT_CACHE": str(cache_with(tmp_path / "cache", broken=("mpich",)))}
    out = collkit("list", "--backend", "mpi", env=env)
    assert out.returncode == 0, out.stderr
    assert "mpich: not available: cannot find mpivars next to /nonexistent/mpirun" in out.stdout
    data = json.loads(collkit("list", "--backend", "mpi", "--json", env=env).stdout)
    assert {"mpi": "mpich", "available": False} == {k: v for k, v in data["mpi"][-1].items() if k != "error"}


def test_list_collkit_backend(collkit):
    out = collkit("list", "--backend", "collkit", "--collective", "bcast", "--json")
    assert out.returncode == 0, out.stderr
    got = {a["name"] for a in json.loads(out.stdout)["collkit"]}
    assert {"binomial_doubling", "binomial_halving", "linear"} <= got


def test_list_bad_collective_is_one_line(collkit):
    one_line_error(collkit("list", "--collective", "allredcue"), "did you mean 'allreduce'")


def test_list_both_backends_by_default(collkit):
    out = collkit("list", "--collective", "alltoall")
    assert out.returncode == 0, out.stderr
    assert "libcollkit" in out.stdout
    if os.path.exists("/usr/bin/ompi_info"):
        assert "modified_bruck" in out.stdout
