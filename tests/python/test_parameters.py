"""Library parameters as spec dimensions ([parameters.NAME], docs/campaigns.md, "Library
parameters"): values checked against what the library reports before launch, ids
unchanged without parameters, a real Open MPI campaign whose records carry the values
read back, report / compare / tune keeping settings apart, and the segment size in the
Open MPI rules file."""

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

import needs
from cli_runner import collkit, in_process, one_line_error
from collkit.backends import openmpi
from collkit.campaign import plan as planner
from collkit.campaign import spec as specs
from collkit.campaign.platform import Platform, PlatformMPI
from collkit.campaign.points import Point
from collkit.campaign.record import Record, current
from collkit.campaign.spec import Measure
from collkit.common.errors import UserError
from collkit.library.registry import Algorithm, Constraints
from collkit.mpis.install import MPIInstall

ROOT = Path(__file__).resolve().parents[2]


SEG = "coll_tuned_bcast_algorithm_segmentsize"

# What `ompi_info --parsable --all --level 9` prints for the parameters used here (lines
# as Open MPI 4.1.4 writes them): coll/tuned's bcast knobs and one transport parameter.
OMPI_INFO = "\n".join([
    "ompi:version:full:4.1.4",
    "mca:coll:tuned:version:mca:2.1.0",
    "mca:coll:tuned:param:coll_tuned_priority:value:30",
    "mca:coll:tuned:param:coll_tuned_use_dynamic_rules:value:false",
    "mca:coll:tuned:param:coll_tuned_use_dynamic_rules:enumerator:value:0:false",
    "mca:coll:tuned:param:coll_tuned_use_dynamic_rules:enumerator:value:1:true",
    "mca:coll:tuned:param:coll_tuned_use_dynamic_rules:type:bool",
    "mca:coll:tuned:param:coll_tuned_bcast_algorithm:value:ignore",
    "mca:coll:tuned:param:coll_tuned_bcast_algorithm:enumerator:value:0:ignore",
    "mca:coll:tuned:param:coll_tuned_bcast_algorithm:enumerator:value:3:pipeline",
    "mca:coll:tuned:param:coll_tuned_bcast_algorithm:enumerator:value:6:binomial",
    "mca:coll:tuned:param:coll_tuned_bcast_algorithm:type:int",
    f"mca:coll:tuned:param:{SEG}:value:0",
    f"mca:coll:tuned:param:{SEG}:type:int",
    "mca:coll:tuned:param:coll_tuned_bcast_algorithm_tree_fanout:value:4",
    "mca:coll:tuned:param:coll_tuned_bcast_algorithm_tree_fanout:type:int",
    "mca:btl:vader:param:btl_vader_eager_limit:value:4096",
    "mca:btl:vader:param:btl_vader_eager_limit:type:size_t",
    "mca:mpi:base:param:mpi_leave_pinned:value:auto",
    "mca:mpi:base:param:mpi_leave_pinned:enumerator:value:0:false",
    "mca:mpi:base:param:mpi_leave_pinned:enumerator:value:1:true",
    "mca:mpi:base:param:mpi_leave_pinned:enumerator:value:-1:auto",
    "mca:mpi:base:param:mpi_leave_pinned:type:int",
]) + "\n"
OFFER = openmpi.build_offer(openmpi.parse(OMPI_INFO), tool="ompi_info")
PLATFORM = Platform("test", "test", {"openmpi": PlatformMPI(MPIInstall("openmpi", Path("/bin/true")),
                                                            Path("/bin/true"))})
REGISTRY = [Algorithm("bcast", "binomial_halving", "ck_bcast_binomial_halving", "", "", Constraints(False, False, 0))]

BASE = """collectives = ["bcast"]
sizes = ["64KiB"]
ranks = [4]
mpi = ["openmpi"]
[backends]
mpi = ["default", "chain", "binomial_doubling"]
"""


