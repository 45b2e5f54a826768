"""The registry of known MPIs (collkit.mpis) and `collkit build` / `collkit mpis`:
identity from the version string, registrations, and every bad input that must
be one line with exit status 2 and leave nothing that counts as a build."""

import json
import os
import shutil
from pathlib import Path

import pytest

import needs
from cli_runner import one_line_error
from collkit.common.errors import UserError
from collkit.mpis import identity, known
from collkit.mpis.install import Build, MPIInstall

OPENMPI_CC = Path("/usr/bin/mpicc.openmpi")     # needs.debian_openmpi


@pytest.mark.parametrize("text, name, family", [
    ("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4", "openmpi", "openmpi"),
    ("MPICH Version:      5.0.2\nMPICH Release date: ...", "mpich", "mpich"),
    ("Intel(R) MPI Library 2021.10 for Linux* OS", "intel-mpi", "impi"),
    ("MPI VERSION    : CRAY MPICH version 8.1.27.26 (ANL base 3.4a2)", "cray-mpich", "mpich"),
    ("MVAPICH2 Version      :\t2.3.7\nMVAPICH2 Release date", "mvapich", "mpich"),
    ("Spectrum MPI 10.4", "mpi", ""),
])
def test_the_version_string_names_the_kind_and_family(text, name, family):
    assert identity.kind_of(text) == (name, family)


@pytest.mark.parametrize("bad", ["a b", "a/b", "", "-x", "A", "x" * 65, "x\n"])
def test_bad_names_are_refused(bad):
    with pytest.raises(UserError, match="not a valid MPI name"):
        identity.check_name(bad)


def test_the_build_key_follows_library_compiler_and_collkit():
    base = identity.Identity("MPICH Version: 5.0.2", "4.1", "/usr/bin/mpicc", "gcc 12")
    keys = {base.key("0.1.0"), base.key("0.2.0"),
            identity.Identity("MPICH Version: 5.0.3", "4.1", "/usr/bin/mpicc", "gcc 12").key("0.1.0"),
            identity.Identity("MPICH Version: 5.0.2", "4.1", "/usr/bin/mpicc", "gcc 13").key("0.1.0")}
    assert len(keys) == 4 and base.key("0.1.0") == base.key("0.1.0")


def test_an_mpi_named_like_a_family_is_of_that_family(tmp_path):
    assert MPIInstall("openmpi", tmp_path).family == "openmpi"
    assert MPIInstall("site-mpi", tmp_path).family == ""


def _registration(root, name, prefix, **extra):
    (root / "mpis").mkdir(parents=True, exist_ok=True)
    data = {"format": known.REGISTRATION_FORMAT, "name": name, "prefix": str(prefix), "mpicc": "/x/mpicc",
            "mpirun": "/x/mpirun", "library_version": "MPICH Version: 5.0.2", **extra}
    (root / "mpis" / f"{name}.json").write_text(json.dumps(data))


