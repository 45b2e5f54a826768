"""The collkit CLI as a user meets it: registry listing, check, and errors."""

import json

import pytest

import needs
from cli_runner import one_line_error
# The classic portfolio that issue #2 names; later code and users rely on these names.
PORTFOLIO = {
    "bcast": {"linear", "binomial_doubling", "binomial_halving", "scatter_allgather_rd",
              "scatter_allgather_ring", "chain"},
    "reduce": {"linear", "binomial_doubling", "binomial_halving", "rabenseifner"},
    "gather": {"linear", "binomial"},
    "scatter": {"linear", "binomial"},
    "allgather": {"ring", "recursive_doubling", "bruck", "neighbor_exchange", "sparbit"},
    "reduce_scatter": {"recursive_halving", "ring", "recursive_doubling"},
    "allreduce": {"recursive_doubling", "rabenseifner", "ring", "reduce_bcast", "binary_blocks"},
    "alltoall": {"linear", "pairwise", "bruck"},
}

# Bine trees and butterflies and Swing (issue #3).
BINE_SWING = {
    "bcast": {"bine", "bine_scatter_allgather"},
    "reduce": {"bine", "bine_rsag"},
    "gather": {"bine", "bine_halving"},
    "scatter": {"bine", "bine_halving"},
    "allgather": {"bine_permute", "bine_remap", "bine_noncontig", "swing"},
    "reduce_scatter": {"bine_permute", "bine_remap", "bine_noncontig", "swing"},
    "allreduce": {"bine_latency", "bine_latency_agreed", "bine_bandwidth", "bine_bandwidth_seg", "swing_latency",
                  "swing_latency_agreed", "swing_bandwidth"},
    "alltoall": {"bine", "bine_butterfly"},
}

# Algorithms whose combining order is not rank order must refuse non-commutative ops.
NEED_COMMUTATIVE = {
    ("reduce", "binomial_halving"), ("reduce", "rabenseifner"),
    ("reduce_scatter", "recursive_halving"), ("reduce_scatter", "ring"),
    ("allreduce", "rabenseifner"), ("allreduce", "ring"), ("allreduce", "ring_seg"), ("allreduce", "binary_blocks"),
    ("reduce", "rabenseifner_halving"), ("allreduce", "rabenseifner_halving"),
    ("reduce_scatter", "butterfly_doubling"),
}
NONCOMMUTATIVE_OK = {
    ("reduce", "linear"), ("reduce", "binomial_doubling"),
    ("reduce_scatter", "recursive_doubling"), ("allreduce", "recursive_doubling"),
    ("allreduce", "reduce_bcast"),
}