def build(text: str):
    return planner.build(specs.parse(text), PLATFORM, REGISTRY, discover=lambda pm: OFFER)


def with_params(table: str) -> str:
    return BASE + "[parameters.openmpi]\n" + table + "\n"


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("table,message", [
    ("coll_tuned_bcast_algorithm_segmentsise = [8192]", f"has no parameter 'coll_tuned_bcast_algorithm_segmentsise' "
                                                        f"(did you mean '{SEG}'?)"),
    (f'{SEG} = ["big"]', f"{SEG} takes an integer, not 'big'"),
    (f"{SEG} = [8192, -1]", f"{SEG} = -1 is out of range (an integer from 0 to 2147483647)"),
    ("coll_tuned_bcast_algorithm_tree_fanout = 33", "out of range (an integer from 1 to 32)"),
    ("btl_vader_eager_limit = -5", "btl_vader_eager_limit = -5 is out of range"),
    ('mpi_leave_pinned = ["auto", "sometimes"]',
     "mpi_leave_pinned has no value 'sometimes'; it takes false, true, auto"),
    ('coll_tuned_bcast_algorithm = "binomial"', "choose algorithms there, not as parameters"),
    ("coll_tuned_use_dynamic_rules = true", "choose algorithms there, not as parameters"),
])
def test_a_bad_name_or_value_is_refused_before_launch(table, message):
    with pytest.raises(UserError) as err:
        build(with_params(table))
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("parameters.openmpi.")


@pytest.mark.parametrize("text,message", [
    (BASE + "[parameters.mpich]\nMPIR_CVAR_BCAST_TREE_KVAL = 2\n", "[parameters.mpich] names no MPI of `mpi`"),
    (BASE + f"[parameters.openmpi]\n{SEG} = 1.5\n", "must be a value or a non-empty list"),
    (BASE + f"[parameters.openmpi]\n{SEG} = []\n", "must be a value or a non-empty list"),
    ("parameters = 3\n" + BASE, "[parameters] must hold tables"),
    (BASE.replace('mpi = ["default", "chain", "binomial_doubling"]', 'collkit = ["binomial_halving"]')
     + f"[parameters.openmpi]\n{SEG} = 8\n", "[backends] has no mpi"),
])
def test_the_tables_shape_is_checked_when_the_spec_loads(text, message):
    with pytest.raises(UserError) as err:
        specs.parse(text)
    assert message in str(err.value)


def test_nccl_variables_from_the_documented_list():
    text = BASE.replace("[backends]\n", "[backends]\nnccl = [\"default\"]\n") + "[parameters.nccl]\n"
    for table, message in [("NCCL_PROTO = \"LL\"", "choose algorithms there"),
                           ("NCCL_MAX_NCHANNELS = 65", "out of range (an integer from 1 to 64)"),
                           ("NCCL_BUFSIZE = 4194304", "(did you mean 'NCCL_BUFFSIZE'?)")]:
        with pytest.raises(UserError) as err:
            build(text + table + "\n")
        assert message in str(err.value)


