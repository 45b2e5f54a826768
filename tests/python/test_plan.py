"""From spec to points, against the libraries' offers read from checked-in captures
(no MPI needed): names resolved per library, skips recorded with their reason."""

from pathlib import Path

import pytest

from collkit.backends import mpich, openmpi
from collkit.campaign import plan as planner
from collkit.campaign import spec as specs
from collkit.campaign.platform import Platform, PlatformMPI
from collkit.common.errors import UserError
from collkit.mpis.install import MPIInstall
from collkit.library.registry import Algorithm, Constraints

FIXTURES = Path(__file__).parent / "fixtures"
OFFERS = {
    "openmpi": openmpi.build_offer(openmpi.parse((FIXTURES / "ompi_info-4.1.4.txt").read_text()), tool="ompi_info"),
    "mpich": mpich.build_offer(mpich.parse((FIXTURES / "mpivars-5.0.2.txt").read_text()),
                               version=mpich.parse_version((FIXTURES / "mpichversion-5.0.2.txt").read_text()),
                               tool="mpivars"),
}
PLATFORM = Platform("test", "test", {m: PlatformMPI(MPIInstall(m, Path("/bin/true")), Path("/bin/true"))
                                     for m in OFFERS})
REGISTRY = [
    Algorithm("allreduce", "ring", "ck_allreduce_ring", "", "", Constraints(True, False, 0)),
    Algorithm("allreduce", "rabenseifner", "ck_allreduce_rabenseifner", "", "", Constraints(True, False, 0)),
    Algorithm("bcast", "binomial_halving", "ck_bcast_binomial_halving", "", "", Constraints(False, False, 0)),
    Algorithm("allgather", "pow2only", "ck_allgather_pow2only", "", "", Constraints(False, True, 16)),
]


def build(text: str):
    return planner.build(specs.parse(text), PLATFORM, REGISTRY, discover=lambda pm: OFFERS[pm.name])


def spec(mpi: str, collkit: str = "", collectives='["allreduce", "bcast"]', ranks="[4]", sizes='["64B"]'):
    lines = [f"collectives = {collectives}", f"sizes = {sizes}", f"ranks = {ranks}",
             'mpi = ["openmpi", "mpich"]', "[backends]", f"mpi = {mpi}"]
    if collkit:
        lines.append(f"collkit = {collkit}")
    return "\n".join(lines) + "\n"


def test_all_means_each_librarys_own_algorithms_without_cross_skips():
    p = build(spec('["default", "all"]'))
    assert not p.skipped
    ompi = {x.algorithm for x in p.points if x.mpi == "openmpi" and x.collective == "allreduce"}
    mpich_ = {x.algorithm for x in p.points if x.mpi == "mpich" and x.collective == "allreduce"}
    assert {"default", "ring", "redscat_allgather", "segmented_ring", "nonoverlapping"} <= ompi
    assert {"default", "mpich_ring", "rabenseifner", "tree", "recexch"} <= mpich_
    assert "tree" not in ompi and "segmented_ring" not in mpich_
    # MPICH's ring cuts ceil(n/p) blocks: not "ring" (docs/algorithms.md, name parity)
    assert "ring" not in mpich_ and "mpich_ring" not in ompi
    # Open MPI's redscat_allgather folds and splits unlike MPICH's: not "rabenseifner" (docs/algorithms.md)
    assert "rabenseifner" not in ompi


def test_a_canonical_name_one_library_lacks_is_skipped_with_the_reason():
    p = build(spec('["bcast/binomial_halving"]'))
    assert [x.mpi for x in p.points] == ["mpich"]
    assert [x.skip_reason for x in p.skipped] == ["Open MPI 4.1.4 has no bcast algorithm 'binomial_halving'"]


def test_a_librarys_own_name_for_another_schedule_is_skipped_naming_its_collkit_name():
    """MPICH's own allreduce "ring" is mpich_ring (ceil(n/p) blocks): asked for as
    "ring", the point is recorded skipped with the name to use, never dropped
    silently (it was, when MPICH was the only library of the spec)."""
    text = spec('["default", "allreduce/ring"]', collectives='["allreduce"]').replace(
        'mpi = ["openmpi", "mpich"]', 'mpi = ["mpich"]')
    p = build(text)
    assert [x.algorithm for x in p.points] == ["default"]
    (skipped,) = p.skipped
    assert skipped.mpi == "mpich" and skipped.algorithm == "ring"
    assert "sends other messages than libcollkit's ring" in skipped.skip_reason
    assert "force it as 'mpich_ring'" in skipped.skip_reason
    # with both libraries, Open MPI runs its ring and MPICH's is skipped the same way
    both = build(spec('["allreduce/ring"]', collectives='["allreduce"]'))
    assert [x.mpi for x in both.points] == ["openmpi"]
    assert ["force it as 'mpich_ring'" in x.skip_reason for x in both.skipped] == [True]


