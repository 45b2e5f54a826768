"""One grammar and one fallback rule (issue #52): the preload at MPI_Init and
`collkit predict/trial/replay --rules` (program/rules_choice.py, through
`collkit-rules`) accept and refuse the same rules files with the same words,
and the fallback reasons come out as the preload's rule says.

Each file's verdict is written here (accept, or the words of the refusal), and
both sides are held to it: the preload by running a one-rank program under it
with COLLKIT_RULES, Python by load_rules. What only a running library can
check stays the preload's: library:NAME against the algorithms that MPI
switches per call, and the autotuner's mpi_library line against the library
itself (Python checks its family: test_autotune.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import needs
from collkit.apply import preload
from collkit.common.errors import UserError
from collkit.mpis import known
from collkit.program.profile_file import CallClass
from collkit.program.rules_choice import choose_all, forced, load_rules

LONG = "allreduce * * ring " + "#" * 1100 + "\n"
# the autotuner's race state of one class (race_state.h)
RACE = ("world_size = 2\n"
        "race 1 allreduce 00000000000000a2 8 -1 MPI_INT sum 0 600 8 1 7 0.05 1238 6.3e-05 4.6e-06 7.6e-04 600\n"
        "race_candidate 1 library 0 1 4\nrace_samples 1 library 1e-06 2e-06 3e-06 4e-06\n"
        "race_candidate 1 recursive_doubling 0 1 4\nrace_samples 1 recursive_doubling 1e-05 2e-05 3e-05 4e-05\n")
# (file text, None when both accept it, else the words both refuse it with)
FILES = [
    ("allreduce 2-* 0-1024 ring # a comment\n", None),
    ("bcast * * library\nreduce 4 8 binomial_doubling\n", None),
    ("allow_fp_rank_variant = true\nallreduce 3 18446744073709551615 ring\n", None),
    ("# only a comment\n\n   \n", None),
    ("alltoall\t1-4\t*\tlibrary\t# tabs\n", None),
    ("allreduce 2147483647 * ring\nallow_fp_rank_variant = false\n", None),
    ("allreduce 0 8 ring\n", "bad rank range '0'"),
    ("allreduce 0-4 8 ring\n", "bad rank range '0-4'"),
    ("allreduce -1 8 ring\n", "bad rank range '-1'"),
    ("allreduce four * ring\n", "bad rank range 'four'"),
    ("allreduce \uff12 8 ring\n", "bad rank range"),                 # a full-width digit is no digit
    ("allreduce 4-2 * ring\n", "bad rank range '4-2'"),
    ("allreduce 2147483648 * ring\n", "bad rank range '2147483648'"),
    ("allreduce * 18446744073709551616 ring\n", "bad byte range '18446744073709551616'"),
    ("allreduce * 8-4 ring\n", "bad byte range '8-4'"),
    ("allreduce 2 8\n", "expected COLLECTIVE RANKS BYTES CHOICE"),
    ("allreduce 2 8 ring extra\n", "expected COLLECTIVE RANKS BYTES CHOICE"),
    ("scan * * library\n", "unknown collective 'scan'"),
    ("bcast * * library\nallreduce * * nosuch\n", ":2: unknown allreduce algorithm 'nosuch'"),
    ("allow_fp_rank_variant = yes\n", "allow_fp_rank_variant = 'yes'; fix: true or false"),
    ("allow_everything = true\n", "unknown setting 'allow_everything'"),
    ("mpi_library Open MPI\n", "expected mpi_library = TEXT"),
    (LONG, "line longer than 1022 bytes"),
    ("allreduce 2 8 ring\n" + RACE, None),
    (RACE[:RACE.rindex("race_samples")], "damaged race state: a candidate lacks samples"),
    (RACE.replace("candidate 1 recursive_doubling", "candidate 1 nosuch"),
     "damaged race state: NAME is no algorithm of the collective"),
    (RACE.replace("world_size = 2\n", ""), "damaged race state: no world_size line"),
    (RACE.replace(" 0.05 ", " nan "), "damaged race state: ALPHA"),
    ("world_size = 0\n", "world_size = '0'"),
]


def _python(path: Path) -> str | None:
    try:
        load_rules(path)
    except UserError as e:
        return str(e)
    return None


def _preload(mpi: str, paths: list[Path]) -> list[subprocess.CompletedProcess]:
    """A one-rank program under the preload with each file as COLLKIT_RULES."""
    install = known.find_install(mpi)
    probe = known.find(mpi).part("probe")
    out = []
    for path in paths:
        env = {"LD_PRELOAD": str(preload.library_path(mpi)), "COLLKIT_RULES": str(path)}
        argv = [str(install.mpirun), "-n", "1", *install.flags, *preload.env_flags(known.find(mpi).family, env),
                str(probe), "--init"]
        out.append(subprocess.run(argv, capture_output=True, text=True, timeout=120, env=install.environment()))
    return out


# The grammar is the same C under both MPIs; Open MPI's launches take 2 s each
# (MPICH's 0.1 s), so `make test` reads the files under MPICH and full under both.
@pytest.mark.parametrize("mpi", [pytest.param("mpich", marks=needs.mpi("mpich")),
                                 pytest.param("openmpi", marks=[needs.mpi("openmpi"), pytest.mark.full])])
def test_the_preload_and_python_accept_and_refuse_the_same_files(mpi, tmp_path):
    paths = []
    for k, (text, _) in enumerate(FILES):
        paths.append(tmp_path / f"r{k}.rules")
        paths[-1].write_text(text)
    for (text, words), path, run in zip(FILES, paths, _preload(mpi, paths)):
        said = [ln for ln in (run.stdout + run.stderr).splitlines() if ln.startswith("collkit-preload:")]
        py = _python(path)
        if words is None:
            assert run.returncode == 0 and not said, (text, run.stdout + run.stderr)
            assert py is None, (text, py)
            continue
        assert run.returncode == 2 and len(said) == 1 and words in said[0], (text, run.stdout + run.stderr)
        assert py is not None and words.lstrip(":0123456789 ") in py and "\n" not in py, (text, py)
        # the same words after the line number: "FILE:N: what" in C, "line N: what" in Python
        c_what = said[0].split(f"{path}:", 1)[1].split(": ", 1)[1]
        assert py.endswith(c_what), (py, c_what)


def _class(collective="allreduce", size=4, nbytes=64, dtype="double", op="sum", root=None, comm="world"):
    return CallClass(collective=collective, comm=comm, comm_size=size, bytes=nbytes, datatype="MPI_DOUBLE",
                     dtype=dtype, op=op, root=root, in_place=False, calls=1, time_max_s=1.0, time_sum_s=1.0,
                     ranks=size)


def _rules(tmp_path: Path, text: str):
    f = tmp_path / "r.rules"
    f.write_text(text)
    return load_rules(f)


@needs.registry
def test_each_fallback_reason_as_the_preload_decides(tmp_path):
    rd = _rules(tmp_path, "allreduce * * recursive_doubling\nreduce * * rabenseifner\nbcast * * binomial_doubling\n"
                          "allgather * * parallel_rings\n")
    cases = [  # (class, the preload's reason; "" where the algorithm runs; no algorithm needs 2^k ranks today)
        (_class(), ""),
        (_class(comm="inter"), "intercommunicator"),
        (_class(collective="bcast", root=None, dtype=None, op=None), "root"),
        (_class(collective="bcast", root=4, dtype=None, op=None), "root"),
        (_class(collective="bcast", root=3, dtype=None, op=None), ""),
        (_class(nbytes=0), "count"),
        (_class(nbytes=2**31), "count"),
        (_class(dtype=None), "datatype"),            # a reduction on a type the profile does not name
        (_class(collective="reduce", root=0, op="user"), "op-not-commutative"),
        (_class(collective="reduce", root=0, op="max"), ""),
        # every node the same number of ranks: a topology the preload does not check
        (_class(collective="allgather", size=8, dtype=None, op=None), "constraint"),
    ]
    got = [ch.fallback for ch in choose_all(rd, [c for c, _ in cases])]
    assert got == [want for _, want in cases]


@needs.registry
def test_a_forced_rank_variant_algorithm_runs_where_a_rule_needs_the_setting(tmp_path):
    """COLLKIT_ALGORITHMS names the algorithm, and that allows it (preload/fallback.c);
    a rules file needs allow_fp_rank_variant. Integer sums are exact in any order."""
    double, ints = _class(dtype="double"), _class(dtype="int32")
    by_rule = _rules(tmp_path, "allreduce * * swing_latency\n")
    assert [c.fallback for c in choose_all(by_rule, [double, ints])] == ["fp-rank-variant", ""]
    by_name = forced((("allreduce", "swing_latency"),))
    assert [c.runs for c in choose_all(by_name, [double, ints])] == ["swing_latency", "swing_latency"]


@needs.registry
def test_mpich_cvar_value_lines_as_the_preload_reads_them():
    """preload/cvar_values.c through collkit-rules: what `collkit list` and the
    autotuner's library:NAME take as MPICH's algorithm names."""
    from collkit.library.rules_tool import cvar_values
    desc = ("Variable to select the algorithm\n"
            "auto - Internal algorithm selection (can be overridden)\n"
            "recursive_doubling       - Force recursive doubling algorithm\n"
            "Ring - a capital is no name\n"
            "  tree - nor is an indented line\n"
            "k_2 -no space after the dash\n"
            "nb - \n"
            + "x" * 48 + " - too long a name\n")
    assert cvar_values([desc, "ring - Force ring algorithm"]) == [
        (("auto", "Internal algorithm selection (can be overridden)"),
         ("recursive_doubling", "Force recursive doubling algorithm"), ("nb", "")),
        (("ring", "Force ring algorithm"),)]