def test_mpich_cvars_from_mpivars_cross_the_default_too():
    from collkit.backends import mpich
    fixtures = Path(__file__).parent / "fixtures"
    offer = mpich.build_offer(mpich.parse((fixtures / "mpivars-5.0.2.txt").read_text()), tool="mpivars")
    platform = Platform("test", "test", {"mpich": PlatformMPI(MPIInstall("mpich", Path("/bin/true")),
                                                              Path("/bin/true"))})
    text = BASE.replace('mpi = ["openmpi"]', 'mpi = ["mpich"]').replace(
        '"chain", "binomial_doubling"', '"tree"') + "[parameters.mpich]\n"

    def plan(table):
        return planner.build(specs.parse(text + table + "\n"), platform, REGISTRY, discover=lambda pm: offer)

    points = plan("MPIR_CVAR_BCAST_TREE_KVAL = [2, 4]").points
    assert {p.label for p in points} == {"mpich:default", "mpich:default[bcast_tree_kval=2]",
                                         "mpich:default[bcast_tree_kval=4]", "mpich:tree[bcast_tree_kval=2]",
                                         "mpich:tree[bcast_tree_kval=4]"}
    tree = next(p for p in points if p.label == "mpich:tree[bcast_tree_kval=4]")
    assert dict(tree.env)["MPIR_CVAR_BCAST_TREE_KVAL"] == "4" and "MPIR_CVAR_BCAST_TREE_KVAL" in tree.readback
    assert dict(tree.cvars) == {"MPIR_CVAR_BCAST_INTRA_ALGORITHM": "tree",     # forcing unchanged
                                "MPIR_CVAR_BCAST_DEVICE_COLLECTIVE": "0"}
    with pytest.raises(UserError, match="collkit sets MPIR_CVAR_DEVICE_COLLECTIVES itself"):
        plan('MPIR_CVAR_DEVICE_COLLECTIVES = "all"')
    with pytest.raises(UserError, match="did you mean 'MPIR_CVAR_BCAST_TREE_KVAL'"):
        plan("MPIR_CVAR_BCAST_TREE_KAL = 2")


