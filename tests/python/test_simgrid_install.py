"""collkit's SimGrid build (collkit.simulation.simgrid_install): the cache, the
pinned archive, the stamp that marks a build complete, and the errors a user
can cause. No SimGrid is built here (that is `make setup-tests`, minutes); the
last test checks the machine's build when there is one."""

import json
import os
import subprocess

import pytest

from collkit.common.errors import UserError
from collkit.simulation import simgrid_install as si
import needs
from cli_runner import collkit, one_line_error


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(si.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_cache_is_chosen_by_variable_then_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv(si.CACHE_ENV, str(tmp_path / "c"))
    assert si.cache_dir() == tmp_path / "c"
    monkeypatch.delenv(si.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert si.cache_dir() == tmp_path / "x" / "collkit" / "simgrid"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")        # not absolute: ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert si.cache_dir() == tmp_path / "h" / ".cache" / "collkit" / "simgrid"


def test_the_build_key_follows_the_compiler(monkeypatch):
    si.build_key.cache_clear()
    try:
        a = si.build_key()
        monkeypatch.setenv("CXX", "/nonexistent/c++")
        si.build_key.cache_clear()
        assert si.build_key() != a
    finally:
        si.build_key.cache_clear()


def test_the_build_key_follows_the_precompiled_headers(monkeypatch):
    """A build made without them (or with others) is not taken for one made with them."""
    si.build_key.cache_clear()
    try:
        a = si.build_key()
        monkeypatch.setattr(si, "PCH_HEADERS", si.PCH_HEADERS[:-1])
        si.build_key.cache_clear()
        assert si.build_key() != a
    finally:
        si.build_key.cache_clear()


@needs.simgrid_programs
def test_the_machines_build_precompiled_its_headers():
    """The configure step ran collkit's CMake code (CMAKE_PROJECT_INCLUDE): the build log
    names the precompiled header, and the stamp records which headers went in."""
    found = si.installed()
    log = found.prefix.parent / f"{found.prefix.name}.log"
    text = log.read_text()
    assert "cmake_pch.hxx.gch" in text
    stamp = json.loads((found.prefix / si.STAMP).read_text())
    assert stamp["precompiled_headers"] == list(si.PCH_HEADERS)


def test_a_build_without_its_stamp_does_not_count(cache):
    pre = si.prefix()
    (pre / "bin").mkdir(parents=True)
    (pre / "bin" / "smpirun").write_text("#!/bin/sh\n")
    assert si.installed() is None          # interrupted: no stamp
    (pre / si.STAMP).write_text(json.dumps({"version": si.VERSION}))
    found = si.installed()
    assert found is not None and found.smpirun == pre / "bin" / "smpirun" and found.version == si.VERSION
    (pre / si.STAMP).write_text(json.dumps({"version": "3.32"}))
    assert si.installed() is None          # another version's stamp


def test_a_given_archive_must_exist_and_be_pypis(cache, tmp_path, monkeypatch):
    monkeypatch.setenv(si.SDIST_ENV, str(tmp_path / "missing.tar.gz"))
    with pytest.raises(UserError, match=f"{si.SDIST_ENV}=.*no such file"):
        si.ensure(progress=False)
    bad = tmp_path / "simgrid-4.1.tar.gz"
    bad.write_bytes(b"not simgrid")
    monkeypatch.setenv(si.SDIST_ENV, str(bad))
    with pytest.raises(UserError, match="SHA-256 differs"):
        si.ensure(progress=False)
    assert si.installed() is None


def test_an_unwritable_cache_is_one_line_with_the_fix(tmp_path, monkeypatch):
    if os.geteuid() == 0:
        # root writes anywhere: a file where the directory should be fails for everyone
        (tmp_path / "file").write_text("")
        monkeypatch.setenv(si.CACHE_ENV, str(tmp_path / "file" / "cache"))
    else:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        monkeypatch.setenv(si.CACHE_ENV, str(ro / "cache"))
    with pytest.raises(UserError, match=f"not writable.*{si.CACHE_ENV}"):
        si.ensure(progress=False)


def test_build_simgrid_refuses_mpi_options_with_status_2(tmp_path):
    one_line_error(collkit("build", "--simgrid", "--mpi", "x"), "takes no MPI options")


@needs.simgrid_programs
def test_the_machines_build_is_the_pinned_version_and_collkit_bench_is_built_with_it():
    found = si.installed()
    out = subprocess.run([str(found.smpirun), "--version"], capture_output=True, text=True, timeout=60).stdout
    assert f"SimGrid version {si.VERSION}" in out
    assert si.programs_ready(found)
    assert si._configured_compiler(si.programs_dir()) == str(found.smpicc)


def test_another_simgrid_is_used_as_it_is_and_a_bad_one_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(si.PREFIX_ENV, str(tmp_path / "nothing"))
    with pytest.raises(UserError, match=f"{si.PREFIX_ENV}=.*no bin/smpirun"):
        si.installed()
    (tmp_path / "sg" / "bin").mkdir(parents=True)
    for tool in ("smpirun", "smpicc"):
        (tmp_path / "sg" / "bin" / tool).write_text("#!/bin/sh\necho 'SimGrid version 3.32'\n")
        (tmp_path / "sg" / "bin" / tool).chmod(0o755)
    monkeypatch.setenv(si.PREFIX_ENV, str(tmp_path / "sg"))
    found = si.ensure(progress=False)          # nothing to build
    assert found.prefix == tmp_path / "sg" and found.version == "3.32" and si.smpirun() == found.smpirun
