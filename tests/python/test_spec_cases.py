"""Specs with [[case]] tables: each case checked like the top level, the plan the union
of the cases' points (one per id), and a spec without cases planned as before."""

from pathlib import Path

import pytest

from collkit.backends import openmpi
from collkit.campaign import plan as planner
from collkit.campaign import spec as specs
from collkit.campaign.platform import Platform, PlatformMPI
from collkit.common.errors import UserError
from collkit.library.registry import Algorithm, Constraints
from collkit.mpis.install import MPIInstall

FIXTURES = Path(__file__).parent / "fixtures"
OFFERS = {"openmpi": openmpi.build_offer(openmpi.parse((FIXTURES / "ompi_info-4.1.4.txt").read_text()),
                                         tool="ompi_info")}
PLATFORM = Platform("test", "test", {"openmpi": PlatformMPI(MPIInstall("openmpi", Path("/bin/true")),
                                                            Path("/bin/true"))})
REGISTRY = [
    Algorithm("allreduce", "ring", "ck_allreduce_ring", "", "", Constraints(True, False, 0)),
    Algorithm("bcast", "binomial_halving", "ck_bcast_binomial_halving", "", "", Constraints(False, False, 0)),
    Algorithm("allgather", "pow2only", "ck_allgather_pow2only", "", "", Constraints(False, True, 1)),
]
BACKENDS = '\n[backends]\nmpi = ["default", "ring"]\ncollkit = "all"\n'


def build(text: str):
    return planner.build(specs.parse(text), PLATFORM, REGISTRY, discover=lambda pm: OFFERS[pm.name])


def ids(plan) -> set[str]:
    return plan.all_ids()


def test_without_cases_the_points_and_ids_are_those_of_the_top_level():
    top = 'collectives = ["allreduce", "bcast"]\nsizes = [64, 1024]\nranks = [4]\ndtype = "int32"\nop = "max"\n'
    one_case = ('sizes = [64, 1024]\nranks = [4]\n[[case]]\ncollectives = ["allreduce", "bcast"]\n'
                'dtype = "int32"\nop = "max"\n')
    plain, cased = build(top + BACKENDS), build(one_case + BACKENDS)
    assert ids(plain) == ids(cased) and len(ids(plain)) > 4
    assert [p.id for p in plain.points] == [p.id for p in cased.points]
    # the id names every field that makes the point distinct
    assert "allreduce/mpi/openmpi/default/p4/64B/int32/max/r0/outofplace" in ids(plain)
    assert specs.parse(top + BACKENDS).cases == ()


def test_cases_inherit_the_top_level_and_the_plan_is_their_union():
    text = ('ranks = 4\nop = "sum"\n'
            '[[case]]\ncollectives = "allreduce"\nsizes = [8, 64]\ndtype = "double"\n'
            '[[case]]\ncollectives = "allreduce"\nsizes = [64]\ndtype = "int32"\nop = "max"\nin_place = true\n'
            '[[case]]\ncollectives = "bcast"\nsizes = [100]\ndtype = "int8"\nroot = 3\n'
            '[[case]]\ncollectives = "allreduce"\nsizes = [8]\ndtype = "double"\n') + BACKENDS
    s = specs.parse(text)
    assert [c.op for c in s.cases] == ["sum", "max", "sum", "sum"] and s.cases[2].root == 3
    assert s.collectives == ("allreduce", "bcast") and s.sizes == (8, 64, 100) and s.ranks == (4,)
    plan = build(text)
    got = ids(plan)
    for want in ("allreduce/mpi/openmpi/default/p4/8B/double/sum/r0/outofplace",
                 "allreduce/mpi/openmpi/default/p4/64B/double/sum/r0/outofplace",
                 "allreduce/mpi/openmpi/default/p4/64B/int32/max/r0/inplace",
                 "allreduce/collkit/openmpi/ring/p4/64B/int32/max/r0/inplace",
                 "bcast/mpi/openmpi/default/p4/100B/int8/sum/r3/outofplace",
                 "bcast/collkit/openmpi/binomial_halving/p4/100B/int8/sum/r3/outofplace"):
        assert want in got, want
    # the fourth case repeats the first's 8 B point: one point per id
    every = [p.id for p in plan.points + plan.skipped]
    assert len(every) == len(set(every))
    # no cross product: no int32 point at 8 B, no bcast of doubles
    assert not any("/8B/int32/" in i or i.startswith("bcast/") and "/double/" in i for i in got)
    # "ring" names an allreduce algorithm of Open MPI: the bcast case has none, and that is not an error
    assert not any(p.collective == "bcast" and p.algorithm == "ring" for p in plan.points + plan.skipped)
    count = {p.id: p.count for p in plan.points}
    assert count["allreduce/mpi/openmpi/default/p4/8B/double/sum/r0/outofplace"] == 1
    assert count["bcast/mpi/openmpi/default/p4/100B/int8/sum/r3/outofplace"] == 100