def test_registrations_are_read_and_broken_ones_are_known_but_unusable(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLKIT_CACHE", str(tmp_path))
    good = tmp_path / "builds" / "good" / "prefix"
    good.mkdir(parents=True)
    (good / "collkit-build.json").write_text(json.dumps({
        "format": 1, "parts": {"bench": "bin/collkit-bench"}, "mpi": {"library_version": "MPICH Version: 5.0.2",
                                                                      "mpi_version": "4.1"}, "mpicc": "/x/mpicc"}))
    _registration(tmp_path, "good", good)
    _registration(tmp_path, "gone", tmp_path / "nowhere")
    (tmp_path / "mpis" / "damaged.json").write_text("{not json")
    known.clear()
    found = known.known()
    assert found["good"].build is not None and found["good"].family == "mpich"
    assert found["gone"].build is None and "collkit-build.json missing" in found["gone"].problem
    assert found["damaged"].build is None and "damaged" in found["damaged"].problem
    with pytest.raises(UserError, match="cannot be used"):
        found["gone"].part("bench")
    # A part the manifest names but the prefix lacks: one line naming the rebuild.
    with pytest.raises(UserError, match="missing from MPI 'good'"):
        found["good"].part("bench")
    with pytest.raises(UserError, match=r"no MPI named 'god' is known here \(did you mean 'good'\?\)"):
        known.find("god")


def test_a_manifest_of_another_format_is_refused(tmp_path):
    (tmp_path / "collkit-build.json").write_text(json.dumps({"format": 99, "parts": {}, "mpi": {}}))
    with pytest.raises(UserError, match="not a collkit build manifest"):
        Build.read(tmp_path)


def test_no_default_mpi_among_several(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLKIT_CACHE", str(tmp_path))
    for name in ("a", "b"):
        _registration(tmp_path, name, tmp_path / name)
    known.clear()
    with pytest.raises(UserError, match=r"several MPIs are known here \(a, b\)"):
        known.default_name()


def test_version_names_its_source(collkit):
    out = collkit("--version")
    assert out.returncode == 0 and out.stdout.startswith("collkit ")
    assert "commit" in out.stdout or "sdist" in out.stdout


@needs.openmpi
def test_mpis_lists_the_known_and_the_installation(collkit, tmp_path):
    from ck_trace_build import cache_with
    env = {"COLLKIT_CACHE": str(cache_with(tmp_path / "c", broken=("gone",)))}
    data = json.loads(collkit("mpis", "--json", env=env).stdout)
    rows = {r["name"]: r for r in data["mpis"]}
    assert rows["gone"]["build"] == "" and "missing" in rows["gone"]["problem"]
    assert "MCA" in rows["openmpi"]["forcing"] and not rows["openmpi"]["missing_parts"]
    assert {i["what"] for i in data["installation"]} >= {"SimGrid 4.1 (smpirun)", "Slurm (sbatch)", "NCCL (nccl.h)"}
    text = collkit("mpis", env=env)
    assert text.returncode == 0 and "installation" in text.stdout


BUILD = "[collkit build]"     # collkit build's progress lines, before its error
@needs.debian_openmpi
def test_build_refuses_a_plain_c_compiler(collkit, tmp_path):
    out = collkit("build", "--mpi", "x", "--mpicc", shutil.which("gcc") or "/usr/bin/gcc",
                  env={"COLLKIT_CACHE": str(tmp_path)})
    one_line_error(out, "cannot build an MPI program", progress=BUILD)
    assert not list((tmp_path / "mpis").glob("*.json"))


@pytest.mark.parametrize("name", ["a b", "a/b"])
def test_build_refuses_bad_names(collkit, tmp_path, name):
    out = collkit("build", "--mpi", name, "--mpicc", str(OPENMPI_CC), env={"COLLKIT_CACHE": str(tmp_path)})
    one_line_error(out, "not a valid MPI name", progress=BUILD)


def test_build_needs_one_of_mpicc_and_prefix(collkit, tmp_path):
    out = collkit("build", "--mpi", "x", env={"COLLKIT_CACHE": str(tmp_path)})
    one_line_error(out, "exactly one of --mpicc PATH and --prefix DIR", progress=BUILD)
    out = collkit("build", "--prefix", str(tmp_path), env={"COLLKIT_CACHE": str(tmp_path)})
    one_line_error(out, "no executable bin/mpicc there", progress=BUILD)


@needs.debian_openmpi
@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_build_refuses_an_unwritable_cache(collkit, tmp_path):
    tmp_path.chmod(0o500)
    try:
        out = collkit("build", "--mpicc", str(OPENMPI_CC), env={"COLLKIT_CACHE": str(tmp_path / "c")})
        one_line_error(out, "is not writable", progress=BUILD)
    finally:
        tmp_path.chmod(0o700)


@needs.debian_openmpi
def test_build_refuses_a_launcher_that_cannot_start_programs_before_compiling(collkit, tmp_path):
    out = collkit("build", "--mpi", "nostart", "--mpicc", str(OPENMPI_CC), "--mpirun", "/bin/false",
                  env={"COLLKIT_CACHE": str(tmp_path)})
    one_line_error(out, "an MPI program does not start with /bin/false", progress=BUILD)
    assert "compiling" not in out.stderr and "configuring" not in out.stderr
    assert not list((tmp_path / "mpis").glob("*.json")) and not list((tmp_path / "builds").iterdir())


@needs.debian_openmpi
def test_build_refuses_a_cache_that_is_a_file(collkit, tmp_path):
    (tmp_path / "file").write_text("")
    out = collkit("build", "--mpicc", str(OPENMPI_CC), env={"COLLKIT_CACHE": str(tmp_path / "file")})
    one_line_error(out, "is not writable", progress=BUILD)


@needs.debian_openmpi
def test_build_refuses_two_mpis_under_one_name(collkit, tmp_path):
    _registration(tmp_path, "openmpi", tmp_path / "elsewhere", mpicc="/opt/other/bin/mpicc")
    out = collkit("build", "--mpi", "openmpi", "--mpicc", str(OPENMPI_CC), env={"COLLKIT_CACHE": str(tmp_path)})
    one_line_error(out, "an MPI named 'openmpi' is known already, built with /opt/other/bin/mpicc", progress=BUILD)
    assert json.loads((tmp_path / "mpis" / "openmpi.json").read_text())["mpicc"] == "/opt/other/bin/mpicc"


@needs.openmpi
def test_campaign_metadata_records_the_build_it_ran():
    """metadata.json's mpis.NAME: the wrapper, the MPI's own version string and
    collkit's source, read from the build's manifest."""
    from ck_trace_build import built
    from collkit.campaign.metadata import mpi_info
    from collkit.campaign.platform import PlatformMPI
    bench = built("openmpi", "bench")
    info = mpi_info(PlatformMPI(known.find_install("openmpi"), bench))
    assert info["library_version"].startswith("Open MPI") and info["mpicc"].endswith("mpicc.openmpi")
    assert info["family"] == "openmpi" and info["build"] == str(bench.parent.parent) and info["collkit_source"]


def test_an_mpi_collkit_cannot_force_runs_its_default_with_the_reason(tmp_path):
    """A spec over an MPI of no known family: `default` runs; a forced name is
    one line that says why; beside a forcible MPI the name is skipped there with
    the reason."""
    from collkit.backends import LibraryAlgorithm, LibraryOffer, default_only
    from collkit.campaign import plan as plans
    from collkit.campaign.spec import parse
    lam = default_only(MPIInstall("lam", tmp_path / "mpirun", kind="mpi"), "lam is not an Open MPI or MPICH "
                                                                         "derivative collkit knows how to force")
    text = ('collectives = ["allreduce"]\nsizes = ["64B"]\nranks = [2]\nmpi = ["lam"]\n'
            '[backends]\nmpi = ["default"]\n')
    spec = parse(text)
    points = plans._mpi_points(spec, {"lam": lam})
    assert [p.algorithm for p in points] == ["default"] and not points[0].skip_reason
    with pytest.raises(UserError, match=r"backends.mpi 'ring': lam runs its default only \(lam is not"):
        plans._mpi_points(parse(text.replace('mpi = ["default"]', 'mpi = ["default", "ring"]')), {"lam": lam})
    ring = LibraryAlgorithm(
        "allreduce", "ring", "ring", "4", {"OMPI_MCA_x": "4"}, ())
    ompi = LibraryOffer(mpi="openmpi", library="Open MPI 4.1.4", algorithms=(ring,), defaults={})
    both = parse(text.replace('mpi = ["lam"]', 'mpi = ["lam", "openmpi"]').replace('mpi = ["default"]',
                                                                                   'mpi = ["default", "ring"]'))
    got = {(p.mpi, p.algorithm): p.skip_reason for p in plans._mpi_points(both, {"lam": lam, "openmpi": ompi})}
    assert got[("openmpi", "ring")] == "" and "runs its default only" in got[("lam", "ring")]


@pytest.mark.parametrize("kind, family, borrowed", [
    ("cray-mpich", "mpich", True), ("mvapich", "mpich", True), ("intel-mpi", "impi", False),
    ("mpich", "mpich", False), ("openmpi", "openmpi", False), ("mpi", "", False)])
def test_a_derivative_is_a_kind_forced_through_another_librarys_knobs(kind, family, borrowed):
    assert identity.kind_of({"cray-mpich": "CRAY MPICH", "mvapich": "MVAPICH", "intel-mpi": "Intel(R) MPI",
                             "mpich": "MPICH", "openmpi": "Open MPI", "mpi": "LAM"}[kind]) == (kind, family)
    assert identity.derivative(kind, family) is borrowed