def test_forcing_settings_per_library():
    p = build(spec('["allreduce/ring", "allreduce/mpich_ring"]'))
    by = {x.mpi: x for x in p.points}
    # Open MPI: dynamic rules for the launch, the id through MPI_T on a communicator made after it
    assert dict(by["openmpi"].env) == {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}
    assert dict(by["openmpi"].cvars) == {"coll_tuned_allreduce_algorithm": "4"} and by["openmpi"].fresh_comm
    line = by["openmpi"].to_line(specs.Measure())
    assert "set=coll_tuned_allreduce_algorithm:4" in line and "comm=fresh" in line
    assert dict(by["mpich"].cvars) == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring",
                                       "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0"}
    assert "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM" not in dict(by["mpich"].env)
    assert "set=MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE:0,MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM:ring" in \
        by["mpich"].to_line(specs.Measure())
    assert "comm=" not in by["mpich"].to_line(specs.Measure())


def test_library_conditions_and_registry_constraints_become_skips():
    p = build(spec('["allreduce/ring"]', collkit='"all"', collectives='["allreduce", "allgather"]', ranks="[6]",
                   sizes='["8B", "64B"]'))
    reasons = sorted(x.skip_reason for x in p.skipped)
    assert any("Open MPI 4.1.4 allreduce/ring: ring needs count >= number of ranks" in r for r in reasons)
    assert "collkit allgather/pow2only needs a power-of-two rank count" in reasons
    assert all(x.bytes == 8 for x in p.skipped if x.mpi == "openmpi" and x.backend == "mpi")


def test_launch_grouping_puts_every_algorithm_of_a_library_and_rank_count_in_one_launch():
    p = build(spec('["default", "all"]', collkit='"all"'))
    keys = list(dict.fromkeys(x.launch_key() for x in p.points))
    # per library and rank count: the default, libcollkit's and every forced algorithm
    # share one launch (forced per point: MPI_T), so they compare inside launches
    assert sorted(k[:2] for k in keys) == sorted({(x.mpi, x.ranks) for x in p.points})
    by = {k[0]: dict(k[2]) for k in keys}
    assert by == {"openmpi": {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"},
                  "mpich": {"MPIR_CVAR_COLLECTIVE_FALLBACK": "error"}}
    default = next(x for x in p.points if x.mpi == "openmpi" and x.algorithm == "default")
    assert not default.cvars and not default.fresh_comm
    # inside a launch the algorithms of one collective and size are neighbours
    ompi = [x for x in p.points if x.mpi == "openmpi"]
    cells = [(x.collective, x.bytes) for x in ompi]
    assert cells == sorted(cells, key=lambda c: (["allreduce", "bcast"].index(c[0]) if c[0] in
                                                 ("allreduce", "bcast") else 9, c[1]))


def test_a_default_only_campaign_runs_the_library_as_it_ships():
    p = build(spec('["default"]', collkit='"all"'))
    assert {x.env for x in p.points} == {()}


@pytest.mark.parametrize("mpi, message", [
    ('["ring", "bogus"]', "unknown MPI library algorithm 'bogus'"),
    ('["99"]', "unknown MPI library algorithm '99'"),
    ('["reduce/ring"]', "names collective 'reduce', which the spec does not measure"),
    ('["allreduce/rign"]', "(did you mean 'allreduce/ring'?)"),
])
def test_bad_names_fail_before_launch(mpi, message):
    with pytest.raises(UserError) as err:
        build(spec(mpi))
    assert message in str(err.value)


def test_a_point_reads_back_from_its_description():
    from collkit.campaign.points import Plan, Point
    p = build(spec('["allreduce/ring", "bcast/binomial_halving"]'))
    assert p.points and p.skipped and any(x.env for x in p.points) and any(x.cvars for x in p.points)
    for point in p.points + p.skipped:
        assert Point.from_dict(point.describe()) == point
    res = {"points": [x.describe() for x in p.points], "skipped": [x.describe() for x in p.skipped]}
    assert Plan.from_resolved(res) == p