def test_algorithms_json_lists_the_portfolio_with_constraints(collkit):
    out = collkit("algorithms", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert set(doc) == {"collectives", "datatypes", "ops", "skew_quantiles", "algorithms"}
    algs = doc["algorithms"]
    got = {}
    for a in algs:
        assert {"collective", "name", "description", "origin", "constraints", "traits"} <= set(a)
        assert a["description"] and a["origin"]
        got.setdefault(a["collective"], set()).add(a["name"])
        key = (a["collective"], a["name"])
        if key in NEED_COMMUTATIVE:
            assert a["constraints"]["commutative_op"], key
        if key in NONCOMMUTATIVE_OK:
            assert not a["constraints"]["commutative_op"], key
    for coll in PORTFOLIO:
        names = PORTFOLIO[coll] | BINE_SWING[coll]
        assert names <= got.get(coll, set()), (coll, names - got.get(coll, set()))
    # Bine and Swing reductions combine partners at +-rho distances, out of rank order.
    for a in algs:
        if a["collective"] in ("reduce", "reduce_scatter", "allreduce") and a["name"] in BINE_SWING[a["collective"]]:
            assert a["constraints"]["commutative_op"], a["name"]


def test_the_ops_are_mpis_predefined_ones_and_a_spec_measures_four(collkit):
    """lib/core/ops.c, the one table: MPI-4.1's predefined reduction ops and the two
    accumulate ops; sum, max, min and prod are what specs and collkit-bench take."""
    from collkit.library import registry
    doc = json.loads(collkit("algorithms", "--json").stdout)
    names = [o["name"] for o in doc["ops"]]
    assert sorted(names) == sorted(["sum", "max", "min", "prod", "land", "band", "lor", "bor", "lxor", "bxor",
                                    "maxloc", "minloc", "replace", "no_op"])
    assert {o["name"] for o in doc["ops"] if not o["reduction"]} == {"replace", "no_op"}
    assert sorted(registry.SPEC_OPS) == ["max", "min", "prod", "sum"]


def test_algorithms_json_carries_the_collective_descriptors(collkit):
    out = collkit("algorithms", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    colls = {c["name"]: c for c in doc["collectives"]}
    assert list(colls) == ["bcast", "reduce", "gather", "scatter", "allgather", "reduce_scatter",
                           "allreduce", "alltoall"]
    assert {a["collective"] for a in doc["algorithms"]} == set(colls)
    assert colls["reduce_scatter"]["mpi_name"] == "MPI_Reduce_scatter_block"
    assert [c for c in colls if colls[c]["has_root"]] == ["bcast", "reduce", "gather", "scatter"]
    assert colls["scatter"]["in_place"] == "recv" and colls["bcast"]["in_place"] == "none"
    assert colls["alltoall"]["send_blocks_other"] == "p" and colls["reduce"]["recv_blocks_other"] == 0
    assert (colls["allreduce"]["busbw_const"], colls["allreduce"]["busbw_per_p"]) == (0, 2)
    assert {d["name"]: d["size"] for d in doc["datatypes"]} == \
        {"int8": 1, "int32": 4, "int64": 8, "float": 4, "double": 8}
    whole = {(a["collective"], a["name"]) for a in doc["algorithms"] if a["traits"]["whole_vector"]}
    assert ("bcast", "binomial_doubling") in whole and ("allreduce", "ring") not in whole
    # issue #32: the papers' butterflies add in different orders on different ranks;
    # every other algorithm returns the same bits everywhere (lib/allreduce/registry.c)
    variant = {(a["collective"], a["name"]) for a in doc["algorithms"] if a["traits"]["fp_rank_variant"]}
    assert variant == {("allreduce", "bine_latency"), ("allreduce", "swing_latency")}
    one = json.loads(collkit("algorithms", "--json", "--collective", "gather").stdout)
    assert [c["name"] for c in one["collectives"]] == ["gather"]
    assert {a["collective"] for a in one["algorithms"]} == {"gather"}


def test_algorithms_table_filters_by_collective(collkit):
    out = collkit("algorithms", "--collective", "allreduce")
    assert out.returncode == 0
    body = out.stdout.splitlines()[2:]
    # wide free-text cells wrap onto continuation lines, which start with blanks
    assert body and all(line.startswith(("allreduce", " ")) for line in body)
    assert sum(line.startswith("allreduce") for line in body) >= 5


@pytest.mark.parametrize("args, needle", [
    (["algorithms", "--collective", "alreduce"], "did you mean 'allreduce'"),
    (["check", "--algorithm", "rign"], "did you mean 'ring'"),
    (["check", "--collective", "bcast", "--algorithm", "ring"], "unknown algorithm 'ring' for bcast"),
    (["check", "-n", "0"], "at least 1"),
    (["check", "--mpi", "lam"], "no MPI named 'lam'"),
    (["frobnicate"], "invalid choice"),
])
def test_user_errors_are_one_line_with_status_2(collkit, args, needle):
    one_line_error(collkit(*args), needle)


def test_missing_mpich_is_a_user_error(collkit, tmp_path):
    one_line_error(collkit("check", "--mpi", "mpich", "-n", "2", env={"COLLKIT_CACHE": str(tmp_path)}),
                   "no MPI named 'mpich' is known here", "collkit build")


@needs.openmpi
def test_check_passes_a_subset_under_openmpi(collkit):
    out = collkit("check", "-n", "3", "-n", "4", "--collective", "allgather", "--level", "quick")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "allgather" in out.stdout and "PASS" in out.stdout
    last = out.stdout.strip().splitlines()[-1]
    passed, failed = last.split(" passed, ")
    assert int(passed) > 100 and failed == "0 failed"


@needs.mpich
def test_check_passes_a_subset_under_mpich(collkit):
    out = collkit("check", "--mpi", "mpich", "-n", "5", "--collective", "reduce", "--level", "quick")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith(" 0 failed")


@pytest.mark.parametrize("mpi", [pytest.param("impi", marks=needs.impi),
                                 pytest.param("openmpi5", marks=needs.openmpi5)])
def test_check_passes_every_collective_under_the_wheels_mpis(collkit, mpi):
    out = collkit("check", "--mpi", mpi, "-n", "4", "-n", "5", "--level", "quick")
    assert out.returncode == 0, out.stdout + out.stderr
    passed, failed = out.stdout.strip().splitlines()[-1].split(" passed, ")
    assert int(passed) > 10000 and failed == "0 failed"


def test_list_shows_the_fp_rank_variant_trait(collkit):
    out = collkit("list", "--backend", "collkit", "--collective", "allreduce")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "traits" in lines[1]
    rows = {ln.split()[1]: ln for ln in lines[3:] if ln.startswith("allreduce")}
    assert "fp results may differ" in rows["bine_latency"] and "fp results may differ" in rows["swing_latency"]
    assert "fp results may differ" not in rows["bine_latency_agreed"]
