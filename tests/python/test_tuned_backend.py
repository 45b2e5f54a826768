"""`[backends] mpi = ["tuned:FILE"]`: a library measured with a tuning file loaded and
nothing forced, and the proof that the library read it (docs/tuning-files.md).

Without MPI: the file's format tells its library, malformed files are refused in one
line, points are planned only for that library, with the campaign's copy. With the
real libraries: `collkit run` records the file and its sha256; MPICH aborts on a
corrupted copy (so it parsed the good one); Open MPI fails the call on an algorithm
id the file invents and, under the pml monitoring component, sends exactly the
forced algorithm's messages per peer with a file choosing it, other ones with a
file choosing another."""

import hashlib
import json
from pathlib import Path

import pytest

import needs
from cli_runner import collkit, one_line_error
from collkit import backends
from collkit.backends import mpich, openmpi
from collkit.campaign import plan as planner
from collkit.campaign import platform as platforms
from collkit.campaign import spec as specs
from collkit.campaign import tuning
from collkit.campaign.platform import Platform, PlatformMPI
from collkit.campaign.record import current
from collkit.common.errors import UserError
from collkit.mpis.install import MPIInstall

FIXTURES = Path(__file__).parent / "fixtures"
RULES = FIXTURES / "tuning" / "openmpi-allreduce.rules"
JSON = FIXTURES / "tuning" / "mpich-ring.json"
OFFERS = {
    "openmpi": openmpi.build_offer(openmpi.parse((FIXTURES / "ompi_info-4.1.4.txt").read_text()), tool="ompi_info"),
    "mpich": mpich.build_offer(mpich.parse((FIXTURES / "mpivars-5.0.2.txt").read_text()), tool="mpivars"),
}
PLATFORM = Platform("test", "test", {m: PlatformMPI(MPIInstall(m, Path("/bin/true")), Path("/bin/true"))
                                     for m in OFFERS})


def spec_text(selections, mpis=("openmpi", "mpich"), collectives='["allreduce"]'):
    return (f"collectives = {collectives}\nsizes = [\"64B\", \"64KiB\"]\nranks = [4]\n"
            f"mpi = [{', '.join(repr(m).replace(chr(39), chr(34)) for m in mpis)}]\n[backends]\n"
            f"mpi = [{', '.join(json.dumps(s) for s in selections)}]\n"
            "[measure]\nmin_iterations = 3\nmax_iterations = 3\ntime_budget_s = 0\nlaunches = 1\n")


def load(tmp_path, selections, **kw):
    (tmp_path / "spec.toml").write_text(spec_text(selections, **kw))
    return specs.load(tmp_path / "spec.toml")


def plan(tmp_path, selections, campaign_dir=None, **kw):
    return planner.build(load(tmp_path, selections, **kw), PLATFORM, [], discover=lambda pm: OFFERS[pm.name],
                         campaign_dir=campaign_dir)


# ------------------------------------------------------------------ the file's format

def test_the_content_tells_the_library():
    ompi = tuning.read(f"tuned:{RULES}", Path("/"))
    assert (ompi.library, ompi.collectives, ompi.name) == ("openmpi", ("allreduce",), "openmpi-allreduce.rules")
    assert ompi.sha256 == hashlib.sha256(RULES.read_bytes()).hexdigest()
    assert tuning.rules(ompi.data) == {"allreduce": [(1, [(0, 3), (4096, 4)])]}
    mp = tuning.read("tuned:mpich-ring.json", JSON.parent)      # relative to the spec's folder
    assert mp.library == "mpich" and "allreduce" in mp.collectives and "ibarrier" in mp.collectives


@pytest.mark.parametrize("content, message", [
    ("hello world\n", "not an Open MPI rules file, an MPICH JSON selection file or Intel MPI"),
    ("rule-file-version-2\n1\n2\n1\n1\n1\n0 4 0 0 0\n", "write the version 1 format"),
    ("{\"collective=allreduce\": \n", "not valid JSON"),
    ("{\"allreduce\": {}}\n", "top-level key 'allreduce' is not 'collective=NAME'"),
    ("[1, 2]\n", "not an Open MPI rules file"),
    ("# only a comment\n", "holds no rules"),
    ("1\n2\n1\n1\n1\n64 4 0 0\n", "starts at 64 B; Open MPI rejects the whole file unless it starts at 0"),
    ("1\n2\n1\n1\n1\n0 010 0 0\n", "leading zero, which Open MPI reads as octal"),
    ("1\n2\n1\n1\n2\n0 4 0 0\n", "the file ends where Open MPI expects a message size"),
    ("1\n2\n1\n1\n1\n0 4 0 0\n7\n", "1 numbers follow the last rule"),
    ("1\n42\n1\n1\n1\n0 4 0 0\n", "collective id 42 is not one of Open MPI's"),
    ("1\n2\n2\n4\n1\n0 4 0 0\n2\n1\n0 3 0 0\n", "communicator size 2 is not above the previous one (4)"),
    ("1\n2\n1\n1\n2\n0 4 0 0\n0 3 0 0\n", "message size 0 is not above the previous one (0)"),
])
def test_malformed_files_are_refused_naming_the_file(tmp_path, content, message):
    bad = tmp_path / "bad.rules"
    bad.write_text(content)
    with pytest.raises(UserError) as err:
        load(tmp_path, ["default", "tuned:bad.rules"])
    text = str(err.value)
    assert message in text and str(bad) in text and "\n" not in text


