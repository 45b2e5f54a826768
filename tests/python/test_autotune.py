"""The self-tuning preload (issue #42; docs/preload.md, "Autotune"): a
program whose allreduce has a known best candidate (the other one made slow
on purpose inside its timed call, COLLKIT_AUTOTUNE_TEST_SLOW) settles on it,
every rank at the same call; ranks whose own times would choose differently
agree; the rules it writes reproduce the choice (`--rules`) and start the
next run (`--autotune-from`); bad settings stop with one line, from the
command or from the shim at MPI_Init. The 40-run convergence count is in
`make test-full`."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import mpi_programs
import needs
from cli_runner import one_line_error
from k_of_n import k_of_n
from collkit.apply import preload
from collkit.library import registry
from collkit.mpis import known
from collkit.mpis.known import find_install

LOOP = Path(__file__).parent / "fixtures" / "autotune_loop.c"
CALLS = 10000
RD = "recursive_doubling"


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    return mpi_programs.builder(tmp_path_factory, LOOP)


def _index(name: str) -> int:
    """The shim's index of an allreduce algorithm: its place in the registry's order."""
    return [a.name for a in registry.load() if a.collective == "allreduce"].index(name)


def _run(collkit, mpi: str, program: Path, tmp_path: Path, *options: str, calls: int = CALLS):
    install = find_install(mpi)
    return collkit("preload", "--mpi", mpi, *options, "--", str(install.mpirun), "-n", "2", *install.flags,
                   str(program), str(calls), "2", cwd=tmp_path, timeout=300)


def _columns(stdout: str) -> dict[int, str]:
    """Per rank its line of column counts (the fixture's)."""
    out = {}
    for line in stdout.splitlines():
        m = re.match(r"autotune_loop: rank (\d+) columns(.*)$", line)
        if m:
            out[int(m.group(1))] = m.group(2).strip()
    return out


def _counts(columns: str) -> dict[str, int]:
    return {k: int(v) for k, v in (item.split("=") for item in columns.split())}


def _rule(rules: Path, nbytes: int = 8) -> str:
    """The choice of the one allreduce rule (2 ranks, nbytes)."""
    lines = [ln.split() for ln in rules.read_text().splitlines() if ln.startswith("allreduce")]
    assert len(lines) == 1 and lines[0][1:3] == ["2", str(nbytes)], rules.read_text()
    return lines[0][3]


def _settles(collkit, mpi, program, tmp_path, slowed: str, slow_us: float = 20, mode: str = "barrier",
             calls: int = CALLS, count: int = 2, *options: str) -> bool:
    """One run with `slowed` slow_us slower a call: True when it settled on the
    other one. mode "barrier": a barrier after each call, so one call's added
    time stays out of the next (another candidate's); "skew": no barrier, each
    rank computes an exponential time (mean 100 us) before each call."""
    want = "library" if slowed == RD else RD
    out = tmp_path / f"learned-{slowed}.rules"
    cols = _autotune_env(collkit, mpi, program, tmp_path, f"allreduce={slowed}:{slow_us:g}", out, mode,
                         calls=calls, count=count, options=options)
    text = out.read_text()
    assert "mpi_library = " in text and "one-sided Mann-Whitney" in text
    counts = _counts(cols)
    col = "library" if want == "library" else f"alg{_index(RD)}"
    # settled: the chosen column ran most calls, and the rule says so
    ok = _rule(out, 4 * count) == want and counts.get(col, 0) > calls // 2
    if not ok:      # what it decided instead, for the test's report
        print(f"{mpi}, {slowed} slowed, columns {counts}: " + " | ".join(ln for ln in text.splitlines() if ln.startswith("#  ")
                                                       or ln.startswith("# allreduce") or ln.startswith("allreduce")))
    return ok


def _autotune_env(collkit, mpi, program, tmp_path, slow: str, out: Path, *extra: str, calls: int = CALLS,
                  count: int = 2, options: tuple[str, ...] = ()) -> str:
    install = find_install(mpi)
    env = {"COLLKIT_AUTOTUNE_TEST_SLOW": slow}
    # the launcher forwards the test-only variable like the others
    flags = preload.env_flags(known.find(mpi).family, env)
    r = collkit("preload", "--mpi", mpi, "--autotune", "--autotune-out", str(out), "--candidates",
                f"allreduce={RD}", "--report-file", str(tmp_path / "report.txt"), *options, "--",
                str(install.mpirun), *flags, "-n", "2", *install.flags, str(program), str(calls), str(count),
                *extra, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    cols = _columns(r.stdout)
    assert sorted(cols) == [0, 1] and "WRONG" not in r.stdout, r.stdout
    assert cols[0] == cols[1], cols           # the same decisions at the same calls on every rank
    assert sum(_counts(cols[0]).values()) == calls
    return cols[0]


@pytest.mark.parametrize("slowed", ["library", RD])
@pytest.mark.parametrize("mpi", needs.each_mpi())
def test_settles_on_the_candidate_not_slowed(collkit, mpi, loop, tmp_path, slowed):
    """3 of 4 runs (k_of_n.py): a run misses now and then while another test file
    shares the 2 cores (1 learning run of about 100 in the make test runs of
    2026-11-29 settled on the slowed one); at a 5 % miss rate this fails wrongly
    in 1.4 % of runs (k_of_n.false_failure_rate(3, 4, 0.05)), 3 of 3 in 14 %.
    MPICH 100 us: raced on working time, recursive doubling under MPICH's progress
    throttle took 20-60 us a call while test_profile*.py ran beside it on the 2 cores
    (2026-11-29: the library slowed by 20 us then tied or won, 2 of 4 runs missed in 2
    of 4 such pairings); 100 us keeps the slowed library the slower."""
    slow_us = 100 if mpi == "mpich" and slowed == "library" else 20   # recursive doubling 100 us slower
    # would pause exploring past the run (4 calls x 100 us against the library's 0.75 us at 5 %)
    k_of_n(lambda i: (_settles(collkit, mpi, loop(mpi), tmp_path, slowed, slow_us), f"run {i + 1}"), 3, 4)


@pytest.mark.alone
@pytest.mark.full
@needs.openmpi
@pytest.mark.parametrize("slowed", ["library", RD])
def test_settles_on_the_best_in_95_percent_of_40_runs(collkit, loop, tmp_path, slowed):
    good = sum(_settles(collkit, "openmpi", loop("openmpi"), tmp_path, slowed) for _ in range(40))
    print(f"slowed {slowed}: settled on the other in {good} of 40 runs")
    assert good >= 38


SKEW_CALLS = 3000


@pytest.mark.parametrize("slowed", ["library", RD])
@pytest.mark.parametrize("mpi", ["openmpi"])
@needs.openmpi
def test_settles_through_arrival_skew(collkit, mpi, loop, tmp_path, slowed):
    """Issue #50: ranks that arrive apart (exponential compute, mean 100 us,
    before each call, no barrier) and a candidate 2 us slower inside its 8 B
    call: the race is on working time (after the last arrival), so the skew,
    some 50 times the difference, does not hide it; within 3,000 calls. 3 of 4
    runs (k_of_n.py: 1.4 % false failures at a 5 % miss rate). MPICH 10 us:
    under the tests' progress throttle (REFERENCE.md) a rank that arrived
    early wakes late, which costs recursive doubling about 2 us of working
    time the library does not pay (medians 3.62 vs 3.77 us with the library
    slowed by 2 us: a true tie, 512 calls). --budget 100: with other tests on
    the cores a first stage's calls can take hundreds of us (MPICH: 850 us a
    call, a rank descheduled inside), whose cost then pauses exploring past
    3,000 calls; the budget has its own tests, and the 40-run count in make
    test-full runs alone at the default budget. Open MPI only: under MPICH's
    throttle with make test's other ranks on the 2 cores, recursive doubling's
    working time ranged 33-124 us a call against the slowed library's 14-148 us
    (make test, 2026-11-29 20:50), so no slowdown made a stable best there."""
    k_of_n(lambda i: (_settles(collkit, mpi, loop(mpi), tmp_path, slowed, 2, "skew", SKEW_CALLS, 2,
                               "--budget", "100"), f"run {i + 1}"), 3, 4)


BIG = 131072            # ints: a 512 KiB allreduce
NEAR = ("rabenseifner", "ring")   # at 2 ranks both reduce-scatter then allgather: medians within 3 %


def _choice(collkit, program, tmp_path, name: str, candidates: str, mode: str, slow: str | None = None,
            *options: str) -> tuple[str, str]:
    """One Open MPI run of 3,000 512 KiB allreduces learning into NAME.rules: the
    one rule's choice ("" when undecided) and the file's text."""
    install = find_install("openmpi")
    out = tmp_path / f"{name}.rules"
    flags = preload.env_flags(known.find("openmpi").family, {"COLLKIT_AUTOTUNE_TEST_SLOW": slow} if slow else {})
    r = collkit("preload", "--mpi", "openmpi", "--autotune", "--autotune-out", str(out), "--candidates",
                f"allreduce={candidates}", *options, "--", str(install.mpirun), *flags, "-n", "2", *install.flags,
                str(program), str(SKEW_CALLS), str(BIG), mode, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    text = out.read_text()
    rules = [ln.split() for ln in text.splitlines() if ln.startswith("allreduce")]
    return (rules[0][3] if rules else ""), text


def _medians(text: str) -> dict[str, float]:
    """Each candidate's agreed median (us) from a learned rules file's comment lines."""
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^#  (\S+) .* median +([0-9.]+) us", text, re.M)}


@pytest.mark.alone
@pytest.mark.full
@needs.openmpi
@pytest.mark.parametrize("slowed", NEAR)
def test_512_kib_through_arrival_skew_in_38_of_40_runs(collkit, loop, tmp_path, slowed):
    """Issue #50: 512 KiB allreduces with arrival skew, one of two near-equal
    candidates made slower by 10 % of its synchronised median (a barrier after
    each call, measured first in the same test): the other is chosen in 38 of
    40 runs of 3,000 calls."""
    other = NEAR[1 - NEAR.index(slowed)]
    _, calib = _choice(collkit, loop("openmpi"), tmp_path, "calib", ",".join(NEAR), "barrier", None,
                       "--budget", "100")
    slow_us = 0.1 * _medians(calib)[slowed]
    good = 0
    for i in range(40):
        choice, _ = _choice(collkit, loop("openmpi"), tmp_path, f"run{i}", ",".join(NEAR), "skew",
                            f"allreduce={slowed}:{slow_us:.3f}")
        good += choice == other
    print(f"512 KiB, skew, {slowed} slowed by {slow_us:.1f} us: chose {other} in {good} of 40 runs")
    assert good >= 38


@pytest.mark.full
@needs.openmpi
def test_512_kib_choice_through_skew_is_within_10_percent_of_the_best_synchronised(collkit, loop, tmp_path):
    """Issue #50: with nothing slowed, the class learned under arrival skew
    chooses a candidate whose synchronised median (a barrier after each call,
    every candidate raced to the call cap) is within 10 % of the best's."""
    cands = "rabenseifner,ring,recursive_doubling"
    choice, _ = _choice(collkit, loop("openmpi"), tmp_path, "skewed", cands, "skew")
    _, sync = _choice(collkit, loop("openmpi"), tmp_path, "sync", cands, "barrier", None, "--budget", "100",
                      "--autotune-alpha", "1e-9")
    medians = _medians(sync)
    assert choice in medians, (choice, medians)
    assert medians[choice] <= 1.10 * min(medians.values()), (choice, medians)


@pytest.mark.parametrize("mpi", needs.each_mpi())
def test_communicators_made_per_iteration_share_one_class(collkit, mpi, loop, tmp_path):
    """Issue #50: two communicators over the world's group, used alternately and
    each made again every 20 calls (no instance sees more than 10 calls, below
    the 32 a class runs before exploring): keyed by their group, the calls of
    all 1,000 instances are one class, which explores and settles on the
    candidate not slowed (keyed by instance, each would stay on the library)."""
    k_of_n(lambda i: (_settles(collkit, mpi, loop(mpi), tmp_path, "library", mode="churn", calls=CALLS),
                      f"run {i + 1}"), 3, 4)
    _settles(collkit, mpi, loop(mpi), tmp_path, RD, mode="churn", calls=CALLS)
    text = (tmp_path / f"learned-{RD}.rules").read_text()
    classes = [ln for ln in text.splitlines() if ln.startswith("# allreduce")]
    assert len(classes) == 1 and ": 10000 calls;" in classes[0], classes[:3]


@pytest.mark.parametrize("mpi", needs.each_mpi())
def test_a_settled_call_is_counted_in_its_own_class_when_a_freed_datatype_handle_comes_back(collkit, mpi, loop,
                                                                                           tmp_path):
    """Issue #50, a settled call in one cache line (preload/autotune_settled.c):
    a bcast of one element of a datatype of 4 or 8 bytes, made and freed around
    every call (the two sizes may come under one handle), settles at once (the
    library its one candidate) and is then kept by its arguments. Keyed by the
    handle alone, the 8-byte calls would be counted in the 4-byte class (and
    run its choice); each class must hold exactly its own half of the calls,
    and the allreduce beside them all of its own."""
    calls, out = 2000, tmp_path / "learned.rules"
    install = find_install(mpi)
    r = collkit("preload", "--mpi", mpi, "--autotune", "--autotune-out", str(out), "--candidates",
                f"allreduce={RD}", "--candidates", "bcast=library", "--", str(install.mpirun), "-n", "2",
                *install.flags, str(loop(mpi)), str(calls), "2", "retype", cwd=tmp_path, timeout=300)
    assert r.returncode == 0 and "WRONG" not in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    classes = {ln.split(":")[0]: ln for ln in out.read_text().splitlines() if ln.startswith("# ")}
    assert classes["# bcast, 2 ranks (world), 4 B, root 0"].split(":")[1] == f" {calls // 2} calls; no other candidate"
    assert classes["# bcast, 2 ranks (world), 8 B, root 0"].split(":")[1] == f" {calls // 2} calls; no other candidate"
    assert f": {calls} calls;" in classes["# allreduce, 2 ranks (world), 8 B, MPI_INT sum"]
    cols = _columns(r.stdout)
    assert cols[0] == cols[1] and sum(_counts(cols[0]).values()) == calls


@pytest.mark.alone
@pytest.mark.full
@needs.openmpi
@pytest.mark.parametrize("slowed", ["library", RD])
def test_settles_through_arrival_skew_in_38_of_40_runs(collkit, loop, tmp_path, slowed):
    good = sum(_settles(collkit, "openmpi", loop("openmpi"), tmp_path, slowed, slow_us=2, mode="skew",
                        calls=SKEW_CALLS) for _ in range(40))
    print(f"8 B, skew, slowed {slowed} by 2 us: settled on the other in {good} of 40 runs")
    assert good >= 38


@pytest.mark.parametrize("mpi", needs.each_mpi())
def test_ranks_agree_where_their_own_times_would_not(collkit, mpi, loop, tmp_path):
    """Rank 0's library calls and rank 1's recursive_doubling calls are made
    slow (30 and 60 us): on its own times rank 0 would choose
    recursive_doubling and rank 1 the library, and run different algorithms
    from then on. The agreement takes each call's slowest rank: the library
    (30 us) beats recursive_doubling (60 us) on both. A barrier after each
    call keeps one rank's added time out of the other's next call (under
    MPICH's throttled progress it otherwise landed on whichever candidate
    came next)."""
    out = tmp_path / "agreed.rules"
    cols = _autotune_env(collkit, mpi, loop(mpi), tmp_path, f"allreduce=library:30@0,allreduce={RD}:60@1", out,
                         "barrier")
    assert _rule(out) == "library"
    assert _counts(cols)["library"] > CALLS // 2


@pytest.mark.parametrize("mpi", needs.each_mpi())
def test_learned_rules_reproduce_and_restart_the_choice(collkit, mpi, loop, tmp_path):
    """What is tested is the rules file's round trip, not how finely the race
    tells candidates apart (the test above): the library is made slower by
    5 ms a call. 20 us once settled on the slowed library beside another test
    file, and so did 200 us under MPICH in `make test-full` (2026-11-30: the
    loaded machine put recursive doubling's median at 0.94 ms, its interval
    up to 5.2 ms)."""
    out = tmp_path / "learned.rules"
    _autotune_env(collkit, mpi, loop(mpi), tmp_path, "allreduce=library:5000", out, "barrier")
    assert _rule(out) == RD
    rd = f"alg{_index(RD)}"
    # --rules: every call on the learned choice, no exploration
    r = _run(collkit, mpi, loop(mpi), tmp_path, "--rules", str(out))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    cols = _columns(r.stdout)
    assert cols[0] == cols[1] == f"{rd}={CALLS}", cols
    # --autotune-from: the class starts settled on it, and the new rules say where it came from
    again = tmp_path / "again.rules"
    r = _run(collkit, mpi, loop(mpi), tmp_path, "--autotune", "--autotune-from", str(out), "--autotune-out",
             str(again))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    cols = _columns(r.stdout)
    assert cols[0] == cols[1] == f"{rd}={CALLS}", cols
    assert _rule(again) == RD and "from the rules" in again.read_text()


def _learn(collkit, mpi, program, tmp_path, out: Path, calls: int, *options: str, slow_us: float = 10) -> None:
    """One run of `calls` 8-byte allreduces (barrier after each), recursive
    doubling `slow_us` slower, learning into `out`."""
    install = find_install(mpi)
    flags = preload.env_flags(known.find(mpi).family, {"COLLKIT_AUTOTUNE_TEST_SLOW": f"allreduce={RD}:{slow_us:g}"})
    r = collkit("preload", "--mpi", mpi, "--autotune", "--autotune-out", str(out), "--candidates",
                f"allreduce={RD}", *options, "--", str(install.mpirun), *flags, "-n", "2", *install.flags,
                str(program), str(calls), "2", "barrier", cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def _chain_decides_like_one_run(collkit, program, tmp_path) -> tuple[bool, str]:
    single = tmp_path / "single.rules"
    _learn(collkit, "openmpi", program, tmp_path, single, 3000)
    prev: list[str] = []
    for i in range(5):
        out = tmp_path / f"chain{i}.rules"
        _learn(collkit, "openmpi", program, tmp_path, out, 600, *prev)
        prev = ["--autotune-from", str(out)]
        if i == 0:   # one run of 600 calls has not decided: its race state goes on
            first = out.read_text()
            assert "\nrace 1 allreduce " in first and "world_size = 2\n" in first, first
            assert not [ln for ln in first.splitlines() if ln.startswith("allreduce")], first
    last = out.read_text()
    ok = _rule(single) == _rule(out) == "library" and "continued from a race state" in "".join(
        (tmp_path / f"chain{i}.rules").read_text() for i in range(1, 5))
    return ok, f"single: {_rule(single)}, chain: {[ln for ln in last.splitlines() if ln.startswith('allreduce')]}"


@needs.openmpi
def test_five_chained_runs_decide_what_one_long_run_decides(collkit, loop, tmp_path):
    """Issue #50: recursive doubling 10 us slower pauses exploring after the
    first stage until the class's time has paid for it (about 1,200 calls at
    the library's 0.5 us), so one run of 600 calls ends undecided; five such
    runs chained with --autotune-from carry the race state (samples, looks,
    calls, the pause) and settle where one run of 3,000 calls does, on the
    library. 2 of 3 (k_of_n.py): the pause's length moves with the machine's load."""
    k_of_n(lambda i: _chain_decides_like_one_run(collkit, loop("openmpi"), tmp_path), 2, 3)


def _looks_and_rule(text: str) -> tuple[int, str]:
    """A learned file's one allreduce race's LOOKS (0: none written) and its rule's choice ("" if none)."""
    races = [ln.split() for ln in text.splitlines() if ln.startswith("race ")]
    rules = [ln.split() for ln in text.splitlines() if ln.startswith("allreduce")]
    return (int(races[0][11]) if races else 0), (rules[0][3] if rules else "")


@needs.openmpi
def test_a_chained_race_looks_again_in_every_run_where_its_next_stage_would_not_fit(collkit, loop, tmp_path):
    """Issue #50 (found on hpcc: a class of 300 calls a run, its next stage 320): runs of
    100 512-KiB allreduces, rabenseifner and ring alike (the library is out at look 3),
    so the race goes on. The first run looks 3 times and cuts off its next stage (16
    calls a candidate); each continued run caps its stages at half its last run's calls,
    shared by the candidates in the race, so it looks again in every run and ends by the
    third (7 looks at most). Uncapped, run 3's stage (64 calls a candidate) never fits."""
    prev: list[str] = []
    seen = []
    for i in range(3):
        out = tmp_path / f"tie{i}.rules"
        install = find_install("openmpi")
        r = collkit("preload", "--mpi", "openmpi", "--autotune", "--autotune-out", str(out), "--candidates",
                    "allreduce=" + ",".join(NEAR), "--budget", "100", *prev, "--", str(install.mpirun), "-n", "2",
                    *install.flags, str(loop("openmpi")), "100", str(BIG), "barrier", cwd=tmp_path, timeout=120)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        seen.append(_looks_and_rule(out.read_text()))
        prev = ["--autotune-from", str(out)]
    looks, rule = zip(*seen)
    for i in (1, 2):      # each run after the first: settled before, settled now, or looked again
        assert rule[i - 1] != "" or rule[i] != "" or looks[i] > looks[i - 1], seen
    assert rule[2] != "", seen


@needs.openmpi
def test_a_class_too_short_for_its_first_stage_keeps_its_calls_for_the_next_run(collkit, loop, tmp_path):
    """Issue #50 (found on IMB's 2 MiB allreduce: 51 calls a run, 19 past the first 32, its
    first stage 40): runs of 38 8-byte allreduces explore 6 calls, under the first stage's 8
    (4 a candidate). The closing look at MPI_Finalize counts them: the race state goes on with
    one look (before: no look, no state, every run started again). The next run continues
    it, eliminates recursive doubling (1 ms slower) at a later look and settles. 1 ms, not
    10 us: in CI (2026-11-30, ctest and pytest two at a time) the library's working time
    reached past 10 us a call and run 2 ended after 4 looks undecided; what this test checks
    is the carried state, not how small a difference the race resolves (other tests do)."""
    seen = []
    prev: list[str] = []
    for i in range(2):
        out = tmp_path / f"short{i}.rules"
        _learn(collkit, "openmpi", loop("openmpi"), tmp_path, out, 38, "--budget", "100", *prev, slow_us=1000)
        seen.append(_looks_and_rule(out.read_text()))
        prev = ["--autotune-from", str(out)]
    assert seen == [(1, ""), (0, "library")], seen

# A race state as collkit-preload writes one (docs/preload.md, "Evidence across runs")
RACE = """world_size = 2
race 1 allreduce 00000000000000a2 8 -1 MPI_INT sum 0 600 8 1 7 0.05 1238 6.3e-05 4.6e-06 7.6e-04 600
race_candidate 1 library 0 1 4
race_samples 1 library 1e-06 2e-06 3e-06 4e-06
race_candidate 1 recursive_doubling 0 1 4
race_samples 1 recursive_doubling 1e-05 2e-05 3e-05 4e-05
"""


@needs.openmpi
@pytest.mark.parametrize("change, ranks, words", [
    (lambda t: t, 1, "race states learned at 2 ranks, this program runs at 1"),
    (lambda t: "mpi_library = MPICH Version: 5.0.2\n" + t, 2, "learned on MPI library 'MPICH"),
    (lambda t: t[:t.rindex("race_samples")], 2, "damaged race state: a candidate lacks samples"),
    (lambda t: t.replace(" sum 0 600 ", " sum 0 -600 "), 2, "damaged race state: CALLS or EXPLORED"),
    (lambda t: t.replace("world_size = 2\n", ""), 2, "damaged race state: no world_size line"),
])
def test_a_race_state_from_elsewhere_or_damaged_is_one_line_and_the_file_stays(collkit, loop, tmp_path, change,
                                                                               ranks, words):
    """Issue #50: --autotune-from a file whose race state was learned at
    another rank count or on another library, or was damaged: every rank stops
    at MPI_Init with one line, status 2, and the file (also the output here) is
    left as it was."""
    path = tmp_path / "race.rules"
    path.write_text(change(RACE))
    before = path.read_bytes()
    install = find_install("openmpi")
    r = collkit("preload", "--mpi", "openmpi", "--autotune", "--autotune-from", str(path), "--autotune-out",
                str(path), "--", str(install.mpirun), "-n", str(ranks), *install.flags, str(loop("openmpi")), "600",
                "2", cwd=tmp_path, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("collkit-preload:")]
    assert len(lines) == 1 and words in lines[0], r.stdout + r.stderr
    assert "autotune_loop:" not in r.stdout
    assert path.read_bytes() == before


@needs.openmpi
@pytest.mark.parametrize("options, words", [
    (["--autotune", "--budget", "0"], "--budget 0"),
    (["--autotune", "--budget", "101"], "--budget 101"),
    (["--autotune", "--budget", "nan"], "--budget nan"),
    (["--autotune", "--autotune-calls", "2.5"], "--autotune-calls"),
    (["--autotune", "--autotune-alpha", "0.9"], "--autotune-alpha"),
    (["--autotune", "--candidates", "allreduce=rign"], "did you mean 'ring'"),
    (["--autotune", "--candidates", "allreduz=ring"], "allreduz"),
    (["--autotune", "--autotune-out", "/nonexistent/dir/x.rules"], "--autotune-out"),
    (["--autotune", "--autotune-from", "/nonexistent/x.rules"], "--autotune-from"),
    (["--budget", "5"], "needs --autotune"),
    (["--autotune", "--rules", "x.rules"], "--autotune-from x.rules"),
])
def test_bad_autotune_options_are_one_line(collkit, tmp_path, options, words):
    one_line_error(collkit("preload", "--mpi", "openmpi", *options, "--", "mpirun", "./x", cwd=tmp_path), words)


def _shim(mpi: str, program: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """The shim told directly (a batch script's COLLKIT_AUTOTUNE* variables), not through the command."""
    install = find_install(mpi)
    full = {"LD_PRELOAD": str(preload.library_path(mpi)), **env}
    argv = [str(install.mpirun), "-n", "2", *install.flags, *preload.env_flags(known.find(mpi).family, full),
            str(program), "10", "2"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=install.environment(), cwd=cwd)


@pytest.mark.parametrize("mpi", needs.each_mpi())
@pytest.mark.parametrize("env, words", [
    ({"COLLKIT_AUTOTUNE": "1", "COLLKIT_AUTOTUNE_BUDGET": "0"}, "COLLKIT_AUTOTUNE_BUDGET='0'"),
    ({"COLLKIT_AUTOTUNE": "1", "COLLKIT_AUTOTUNE_CANDIDATES": "allreduce=nosuch"},
     "COLLKIT_AUTOTUNE_CANDIDATES: unknown allreduce algorithm 'nosuch'"),
    ({"COLLKIT_AUTOTUNE": "1", "COLLKIT_AUTOTUNE_OUT": "/nonexistent/dir/x.rules"},
     "COLLKIT_AUTOTUNE_OUT: cannot write /nonexistent/dir/x.rules"),
    ({"COLLKIT_AUTOTUNE_BUDGET": "5"}, "COLLKIT_AUTOTUNE_BUDGET is set but COLLKIT_AUTOTUNE is not"),
])
def test_bad_shim_settings_stop_every_rank_with_one_line(mpi, loop, tmp_path, env, words):
    r = _shim(mpi, loop(mpi), env, tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("collkit-preload:")]
    assert len(lines) == 1 and words in lines[0], r.stdout + r.stderr
    assert "autotune_loop:" not in r.stdout          # no rank got past MPI_Init


@pytest.mark.parametrize("mpi", needs.each_mpi())
def test_rules_learned_on_another_mpi_are_refused(collkit, mpi, loop, tmp_path):
    rules = tmp_path / "other.rules"
    rules.write_text("# collkit rules v1\nmpi_library = Some Other MPI 9.9 # not this one\nallreduce 2 8 ring\n")
    for options in (["--autotune", "--autotune-from", str(rules)], ["--rules", str(rules)]):
        r = _run(collkit, mpi, loop(mpi), tmp_path, *options, calls=10)
        assert r.returncode == 2, r.stdout + r.stderr
        lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("collkit-preload:")]
        assert len(lines) == 1 and "learned on MPI library 'Some Other MPI 9.9 # not this one'" in lines[0], \
            r.stdout + r.stderr


@needs.openmpi
def test_trial_runs_the_autotuner_against_the_default(collkit, loop, tmp_path):
    """`collkit trial --autotune`: the choice runs explore and write their rules;
    the output is unchanged; the JSON says the choice was the autotuner."""
    import json
    install = find_install("openmpi")
    out, js = tmp_path / "trial.rules", tmp_path / "trial.json"
    r = collkit("trial", "--runs", "4", "--warmup", "0", "--mpi", "openmpi", "--autotune", "--autotune-out",
                str(out), "--candidates", f"allreduce={RD}", "--compare-regex", r"rank (\d) columns",
                "--compare-unordered",
                "--json", str(js), "--", str(install.mpirun), "-n", "2", *install.flags, str(loop("openmpi")),
                "2000", "2", cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    got = json.loads(js.read_text())
    assert got["status"] == "complete" and got["choice"]["kind"] == "autotune"
    assert got["choice"]["environment"]["COLLKIT_AUTOTUNE"] == "1"
    assert "output: unchanged" in r.stdout and _rule(out) in ("library", RD)
    one_line_error(collkit("trial", "--runs", "4", "--mpi", "openmpi", "--autotune", "--campaign", str(tmp_path),
                           "--", str(install.mpirun), "./x", cwd=tmp_path), "--campaign")


@needs.openmpi
def test_profile_shows_what_the_autotuner_decided(collkit, loop, tmp_path):
    """`collkit profile --autotune`: the profile file keeps every class's
    candidates, calls, time, verdict and choice; the table shows them in 100
    columns; the file loads back alike."""
    from collkit.program import profile, profile_file
    install = find_install("openmpi")
    out = tmp_path / "p.json"
    r = collkit("profile", "--mpi", "openmpi", "--out", str(out), "--autotune", "--autotune-out",
                str(tmp_path / "p.rules"), "--candidates", f"allreduce={RD},ring", "--",
                str(install.mpirun), "-n", "2", *install.flags, str(loop("openmpi")), "3000", "2",
                cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    p = profile_file.load(out)
    assert p.autotune is not None and p.autotune.out == str(tmp_path / "p.rules")
    (c,) = [c for c in p.autotune.classes if c.collective == "allreduce"]
    assert (c.comm_size, c.bytes, c.datatype, c.op, c.calls) == (2, 8, "MPI_INT", "sum", 3000)
    assert [k.name for k in c.candidates] == ["library", RD, "ring"]
    assert c.explored >= sum(k.calls for k in c.candidates) > 0     # equal once settled (at a look)
    # settled: one candidate chosen, the rules' choice; still racing: none chosen
    chosen = [k.name for k in c.candidates if k.verdict == "chosen"]
    assert (c.state == "settled" and chosen == [c.choice] == [_rule(tmp_path / "p.rules")]) or \
        (c.state != "settled" and chosen == []), (c.state, chosen, c.choice)
    assert c.lost_s == pytest.approx(sum(k.time_s for k in c.candidates if k.name != c.choice), rel=1e-6)
    text = profile.table(p, width=100)
    assert "autotune: 1 classes" in text and all(len(ln) <= 100 for ln in text.splitlines())
    assert f"{c.lost_s:.6f} s on the others" in text
    # a damaged autotune object is refused in one line naming the field
    import json
    raw = json.loads(out.read_text())
    raw["autotune"]["classes"][0]["state"] = "guessing"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    from collkit.common.errors import UserError
    with pytest.raises(UserError) as e:
        profile_file.load(bad)
    assert "state" in str(e.value) and "\n" not in str(e.value)


@needs.mpich
def test_mpich_own_algorithms_are_candidates_switched_per_call(collkit, loop, tmp_path):
    """MPICH reads MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM at every call: its own
    algorithms race as library:NAME (the default slowed on purpose), the
    rules name the winner, and --rules runs it again."""
    out = tmp_path / "mpich.rules"
    install = find_install("mpich")
    flags = preload.env_flags("mpich", {"COLLKIT_AUTOTUNE_TEST_SLOW": "allreduce=library:20"})
    r = collkit("preload", "--mpi", "mpich", "--autotune", "--autotune-out", str(out), "--candidates",
                "allreduce=library:recursive_doubling,library:ring", "--", str(install.mpirun), *flags, "-n", "2",
                *install.flags, str(loop("mpich")), str(CALLS), "2", cwd=tmp_path, timeout=300)
    assert r.returncode == 0 and "WRONG" not in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    text = out.read_text()
    assert "#  library:recursive_doubling " in text and "#  library:ring " in text, text
    assert _rule(out) in ("library:recursive_doubling", "library:ring"), text
    r = _run(collkit, "mpich", loop("mpich"), tmp_path, "--rules", str(out))
    assert r.returncode == 0 and "WRONG" not in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]


@needs.openmpi
def test_open_mpi_has_no_per_call_algorithms(loop, tmp_path):
    """Without coll_tuned_use_dynamic_rules, Open MPI's tuned never reads a
    forced algorithm: library:NAME is nothing it can switch, refused at
    MPI_Init in one line (with it, the switch is per communicator:
    preload_autotune_library_dup_p4)."""
    r = _shim("openmpi", loop("openmpi"), {"COLLKIT_AUTOTUNE": "1",
                                           "COLLKIT_AUTOTUNE_CANDIDATES": "allreduce=library:ring"}, tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("collkit-preload:")]
    assert len(lines) == 1 and "unknown allreduce algorithm 'library:ring'" in lines[0], r.stdout + r.stderr


def test_python_reads_learned_rules_and_refuses_another_family(tmp_path):
    """The one Python reader of collkit rules (trial, predict, replay): the
    mpi_library line is skipped as a rule, library:NAME is the library's own,
    and rules learned on Open MPI are refused for an MPICH run in one line."""
    from collkit.common.errors import UserError
    from collkit.program import rules_choice
    from collkit.tune.writers import collkit as rules_format
    text = ("# collkit rules v1\nmpi_library = Open MPI v4.1.4, package: Debian OpenMPI # a '#' in the text\n"
            "allreduce 2 8 library:recursive_doubling\nbcast 2 * binomial_doubling\n")
    f = tmp_path / "learned.rules"
    f.write_text(text)
    assert rules_format.learned_on(text) == "Open MPI v4.1.4, package: Debian OpenMPI # a '#' in the text"
    assert [ln.choice for ln in rules_format.parse(text)] == ["library:recursive_doubling", "binomial_doubling"]
    rules = rules_choice.load_rules(f)
    assert len(rules.lines) == 2


def _learned_on_open_mpi(tmp_path):
    f = tmp_path / "learned.rules"
    f.write_text("# collkit rules v1\nmpi_library = Open MPI v4.1.4, package: Debian OpenMPI\n"
                 "allreduce 2 8 library:recursive_doubling\n")
    return f


@needs.mpich
def test_rules_learned_on_open_mpi_are_refused_for_an_mpich_run(tmp_path):
    """The family comes from the known MPI's build (collkit mpis)."""
    from collkit.common.errors import UserError
    from collkit.program import rules_choice
    f = _learned_on_open_mpi(tmp_path)
    with pytest.raises(UserError) as e:
        rules_choice.load_rules(f, "mpich")
    assert str(f) in str(e.value) and "learned by the autotuner" in str(e.value) and "\n" not in str(e.value)


@needs.openmpi
def test_rules_learned_on_open_mpi_are_taken_for_an_open_mpi_run(tmp_path):
    from collkit.program import rules_choice
    f = _learned_on_open_mpi(tmp_path)
    assert len(rules_choice.load_rules(f, "openmpi").lines) == 1
