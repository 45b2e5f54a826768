"""collkit trial (docs/application-loop.md, "Trial"): the run order, the verdicts
on fake runs of known distributions, the output check, the prediction beside the
measurement, and the one-line errors. Runs are fakes of program/profile.py's
run_profiled (the real one is exercised by the loop's end-to-end test)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

import needs
from cli_runner import in_process, one_line_error
from collkit import cli
from collkit.launch import watch
from collkit.mpis import known
from collkit.program import trial_choice as choices
from collkit.program import output_check, predict, profile_file, trial, trial_stats
from collkit.program.trial_stats import CHOICE, DEFAULT

SH = shutil.which("sh")


def _profile(coll_s: float, complete: bool = True) -> profile_file.Profile:
    cls = profile_file.CallClass(collective="allreduce", comm="world", comm_size=4, bytes=8,
                                 datatype="MPI_DOUBLE", dtype="double", op="sum", root=None, in_place=False,
                                 calls=100, time_max_s=coll_s, time_sum_s=coll_s * 4, ranks=4)
    return profile_file.Profile(
        complete=complete, exit_status=0 if complete else 134, incomplete_reason="" if complete else "crashed",
        created="2026-11-27T08:00:00Z", collkit_version="test", command=("mpirun", "-n", "4", "./app"),
        cwd="/", mpi_name="openmpi", mpi_family="openmpi", mpi_library_version="Open MPI v4.1.4", ranks=4,
        ranks_reported=4, nodes=1, hosts=("h",), wall_s=1.0, mpi_span_s=0.9, classes=(cls,))


@dataclass
class FakeRun:
    profile: profile_file.Profile
    exit_status: int
    wall_s: float
    stdout: str


class FakeProgram:
    """run_profiled's stand-in: each variant's wall and collective times drawn
    from its own distribution, its output from `output(variant, k)`; run
    `stop_at` raises `stop` (run_profiled's TimedOut, or an interrupt)."""

    def __init__(self, default=(1.0, 0.05), choice=(1.0, 0.05), output=None, fail_at=None, seed=1,
                 stop_at=None, stop=None):
        self.dist = {DEFAULT: default, CHOICE: choice}
        self.rng = random.Random(seed)
        self.output = output or (lambda variant, k: "result = 42\n")
        self.fail_at = fail_at
        self.stop_at, self.stop = stop_at, stop
        self.calls: list[dict] = []

    def __call__(self, mpi, command, *, algorithms=(), rules=None, extra_env=None, trace=0, stdout=None,
                 stderr=None, timeout=None):
        variant = CHOICE if (algorithms or rules or extra_env) else DEFAULT
        k = len(self.calls) + 1
        self.calls.append({"mpi": mpi, "command": command, "algorithms": algorithms, "rules": rules,
                           "extra_env": extra_env, "variant": variant, "timeout": timeout})
        assert stdout is subprocess.PIPE
        if self.stop_at == k:
            raise self.stop
        if self.fail_at == k:
            stderr.write(b"app: segmentation fault in MPI_Allreduce\n")
            stderr.flush()
            return FakeRun(_profile(0.0, complete=False), 139, 0.5, "")
        mean, sd = self.dist[variant]
        wall = max(0.01, self.rng.gauss(mean, sd))
        return FakeRun(_profile(wall / 2), 0, wall, self.output(variant, k))


def _settings(runs=8, warmup=1, check=None, choice=None, **kw) -> trial.TrialSettings:
    return trial.TrialSettings(mpi="openmpi", command=("mpirun", "-n", "4", "./app"),
                               choice=choice or choices.Choice(kind=choices.ALGORITHMS, describe="forced",
                                                               algorithms=(("allreduce", "ring"),)),
                               runs=runs, warmup=warmup, check=check or output_check.OutputCheck(), **kw)


def _execute(settings, fake, **kw):
    return trial.execute(settings, fake, progress=open("/dev/null", "w"), **kw)


# ------------------------------------------------------------------ order
def test_runs_alternate_in_abba_blocks_with_the_warmups_first():
    steps = trial.plan(_settings(runs=4, warmup=1))
    assert [v[0] for v in steps] == [DEFAULT, CHOICE, CHOICE, DEFAULT, DEFAULT, CHOICE, CHOICE, DEFAULT,
                                     DEFAULT, CHOICE]
    assert [w for _, w in steps] == [True, True] + [False] * 8
    # each block of four: both variants at the same mean position (a linear drift cancels)
    order = trial_stats.balanced_order(6)
    for b in range(0, 12, 4):
        block = order[b:b + 4]
        assert sum(i for i, v in enumerate(block) if v == DEFAULT) == sum(i for i, v in enumerate(block) if v == CHOICE)


def test_the_runs_follow_the_plan_and_only_the_choice_carries_it():
    fake = FakeProgram()
    s = _settings(runs=4, warmup=1)
    res = _execute(s, fake)
    assert [c["variant"] for c in fake.calls] == [v for v, _ in trial.plan(s)]
    for c in fake.calls:
        if c["variant"] == DEFAULT:
            assert c["algorithms"] == () and c["rules"] is None and c["extra_env"] is None
        else:
            assert c["algorithms"] == (("allreduce", "ring"),)
    assert len(res.measured(DEFAULT, "wall_s")) == 4 and len(res.measured(CHOICE, "wall_s")) == 4
    assert [r.warmup for r in res.runs] == [True, True] + [False] * 8


# ------------------------------------------------------------------ statistics
def test_min_runs_is_the_fewest_at_which_mann_whitney_can_call_a_difference():
    n = trial_stats.MIN_RUNS
    separated = trial_stats.compare("x", [1.0 + i for i in range(n)], [10.0 + i for i in range(n)])
    assert separated.verdict == "slower" and separated.p < 0.05
    fewer = trial_stats.compare("x", [1.0 + i for i in range(n - 1)], [10.0 + i for i in range(n - 1)])
    assert fewer.verdict == "tie" and fewer.p >= 0.05


def test_a_clear_speedup_is_faster_and_a_slowdown_slower():
    res = _execute(_settings(runs=12), FakeProgram(default=(1.0, 0.03), choice=(0.7, 0.03)))
    wall, coll = res.comparisons
    assert res.status == "complete" and res.exit_status == 0
    assert wall.verdict == "faster" and coll.verdict == "faster" and wall.p < 0.05
    assert wall.ratio == pytest.approx(wall.choice_median / wall.default_median) and wall.ratio < 0.8
    lo, hi = wall.default_ci
    assert lo <= wall.default_median <= hi
    res = _execute(_settings(runs=12), FakeProgram(default=(1.0, 0.03), choice=(1.4, 0.03)))
    assert [c.verdict for c in res.comparisons] == ["slower", "slower"]


def test_identical_distributions_are_a_tie():
    res = _execute(_settings(runs=12), FakeProgram(default=(1.0, 0.05), choice=(1.0, 0.05), seed=7))
    assert [c.verdict for c in res.comparisons] == ["tie", "tie"]
    # the same values on both sides: no difference at all
    same = trial_stats.compare("x", [1.0, 2.0, 3.0, 4.0, 5.0], [5.0, 4.0, 3.0, 2.0, 1.0])
    assert same.verdict == "tie" and same.p == pytest.approx(1.0) and same.default_ci is None


def test_the_report_and_json_carry_the_verdict_and_every_run(tmp_path):
    s = _settings(runs=6)
    res = _execute(s, FakeProgram(default=(1.0, 0.03), choice=(0.7, 0.03)))
    text = trial.report(s, res)
    assert "verdict: faster" in text and "output: not checked" in text
    doc = trial.to_json(s, res)
    assert doc["format"] == "collkit-trial" and doc["status"] == "complete"
    assert len(doc["runs"]) == 14 and sum(not r["warmup"] for r in doc["runs"]) == 12
    assert [c["verdict"] for c in doc["comparisons"]] == ["faster", "faster"]


# ------------------------------------------------------------------ failures
def test_a_failed_run_stops_the_trial_with_its_status_and_stderr_tail():
    fake = FakeProgram(fail_at=3)
    res = _execute(_settings(runs=4), fake)
    assert len(fake.calls) == 3
    assert res.status == "run failed" and res.exit_status == 139 and not res.comparisons
    assert "run 3 of 10 (choice)" in res.message and "exit status 139" in res.message
    assert "segmentation fault in MPI_Allreduce" in res.message and "\n" not in res.message


def test_a_run_past_its_timeout_ends_the_trial_with_exit_2_and_the_runs_so_far():
    fake = FakeProgram(stop_at=4, stop=watch.TimedOut(7.5))
    res = _execute(_settings(runs=4, timeout=7.5), fake)
    assert all(c["timeout"] == 7.5 for c in fake.calls) and len(fake.calls) == 4
    assert res.status == trial.TIMED_OUT and res.exit_status == 2 and not res.comparisons
    assert len(res.runs) == 3 and "\n" not in res.message
    assert res.message.startswith("run 4 of 10 (default) ran past --timeout 7.5 s")
    assert "longer --timeout" in res.message
    # under the choice, the finding is the choice's
    res = _execute(_settings(runs=4, timeout=7.5), FakeProgram(stop_at=3, stop=watch.TimedOut(7.5)))
    assert "run 3 of 10 (choice)" in res.message and "choice makes the program hang" in res.message


@pytest.mark.parametrize("stop, name", [(watch.Interrupted(2), "SIGINT"), (watch.Interrupted(15), "SIGTERM"),
                                        (KeyboardInterrupt(), "an interrupt")])
def test_an_interrupt_ends_the_trial_with_exit_2_and_names_the_signal(stop, name):
    res = _execute(_settings(runs=4), FakeProgram(stop_at=2, stop=stop))
    assert res.status == trial.INTERRUPTED and res.exit_status == 2 and len(res.runs) == 1
    assert res.message.startswith(f"{name} arrived during run 2 of 10 (choice, warm-up)") and "\n" not in res.message


# ------------------------------------------------------------------ output check
def _check(regex=None, command=None, rtol=None):
    return output_check.from_options(regex, command, rtol)


def test_regex_values_compared_exactly_and_a_changed_value_stops_with_exit_1():
    def out(variant, k):
        return f"iter 1\nresidual = {'0.125' if k < 6 else '0.126'}\nresidual = 3\n"
    res = _execute(_settings(runs=4, check=_check(r"residual = (\S+)")), FakeProgram(output=out))
    assert res.status == "output changed" and res.exit_status == 1
    assert "run 6 of 10" in res.message and "'0.126'" in res.message and "'0.125'" in res.message
    assert res.reference_values == 2
    # unchanged output: complete, the values counted
    res = _execute(_settings(runs=4, check=_check(r"residual = (\S+)")),
                   FakeProgram(output=lambda v, k: "residual = 0.125\n"))
    assert res.status == "complete" and res.reference_values == 1
    # a pattern the reference run does not match checks nothing: refused
    with pytest.raises(cli.UserError, match="found no values in the first default run"):
        _execute(_settings(runs=4, check=_check(r"residual = (\S+)")), FakeProgram())


def test_rtol_accepts_last_bit_changes_only():
    def out(variant, k):
        return f"sum = {0.1 + 0.2 if variant == CHOICE else 0.3!r}\n"   # 0.30000000000000004 vs 0.3
    exact = _execute(_settings(runs=4, check=_check(r"sum = (\S+)")), FakeProgram(output=out))
    assert exact.status == "output changed"
    close = _execute(_settings(runs=4, check=_check(r"sum = (\S+)", rtol=1e-12)), FakeProgram(output=out))
    assert close.status == "complete"
    far = output_check.OutputCheck(rtol=1e-12)
    assert far.difference(["0.3"], ["0.3001"]) is not None and far.difference(["abc"], ["abd"]) is not None


def test_unordered_accepts_ranks_lines_in_another_order_not_other_values():
    # four ranks print "OK" and "Ran 72 tests"; the launcher interleaves them anew each run
    def out(variant, k):
        return "Ran 72 tests\nOK\n" * 2 + ("OK\nRan 72 tests\n" if k % 2 else "Ran 72 tests\nOK\n") * 2
    regex = r"(?m)(Ran \d+ tests|^OK$)"
    ordered = _execute(_settings(runs=4, check=_check(regex)), FakeProgram(output=out))
    assert ordered.status == "output changed"
    check = output_check.from_options(regex, None, None, unordered=True)
    assert _execute(_settings(runs=4, check=check), FakeProgram(output=out)).status == "complete"
    assert check.difference(["OK", "Ran 72 tests"], ["Ran 72 tests", "FAILED"]) is not None
    assert "in any order" in check.describe()
    with pytest.raises(cli.UserError, match="--compare-unordered"):
        output_check.from_options(None, None, None, unordered=True)


def test_differing_default_runs_say_the_check_catches_run_to_run_values():
    def out(variant, k):
        return f"time = {k}\n"
    res = _execute(_settings(runs=4, check=_check(r"time = (\S+)")), FakeProgram(output=out))
    assert res.status == "output changed" and "run 2 of 10 (choice" in res.message
    assert "only one default run so far" in res.message

    def default_varies(variant, k):
        return "time = 1\n" if variant == CHOICE or k == 1 else f"time = {k}\n"
    res = _execute(_settings(runs=4, check=_check(r"time = (\S+)")), FakeProgram(output=default_varies))
    assert res.status == "output changed" and "run 4 of 10 (default)" in res.message
    assert "differ among themselves" in res.message


def test_compare_command_reads_the_results_file(tmp_path):
    results = tmp_path / "out.txt"

    def out(variant, k):
        results.write_text("energy 1.5\n" if k != 4 else "energy 1.6\n")
        return "nothing on stdout\n"
    check = _check(command=f"cat {results}")
    res = _execute(_settings(runs=4, check=check), FakeProgram(output=out))
    assert res.status == "output changed" and "run 4 of 10" in res.message and "'1.6'" in res.message
    missing = _check(command=f"cat {tmp_path / 'none.txt'}")
    res = _execute(_settings(runs=4, check=missing), FakeProgram())
    assert res.status == "run failed" and "--compare-command exited" in res.message


# ------------------------------------------------------------------ prediction
def test_the_prediction_uses_the_first_default_run_and_the_forced_algorithms(tmp_path):
    seen = []

    def predict_fn(profile, campaign, rules, forced=(), synchronised=False, waiting_from=()):
        seen.append((profile.collective_time_s, campaign, rules, forced))
        return predict.Prediction(mpi="openmpi", campaign=campaign, rules=rules, wall_s=1.0, classes=(),
                                  default_total_s=0.5, default_total_ci=(0.45, 0.55), rules_total_s=0.3,
                                  rules_total_ci=(0.28, 0.33), measured_total_s=0.5, uncovered_s=0.01,
                                  forced=forced)
    s = _settings(runs=4, campaign=tmp_path)
    res = _execute(s, FakeProgram(), predict_fn=predict_fn)
    assert len(seen) == 1 and seen[0][1:] == (tmp_path, None, (("allreduce", "ring"),))
    assert seen[0][0] == pytest.approx(res.runs[0].collective_time_s)
    text = trial.report(s, res)
    assert "predicted" in text and "choice - default" in text and "wall time change" in text
    # the JSON carries the prediction as `collkit predict --json` writes it, once
    doc = trial.to_json(s, res)
    assert doc["version"] == 2 and doc["prediction"] == res.prediction.to_json()
    assert doc["prediction"]["wall_change_s"] == pytest.approx(-0.2)
    assert doc["prediction"]["forced"] == [["allreduce", "ring"]] and doc["prediction"]["rules"] is None
    assert doc["prediction"]["campaign"] == str(tmp_path)


# ------------------------------------------------------------------ command line
@pytest.fixture
def mpis(monkeypatch):
    """Two known MPIs of the two families, without needing their builds."""
    fams = {"openmpi": "openmpi", "mpich": "mpich"}

    def find(name):
        if name not in fams:
            raise cli.UserError(f"unknown MPI {name}")
        return SimpleNamespace(name=name, family=fams[name])
    monkeypatch.setattr(known, "find", find)
    monkeypatch.setattr(known, "default_name", lambda: "openmpi")


def collkit_trial(capsys, *args):
    return in_process(capsys, "trial", *args)


@pytest.mark.parametrize("runs", ["3", "1001", "0"])
def test_runs_out_of_bounds_is_one_line_exit_2(mpis, capsys, tmp_path, runs):
    rules = tmp_path / "r.rules"
    rules.write_text("allreduce * * library\n")
    one_line_error(collkit_trial(capsys, "--runs", runs, "--rules", rules, "--", SH, "-c", "true"), f"--runs {runs}",
                   "4 to 1000")


def test_a_missing_launcher_is_one_line_exit_2(mpis, capsys, tmp_path):
    rules = tmp_path / "r.rules"
    rules.write_text("allreduce * * library\n")
    one_line_error(collkit_trial(capsys, "--runs", "5", "--rules", rules, "--", "/no/such/mpirun", "-n", "4", "./app"),
                   "launcher '/no/such/mpirun' not found")


def test_rules_for_another_mpi_is_one_line_exit_2(mpis, capsys, tmp_path):
    ompi = tmp_path / "ompi.rules"
    ompi.write_text("1\n2\n1\n4\n2\n0 4 0 0\n8192 3 0 0\n")       # allreduce, 4 ranks
    one_line_error(collkit_trial(capsys, "--runs", "5", "--mpi", "mpich", "--rules", ompi, "--", SH),
                   "tuning file for openmpi", "mpich")
    mpich = tmp_path / "sel.json"
    mpich.write_text('{"collective=allreduce": {"algorithm=MPIR_Allreduce_intra_ring": {}}}\n')
    one_line_error(collkit_trial(capsys, "--runs", "5", "--mpi", "openmpi", "--rules", mpich, "--", SH),
                   "tuning file for mpich")


def test_collkit_rules_tuned_over_another_mpi_is_one_line_exit_2(mpis, capsys, tmp_path):
    from collkit.tune.writers import collkit as writer
    rules = tmp_path / "tuned.rules"
    rules.write_text(f"# for {writer.library_of('openmpi')}; tuned by collkit\nallreduce * * ring\n")
    one_line_error(collkit_trial(capsys, "--runs", "5", "--mpi", "mpich", "--rules", rules, "--", SH),
                   "tuned over openmpi")
    # the same file for the MPI it was tuned over is accepted
    assert choices.from_options("openmpi", str(rules), None).kind == choices.COLLKIT_RULES


def test_a_tuning_file_runs_as_the_library_reads_it(mpis, monkeypatch, tmp_path):
    ompi = tmp_path / "ompi.rules"
    ompi.write_text("1\n2\n1\n4\n2\n0 4 0 0\n8192 3 0 0\n")
    monkeypatch.setattr(choices, "_library_env",
                        lambda mpi, tf: {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                                         "OMPI_MCA_coll_tuned_dynamic_rules_filename": tf.source})
    c = choices.from_options("openmpi", str(ompi), None)
    assert c.kind == choices.TUNING_FILE and c.rules is None and not c.algorithms
    assert c.extra_env["OMPI_MCA_coll_tuned_dynamic_rules_filename"] == str(ompi.resolve())
    fake = FakeProgram()
    _execute(_settings(runs=4, choice=c), fake)
    chosen = [x for x in fake.calls if x["variant"] == CHOICE]
    assert chosen and all(x["extra_env"] == c.extra_env and x["rules"] is None for x in chosen)


@needs.openmpi
def test_an_open_mpi_tuning_file_gets_the_campaigns_tuned_environment(tmp_path):
    ompi = tmp_path / "ompi.rules"
    ompi.write_text("1\n2\n1\n4\n2\n0 4 0 0\n8192 3 0 0\n")
    env = choices.from_options("openmpi", str(ompi), None).extra_env
    assert env["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1"
    assert env["OMPI_MCA_coll_tuned_dynamic_rules_filename"] == str(ompi.resolve())
    assert env["OMPI_MCA_coll_tuned_allreduce_algorithm"] == "0"     # the file decides, not a forced id
    ompi.write_text("1\n2\n1\n4\n1\n0 99 0 0\n")
    with pytest.raises(cli.UserError, match="names algorithm 99"):
        choices.from_options("openmpi", str(ompi), None)


def test_bad_choice_and_check_options_are_one_line_exit_2(mpis, capsys, tmp_path):
    rules = tmp_path / "r.rules"
    rules.write_text("allreduce * * library\n")
    cases = [
        (["--compare-regex", "(unclosed"], "not a regular expression"),
        (["--compare-rtol", "1e-9"], "give --compare-regex or --compare-command too"),
        (["--compare-command", "/no/such/tool x"], "'/no/such/tool' not found"),
        (["--profile", str(rules)], "give --campaign DIR too"),
    ]
    for extra, words in cases:
        one_line_error(collkit_trial(capsys, "--runs", "5", "--rules", rules, *extra, "--", SH), words)
    empty = tmp_path / "empty.rules"
    empty.write_text("# nothing\n")
    one_line_error(collkit_trial(capsys, "--runs", "5", "--rules", empty, "--", SH), "holds no rules")
    one_line_error(collkit_trial(capsys, "--runs", "5", "--", SH),
                   "--rules FILE, --algorithm C=NAME, --autotune or --library-autotuner")
    one_line_error(collkit_trial(capsys, "--runs", "5", "--mpi", "mpich", "--library-autotuner", "--", SH),
                   "mpich has no autotuner of its own")
    one_line_error(collkit_trial(capsys, "--runs", "5", "--library-autotuner", "--rules", rules, "--", SH),
                   "--library-autotuner is the choice by itself")


def test_an_unknown_algorithm_in_the_rules_is_refused_before_any_run(mpis, capsys, tmp_path):
    rules = tmp_path / "r.rules"
    rules.write_text("allreduce * * rign\n")
    one_line_error(collkit_trial(capsys, "--runs", "5", "--rules", rules, "--", SH),
                   "unknown allreduce algorithm 'rign'")


def test_the_command_is_registered(capsys):
    res = collkit_trial(capsys, "--help")
    assert res.returncode == 0 and "--compare-rtol" in res.stdout
    assert f"--runs is {trial_stats.MIN_RUNS} to" in res.stdout


def test_the_command_writes_the_json_and_exits_1_on_changed_output(mpis, monkeypatch, capsys, tmp_path):
    def out(variant, k):
        return "energy = -1.25\n" if variant == DEFAULT else "energy = -1.5\n"
    monkeypatch.setitem(sys.modules, "collkit.program.profile",
                        SimpleNamespace(run_profiled=FakeProgram(output=out)))
    rules = tmp_path / "r.rules"
    rules.write_text("allreduce * * library\n")
    doc_path = tmp_path / "trial.json"
    res = collkit_trial(capsys, "--runs", "4", "--rules", rules, "--compare-regex", r"energy = (\S+)",
                        "--json", doc_path, "--", SH, "-c", "true")
    assert res.returncode == 1 and "verdict: output changed" in res.stdout and "'-1.5'" in res.stdout
    doc = json.loads(doc_path.read_text())
    assert doc["status"] == "output changed" and doc["exit_status"] == 1 and len(doc["runs"]) == 2
    assert doc["choice"]["kind"] == "collkit-rules" and doc["choice"]["rules"] == str(rules.resolve())
    # unchanged output: exit 0 whatever the verdict, every run in the JSON
    monkeypatch.setitem(sys.modules, "collkit.program.profile", SimpleNamespace(run_profiled=FakeProgram(
        output=lambda v, k: "energy = -1.25\n")))
    res = collkit_trial(capsys, "--runs", "4", "--warmup", "0", "--rules", rules, "--compare-regex",
                        r"energy = (\S+)", "--json", doc_path, "--", SH, "-c", "true")
    assert res.returncode == 0 and "output: unchanged" in res.stdout
    doc = json.loads(doc_path.read_text())
    assert doc["status"] == "complete" and len(doc["runs"]) == 8 and len(doc["comparisons"]) == 2


# ------------------------------------------------------------------ the library's autotuner
class DumpingBackend:
    """A library whose autotuner leaves its mark in the dumped tuning state, or not."""

    def __init__(self, tunes: bool):
        self.tunes = tunes

    def tuning_dump_env(self, dump):
        return {"DUMP": str(dump)}

    def autotuner_env(self, dump):
        return {"AUTO": "1", "DUMP": str(dump)}


class DumpingProgram(FakeProgram):
    """Writes the tuning state the library would: the same bytes without the autotuner,
    other bytes with it when it tunes."""

    def __init__(self, tunes: bool, **kw):
        super().__init__(**kw)
        self.tunes = tunes

    def __call__(self, mpi, command, *, extra_env=None, **kw):
        env = extra_env or {}
        auto = "AUTO" in env
        with open(env["DUMP"], "wb") as f:
            f.write(b"tuned %d" % len(self.calls) if auto and self.tunes else b"plain")
        return super().__call__(mpi, command, rules=Path("x") if auto else None, **kw)


@pytest.mark.parametrize("tunes, changed, words", [(True, 4, "changed the library's tuning state in 4 of 4"),
                                                   (False, 0, "it changed nothing")])
def test_the_library_autotuner_is_told_from_a_tie_by_its_dumps(monkeypatch, tunes, changed, words):
    monkeypatch.setattr(trial, "_backend", lambda mpi: DumpingBackend(tunes))
    choice = choices.Choice(kind=choices.LIBRARY_AUTOTUNER, describe="the library's autotuner")
    settings = _settings(runs=4, choice=choice)
    result = _execute(settings, DumpingProgram(tunes))
    assert result.status == trial.COMPLETE and result.autotuner_changed == changed
    assert words in " ".join(trial.report(settings, result, width=200).split())
    assert trial.to_json(settings, result)["autotuner_changed_runs"] == changed


@needs.impi
def test_intel_mpis_autotuner_runs_as_a_trials_choice(capsys, tmp_path):
    """On this Intel Xeon VM Intel's autotuner changes its tuning state in every run."""
    src = tmp_path / "loop.c"
    src.write_text(LOOP_C)
    exe = tmp_path / "loop"
    from collkit.mpis.build import wrapper_env
    mpicc = Path(known.find("impi").mpicc)
    subprocess.run([str(mpicc), "-O1", "-o", str(exe), str(src)], check=True, env=wrapper_env(mpicc, None))
    mpiexec = str(known.find("impi").mpirun)
    out = tmp_path / "t.json"
    res = collkit_trial(capsys, "--runs", "4", "--warmup", "0", "--mpi", "impi", "--library-autotuner",
                        "--compare-regex", r"sum (\S+)", "--json", out, "--", mpiexec, "-n", "2", exe)
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(out.read_text())
    assert data["choice"]["kind"] == choices.LIBRARY_AUTOTUNER and data["autotuner_changed_runs"] == 4


LOOP_C = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    double in[256], out[256], sum = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 256; i++) in[i] = i % 7;
    for (int k = 0; k < 300; k++) {
        MPI_Allreduce(in, out, 256, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        sum += out[128];
    }
    if (rank == 0) printf("sum %.1f\n", sum);
    MPI_Finalize();
    return 0;
}
"""