@pytest.mark.parametrize("selections, message", [
    (["tuned:"], "names no file"),
    (["tuned:missing.rules"], "cannot read"),
    (["tuned:a/x.rules", "tuned:b/x.rules"], "two tuning files called x.rules"),
])
def test_selection_errors(tmp_path, selections, message):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "x.rules").write_text(RULES.read_text())
    with pytest.raises(UserError) as err:
        load(tmp_path, selections)
    assert message in str(err.value)


def test_collkit_backend_takes_no_tuning_file(tmp_path):
    text = spec_text(["default"]).replace("[measure]", "collkit = [\"tuned:x.rules\"]\n[measure]")
    (tmp_path / "spec.toml").write_text(text)
    with pytest.raises(UserError, match="backends.collkit has no tuning files"):
        specs.load(tmp_path / "spec.toml")


# ------------------------------------------------------------------ planning

def test_points_only_for_the_files_library_with_the_campaigns_copy(tmp_path):
    for f in (RULES, JSON):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    p = plan(tmp_path, ["default", "tuned:openmpi-allreduce.rules", "tuned:mpich-ring.json"],
             campaign_dir=tmp_path / "camp")
    tuned = [x for x in p.points if x.algorithm.startswith("tuned:")]
    assert {(x.mpi, x.algorithm) for x in tuned} == {("openmpi", "tuned:openmpi-allreduce.rules"),
                                                     ("mpich", "tuned:mpich-ring.json")}
    assert len(tuned) == 4 and not p.skipped
    o = next(x for x in tuned if x.mpi == "openmpi")
    env = dict(o.env)
    assert env["OMPI_MCA_coll_tuned_dynamic_rules_filename"] == str((tmp_path / "camp/tuning/openmpi-allreduce.rules")
                                                                     .resolve())
    assert env["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1"
    assert env["OMPI_MCA_coll_tuned_allreduce_algorithm"] == "0"       # "ignore": nothing forced
    assert o.tuning_file == "tuning/openmpi-allreduce.rules" and o.tuning_sha256 == hashlib.sha256(
        RULES.read_bytes()).hexdigest()
    assert "coll_tuned_dynamic_rules_filename" in o.readback and not o.cvars
    m = next(x for x in tuned if x.mpi == "mpich")
    env = dict(m.env)
    assert env["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"].endswith("camp/tuning/mpich-ring.json")
    assert env["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "auto"
    # MPICH as a user runs it with the file: the device keeps its collectives unless
    # the file's sidecar takes some (none here: no sidecar beside the fixture)
    assert "MPIR_CVAR_DEVICE_COLLECTIVES" not in env
    assert "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE" in m.readback and not m.cvars
    # resolved.json round trip keeps the tuning fields
    from collkit.campaign.points import Point
    assert Point.from_dict(m.describe()) == m
    # a tuned launch of its own, never mixed with the default's
    assert len({x.launch_key() for x in p.points}) == 4


def test_a_file_for_a_library_the_spec_does_not_measure_is_refused(tmp_path):
    (tmp_path / JSON.name).write_bytes(JSON.read_bytes())
    with pytest.raises(UserError, match=r"an MPICH JSON selection file, but the spec measures openmpi, "
                                        r"none of the mpich family; add one"):
        plan(tmp_path, ["tuned:mpich-ring.json"], mpis=("openmpi",))


def test_an_open_mpi_algorithm_id_the_library_lacks_is_refused(tmp_path):
    (tmp_path / "r.rules").write_text("1\n2\n1\n1\n1\n0 99 0 0\n")
    with pytest.raises(UserError, match="allreduce at 1 ranks, 0 B names algorithm 99, which Open MPI 4.1.4"):
        plan(tmp_path, ["tuned:r.rules"], mpis=("openmpi",))


def test_cli_refuses_a_bad_file_in_one_line_with_exit_2(tmp_path):
    (tmp_path / "x.txt").write_text("not a tuning file\n")
    (tmp_path / "spec.toml").write_text(spec_text(["default", "tuned:x.txt"], mpis=("openmpi",)))
    one_line_error(collkit("run", "spec.toml", "--out", "c", "--dry-run", cwd=tmp_path), "x.txt")


# ------------------------------------------------------------------ in the libraries

def run(tmp_path, mpi, tuned_file, extra=()):
    (tmp_path / tuned_file.name).write_bytes(tuned_file.read_bytes())
    (tmp_path / "spec.toml").write_text(spec_text(["default", *extra, f"tuned:{tuned_file.name}"], mpis=(mpi,)))
    out = collkit("run", "spec.toml", "--out", "c", cwd=tmp_path)
    path = tmp_path / "c" / "records.jsonl"
    # the record that stands for each point: a point marked unstable under load is
    # measured again in a later launch, and its first record stays in the file
    recs = list(current([json.loads(line) for line in path.read_text().splitlines()]).values()) \
        if path.exists() else []
    return out, recs


def check_recorded(tmp_path, recs, name):
    copy = tmp_path / "c" / "tuning" / name
    sha = hashlib.sha256(copy.read_bytes()).hexdigest()
    tuned = [r for r in recs if r["algorithm"] == f"tuned:{name}"]
    assert len(tuned) == 2
    for r in tuned:
        assert r["tuning_file"] == f"tuning/{name}" and r["tuning_sha256"] == sha
    meta = json.loads((tmp_path / "c" / "metadata.json").read_text())
    assert meta["tuning_files"][0]["sha256"] == sha and meta["tuning_files"][0]["copy"] == f"tuning/{name}"
    return tuned


@pytest.mark.parametrize("name", needs.each_open_mpi())
def test_open_mpi_campaign_with_a_rules_file(tmp_path, name):
    out, recs = run(tmp_path, name, RULES)
    assert out.returncode == 0, out.stderr
    assert all(r["status"] == "ok" for r in recs)
    for r in check_recorded(tmp_path, recs, RULES.name):
        assert r["tuning_file_cvar"] == str((tmp_path / "c" / "tuning" / RULES.name).resolve())
        assert r["effective"]["coll_tuned_use_dynamic_rules"] == "true"
        assert r["effective"]["coll_tuned_allreduce_algorithm"] == "ignore"


@needs.mpich
def test_mpich_campaign_with_a_selection_file_and_a_corrupted_copy(tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    out, recs = run(good, "mpich", JSON)
    assert out.returncode == 0, out.stderr
    assert all(r["status"] == "ok" for r in recs)
    for r in check_recorded(good, recs, JSON.name):
        assert r["effective"]["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "auto"
        # MPICH 5.0.2's MPI_T reads a string CVAR as its built-in default (""), not the
        # environment's value (docs/tuning-files.md): recorded as the library says it.
        assert "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE" in r["effective"]
    # The same file with one unknown key: MPICH's parser aborts MPI_Init on it, so
    # the good file was parsed too (an unread file could not abort anything).
    doc = json.loads(JSON.read_text())
    doc["collective=allreduce"]["comm_type=intra"]["colour=blue"] = {"algorithm=MPIR_Allreduce_intra_ring": {}}
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "corrupt.json").write_text(json.dumps(doc))
    out, recs = run(bad, "mpich", bad / "corrupt.json")
    tuned = [r for r in recs if r["algorithm"] == "tuned:corrupt.json"]
    assert tuned and all(r["status"] == "failed" for r in tuned)
    sha = hashlib.sha256((bad / "corrupt.json").read_bytes()).hexdigest()
    assert all(r["tuning_sha256"] == sha and r["tuning_file"] == "tuning/corrupt.json" for r in tuned)
    assert all(r["status"] == "ok" for r in recs if r["algorithm"] == "default")
    stderr = "".join(f.read_text() for f in (bad / "c" / "raw").glob("launch-*.stderr"))
    assert "unknown key colour=blue" in stderr


def _ompi_traffic(tmp_path, name):
    from collkit.backends import discover, ompi_monitoring
    pm = platforms.detect().mpi(name)
    offer = discover(pm.install)

    def with_file(name: str, alg: int):
        path = tmp_path / name
        path.write_text(f"1\n2\n1\n1\n1\n0 {alg} 0 0\n")
        return openmpi.tuned_env(offer, str(path))

    def traffic(env, label="x"):
        return ompi_monitoring.run_point(pm, ompi_monitoring.allreduce_point(4, 65536, label, name), env)

    return offer, with_file, traffic


@pytest.mark.parametrize("name", needs.each_open_mpi())
def test_open_mpi_consults_the_file_an_invented_algorithm_id_fails_the_call(tmp_path, name):
    _, with_file, traffic = _ompi_traffic(tmp_path, name)
    assert traffic(with_file("ok.rules", 4)).record["status"] == "ok"
    bad = traffic(with_file("bad.rules", 99)).record
    assert bad["status"] == "failed" and "MPI_ERR_ARG" in bad["reason"]


@pytest.mark.parametrize("name", needs.each_open_mpi())
def test_open_mpi_sends_the_chosen_algorithms_messages(tmp_path, name):
    offer, with_file, traffic = _ompi_traffic(tmp_path, name)
    ring = offer.force("allreduce", "ring")
    rd = offer.force("allreduce", "recursive_doubling")
    backend = backends.backend_for("openmpi")
    forced_ring = traffic(backend.start_env(ring)).internal
    file_ring = traffic(with_file("ring.rules", int(ring.native_id))).internal
    forced_rd = traffic(backend.start_env(rd)).internal
    file_rd = traffic(with_file("rd.rules", int(rd.native_id))).internal
    assert forced_ring and file_ring == forced_ring       # per peer: messages and bytes
    assert file_rd == forced_rd
    assert file_rd != file_ring                           # a different file changes what is sent


def test_monitoring_output_parsing():
    from collkit.backends.ompi_monitoring import parse_prof
    text = ("# POINT TO POINT\nE\t0\t1\t112 bytes\t6 msgs sent\t4,0\nI\t0\t1\t393228 bytes\t31 msgs sent\n"
            "I\t0\t2\t12 bytes\t7 msgs sent\n# COLLECTIVES\nC\t0\t1\t262156 bytes\t11 msgs sent\n")
    assert parse_prof(text) == {(0, 1): (31, 393228), (0, 2): (7, 12)}


def test_a_spec_parsed_from_text_alone_cannot_plan_tuned_points():
    # parse() has no folder to place a relative FILE in: refused, never silently dropped
    spec = specs.parse(spec_text(["default", "tuned:x.rules"], mpis=("openmpi",)))
    with pytest.raises(UserError, match="tuning files are read when the spec is loaded from its file"):
        planner.build(spec, PLATFORM, [], discover=lambda pm: OFFERS[pm.name])


def test_an_mpich_file_without_a_measured_collective_is_refused(tmp_path):
    doc = json.loads(JSON.read_text())
    del doc["collective=reduce_scatter_block"]       # collkit's reduce_scatter is MPI_Reduce_scatter_block
    (tmp_path / "part.json").write_text(json.dumps(doc))
    with pytest.raises(UserError, match=r"part.json has no rules for reduce_scatter, which the spec measures.*"
                                        r"collective=reduce_scatter_block"):
        plan(tmp_path, ["tuned:part.json"], mpis=("mpich",), collectives='["allreduce", "reduce_scatter"]')


def test_a_sidecar_environment_goes_with_the_file(tmp_path):
    """`collkit tune --format mpich` writes the settings the file needs (which
    collectives it takes from the ch4 device) into FILE.provenance.json; a tuned:FILE
    launch applies them, and a sidecar with anything but MPICH variables is refused."""
    f = tmp_path / "mine.json"
    f.write_bytes(JSON.read_bytes())
    side = tmp_path / "mine.json.provenance.json"
    side.write_text(json.dumps({"environment": {"MPIR_CVAR_DEVICE_COLLECTIVES": "percoll",
                                                "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0"}}))
    tf = tuning.read("tuned:mine.json", tmp_path)
    assert dict(tf.companion) == {"MPIR_CVAR_DEVICE_COLLECTIVES": "percoll",
                                  "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0"}
    env = mpich.tuned_env(OFFERS["mpich"], str(f), dict(tf.companion))
    assert env["MPIR_CVAR_DEVICE_COLLECTIVES"] == "percoll" and env["MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE"] == "0"
    assert env["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] == str(f)
    for bad in ({"LD_PRELOAD": "/tmp/x.so"}, {"MPIR_CVAR_X": "a b"}, {"MPIR_CVAR_X": 1}, ["x"]):
        side.write_text(json.dumps({"environment": bad}))
        with pytest.raises(UserError, match="provenance.json"):
            tuning.read("tuned:mine.json", tmp_path)
    side.write_text("{not json")
    with pytest.raises(UserError, match="not the provenance JSON"):
        tuning.read("tuned:mine.json", tmp_path)