def test_the_cli_prints_one_line_and_exits_2(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(with_params(f"{SEG} = [-8]"))
    one_line_error(in_process(capsys, "run", spec, "--out", tmp_path / "c"), f"{SEG} = -8 is out of range")
    assert not (tmp_path / "c" / "records.jsonl").exists()


@needs.openmpi
def test_list_shows_the_parameters_as_the_library_reports_them(capsys):
    res = in_process(capsys, "list", "--parameters", "bcast_algorithm_segment", "--mpi", "openmpi")
    assert res.returncode == 0
    assert SEG in res.stdout and "an integer from 0 to 2147483647" in res.stdout
    assert "forced algorithms only" in res.stdout
    res = in_process(capsys, "list", "--parameters", "--json", "--mpi", "openmpi")
    assert res.returncode == 0
    listed = json.loads(res.stdout)["parameters"][0]["parameters"]
    assert {"name": SEG, "kind": "int", "values": "an integer from 0 to 2147483647",
            "notes": "forced algorithms only"} in listed
    one_line_error(in_process(capsys, "list", "--parameters", "x", "--collective", "bcast"), "--parameters")


# ------------------------------------------------------------------ points
def _bench_line(p: Point, **extra) -> dict:
    """A collkit-bench point line for p (docs/bench-protocol.md): its identity echoed, one timing."""
    keep = ("id", "collective", "backend", "algorithm", "count", "bytes", "dtype", "op", "root", "in_place", "ranks")
    return {"type": "point", **{k: v for k, v in p.describe().items() if k in keep}, "status": "ok",
            "iterations": 1, "times_us": [1.0], "stats_us": {"median": 1.0}, **extra}


def test_without_parameters_ids_points_and_lines_are_what_they_were():
    plain = build(BASE)
    ids = sorted(p.id for p in plain.points)
    assert ids == [f"bcast/mpi/openmpi/{a}/p4/65536B/int32/sum/r0/outofplace"
                   for a in ("binomial_doubling", "chain", "default")]
    for p in plain.points:
        assert "parameters" not in p.describe() and "parameters" not in Point.from_dict(p.describe()).describe()
        line = p.to_line(Measure())
        assert "segmentsize" not in line or p.algorithm == "chain"   # chain's own 64 KiB segments (readback)
        rec = Record.from_bench(_bench_line(p), p, launch=0)
        assert "parameters" not in rec.fields and rec.parameters == "" and rec.label == p.label


def test_a_setting_crosses_forced_algorithms_and_leaves_the_default_alone():
    plan = build(with_params(f"{SEG} = [8192, 65536]"))
    by_label = {p.label: p for p in plan.points}
    assert set(by_label) == {"openmpi:default", "openmpi:chain[segmentsize=8192]", "openmpi:chain[segmentsize=65536]",
                             "openmpi:binomial_doubling[segmentsize=8192]",
                             "openmpi:binomial_doubling[segmentsize=65536]"}
    default = by_label["openmpi:default"]
    assert default.id == "bcast/mpi/openmpi/default/p4/65536B/int32/sum/r0/outofplace" and not default.params
    chain = by_label["openmpi:chain[segmentsize=8192]"]
    assert chain.id.endswith(f"/outofplace/{SEG}:8192")
    assert dict(chain.env)[f"OMPI_MCA_{SEG}"] == "8192"      # the setting beats chain's own 64 KiB,
    assert dict(chain.cvars)[SEG] == "8192"                   # also where forcing sets it per point
    assert dict(chain.cvars)["coll_tuned_bcast_algorithm"] == "3" and SEG in chain.readback
    # each setting is a launch of its own (Open MPI reads MCA parameters at start-up), its
    # forced algorithms inside it (forced per point); the default in the shared launch
    assert len({p.launch_key() for p in plan.points}) == 3
    assert Point.from_dict(chain.describe()) == chain
    # a parameter that also shapes the default crosses it, beside the default as it ships
    both = build(with_params("btl_vader_eager_limit = [4096, 65536]"))
    assert {p.label for p in both.points if p.algorithm == "default"} == {
        "openmpi:default", "openmpi:default[btl_vader_eager_limit=4096]",
        "openmpi:default[btl_vader_eager_limit=65536]"}


def test_the_record_carries_the_setting_and_what_the_library_read_back():
    chain = next(p for p in build(with_params(f"{SEG} = 8192")).points if p.algorithm == "chain")
    bench = _bench_line(chain, effective={SEG: "8192", "coll_tuned_bcast_algorithm": "pipeline"})
    rec = Record.from_bench(bench, chain, launch=1)
    assert rec.fields["parameters"] == {SEG: "8192"} and rec.fields["parameters_read"] == {SEG: "8192"}
    assert rec.params == ((SEG, "8192"),) and rec.label == "openmpi:chain[segmentsize=8192]"
    assert Record.from_json(json.loads(json.dumps(rec.to_json()))) == rec


# ------------------------------------------------------------------ a real campaign
@needs.openmpi
def test_example_campaign_under_open_mpi_reads_the_segment_sizes_back(tmp_path, capsys):
    out = collkit("run", ROOT / "examples" / "parameters.toml", "--out", tmp_path / "c",
                  env={"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [json.loads(line) for line in (tmp_path / "c" / "records.jsonl").read_text().splitlines()]
    recs = list(current(lines).values())   # an unstable point's re-measure stands for it
    assert {r["status"] for r in recs} == {"ok"}
    forced = [r for r in recs if r["algorithm"] != "default"]
    assert {(r["algorithm"], r["parameters"][SEG]) for r in forced} == {
        (a, s) for a in ("chain", "binomial_doubling") for s in ("8192", "65536")}
    for r in forced:
        # MPI_T's value, as Open MPI holds it in the running job, equals the setting
        assert r["parameters_read"] == r["parameters"] == {SEG: r["effective"][SEG]}
        assert r["effective"]["coll_tuned_bcast_algorithm"] == {"chain": "pipeline",
                                                                "binomial_doubling": "binomial"}[r["algorithm"]]
    assert all("parameters" not in r for r in recs if r["algorithm"] == "default")
    # each setting ran in launches of its own, shared by the algorithms forced under it
    launches = {}
    for r in (r for r in lines if r["algorithm"] != "default"):
        launches.setdefault(r["parameters"][SEG], set()).add(r["launch"])
    assert len(launches) == 2 and not launches["8192"] & launches["65536"]

    # compare keeps the settings apart; without the parameters key two points would collide
    res = in_process(capsys, "compare", tmp_path / "c", tmp_path / "c", "--format", "json")
    assert res.returncode == 0
    rows = json.loads(res.stdout)["points"]
    assert len(rows) == len(recs)     # one row per point (an unstable one is listed, not compared)
    assert {(r["algorithm"], r["parameters"]) for r in rows} == {(r["algorithm"], f"{SEG}={r['parameters'][SEG]}"
                                                                  if "parameters" in r else "") for r in recs}
    one_line_error(in_process(capsys, "compare", tmp_path / "c", tmp_path / "c", "--ignore-keys", "parameters"),
                   "two points share the key")
    # the HTML report shows each setting as a variant of its own
    html = tmp_path / "r.html"
    assert in_process(capsys, "report", tmp_path / "c", "--html", "--out", html).returncode == 0
    text = html.read_text()
    for alg in ("chain", "binomial_doubling"):
        for seg in (8192, 65536):
            assert f"openmpi:{alg}[segmentsize={seg}]" in text
    # the export names each setting
    res = in_process(capsys, "export", tmp_path / "c", "--format", "csv")
    assert res.returncode == 0
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert {r["parameters"] for r in rows} == {"", f"{SEG}=8192", f"{SEG}=65536"}


# ------------------------------------------------------------------ tune
def _record(alg, params, p, n, median, seed):
    rng = np.random.default_rng(seed)
    times = [float(t) for t in median * (1 + 0.01 * rng.standard_normal(30))]
    rec = {"id": f"bcast/mpi/openmpi/{alg}/p{p}/{n}B" + (f"/{SEG}:{params}" if params else ""),
           "collective": "bcast", "backend": "mpi", "mpi": "openmpi", "algorithm": alg, "ranks": p,
           "count": n // 4, "bytes": n, "dtype": "int32", "op": "sum", "root": 0, "in_place": False,
           "status": "ok", "reason": "", "iterations": 30, "times_us": times,
           "stats_us": {"median": float(np.median(times))}}
    if params:
        rec["parameters"] = {SEG: params}
    return rec


@needs.openmpi
def test_tune_writes_the_winning_segment_size_into_the_rules_file(tmp_path, capsys):
    camp = tmp_path / "c"
    camp.mkdir()
    (camp / "spec.toml").write_text('name = "t"\n')
    (camp / "resolved.json").write_text(json.dumps({"points": [], "skipped": [], "platform": {"name": "local"}}))
    # at 3 ranks: pipeline (chain) with 8 KiB segments fastest from 64 KiB, with 64 KiB segments
    # next, the default slowest; below 64 KiB the default wins
    recs, seed = [], 0
    for n in (1024, 65536, 1048576):
        big = n >= 65536
        for alg, params, t in [("default", "", 100.0), ("chain", "8192", 40.0 if big else 300.0),
                               ("chain", "65536", 70.0 if big else 300.0),
                               ("binomial_doubling", "", 90.0 if big else 400.0)]:
            seed += 1
            recs.append(_record(alg, params, 3, n, t * (1 + n / 65536), seed))
    (camp / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "bcast.rules"
    res = in_process(capsys, "tune", camp, "--format", "openmpi", "--out", out)
    assert res.returncode == 0, res.stderr
    printed = res.stdout
    assert "chain[segmentsize=8192]" in printed
    rows = [ln.split("#", 1)[0].split() for ln in out.read_text().splitlines() if ln.split("#", 1)[0].strip()]
    pipeline = OFFER.force("bcast", "chain").native_id
    chosen = [r for r in rows if len(r) == 4 and r[1] == pipeline]
    assert chosen and all(r[3] == "8192" for r in chosen), out.read_text()
    assert "chain[segmentsize=8192] (pipeline)" in out.read_text()

    # Open MPI reads the file with that segment column: the matrix passes with it, fails with a broken copy
    from collkit.tune import proof
    shown = proof.check("openmpi", out, 3, timeout=240)
    assert shown.ok, "\n".join(shown.lines)