def test_constraints_in_a_case_are_skips_not_failures():
    text = ('[[case]]\ncollectives = "allgather"\nsizes = [8]\nranks = 3\ndtype = "int8"\n'
            '[[case]]\ncollectives = "allreduce"\nsizes = [8]\nranks = 4\n') + BACKENDS
    plan = build(text)
    reasons = {p.id: p.skip_reason for p in plan.skipped}
    assert reasons["allgather/collkit/openmpi/pow2only/p3/8B/int8/sum/r0/outofplace"] == \
        "collkit allgather/pow2only needs a power-of-two rank count"


@pytest.mark.parametrize("cases, message", [
    ('[[case]]\ncollectives = "allreduce"\nsizes = [8]\nranks = 4\n[[case]]\ncollectives = "allreduce"\n'
     'sizes = [6]\nranks = 4\n', "case 2: size 6 B is not a whole number of int32 elements (4 B each)"),
    ('[[case]]\ncollectives = "bcast"\nsizes = [8]\nranks = 2\nroot = 2\n',
     "case 1: root 2 is not a rank of the 2-rank runs"),
    ('[[case]]\ncollectives = "allreduce"\nranks = 4\n', "case 1: missing required key 'sizes'"),
    ('[[case]]\ncollectives = "allreduce"\nsizes = [8]\nranks = 4\nop = "xor"\n', "case 1: unknown op 'xor'"),
    ('[[case]]\ncollectives = "allreduce"\nsizes = [8]\nranks = 4\nmpi = "x"\n',
     "case 1: unknown key 'mpi' in the case"),
    ('[[case]]\ncollective = "allreduce"\nsizes = [8]\nranks = 4\n',
     "case 1: unknown key 'collective': the key is"),
    ('[[case]]\ncollectives = "alreduce"\nsizes = [8]\nranks = 4\n', "case 1: unknown collective 'alreduce'"),
    ('[[case]]\ncollectives = "allreduce"\nsizes = [8]\nranks = 4\nin_place = 1\n',
     "case 1: in_place must be true or false"),
    ('case = 3\n', "case must be an array of tables"),
    ('dtype = "int33"\n[[case]]\ncollectives = "allreduce"\nsizes = [8]\nranks = 4\ndtype = "int8"\n',
     "unknown dtype 'int33'"),
])
def test_each_case_is_checked_like_the_top_level(cases, message):
    with pytest.raises(UserError) as err:
        specs.parse(cases + BACKENDS)
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_a_backend_name_that_fits_no_case_is_still_an_error():
    text = '[[case]]\ncollectives = "bcast"\nsizes = [8]\nranks = 4\n[backends]\nmpi = ["bogus"]\n'
    with pytest.raises(UserError, match="unknown MPI library algorithm 'bogus'"):
        build(text)
    text = '[[case]]\ncollectives = "bcast"\nsizes = [8]\nranks = 4\n[backends]\nmpi = ["reduce/ring"]\n'
    with pytest.raises(UserError, match="names collective 'reduce', which the spec does not measure"):
        build(text)
