"""Launches as the unit of variation (issue #54): the statistics (launches as
blocks, exact Mann-Whitney, the launch interval, states), a point's records of several
launches merged into one, the interleaved schedule, oversubscription read from
the launch record, and real campaigns whose launches are slowed at random (no
difference may be called) or, tied to one algorithm, every time (it must be).

Expected values are computed here independently of the code under test: by
enumerating permutations, by hand from textbook formulas, or from the injected
delays."""

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

import needs
from cli_runner import collkit
from collkit.analysis import launches, results, stats
from collkit.campaign import launch_info, repeats
from collkit.campaign.points import Point
from collkit.campaign.record import Record, current
from collkit.campaign.spec import Measure
from collkit.common import machine
from collkit.launch.schedule import Schedule, too_wide


# ------------------------------------------------------------------ the tests
def _exact_by_enumeration(x, y) -> float:
    """Two-sided Mann-Whitney p by enumerating every split of the pooled values."""
    pooled = list(x) + list(y)
    order = sorted(range(len(pooled)), key=lambda i: pooled[i])
    ranks = [0.0] * len(pooled)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and pooled[order[j + 1]] == pooled[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    n1, n = len(x), len(pooled)
    mean = n1 * (n + 1) / 2
    obs = abs(sum(ranks[:n1]) - mean)
    splits = list(itertools.combinations(range(n), n1))
    return sum(abs(sum(ranks[i] for i in s) - mean) >= obs - 1e-9 for s in splits) / len(splits)


@pytest.mark.parametrize("x, y", [([1, 2, 3], [4, 5, 6]), ([1, 5, 3, 7], [2, 6, 4]), ([1, 1, 2], [1, 3, 3, 3]),
                                  ([10.0, 11.0, 12.0, 13.0, 14.0], [10.5, 11.5, 12.5])])
def test_exact_mann_whitney_equals_enumeration(x, y):
    assert stats.exact_mann_whitney(x, y) == pytest.approx(_exact_by_enumeration(x, y), rel=1e-12)


def test_the_smallest_p_of_the_launch_test():
    # all of one side below the other: 2 / C(n1 + n2, n1)
    assert stats.min_p(3, 3) == pytest.approx(0.1)
    assert stats.min_p(5, 5) == pytest.approx(2 / 252)
    assert stats.exact_mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert launches.needed_launches() == 5            # 4 + 4: 2/70 = 0.029 >= 0.01
    assert launches.launches_for(18) == 8             # 18 x 2/3432 >= 0.01; 18 x 2/12870 < 0.01


def test_student_t_matches_the_tables():
    # two-sided 5 % and 1 % points of any t table
    for t, df, p in ((12.706, 1, 0.05), (4.303, 2, 0.05), (9.925, 2, 0.01), (2.776, 4, 0.05), (2.021, 40, 0.05),
                     (2.576, 10 ** 7, 0.01)):
        assert stats.t_two_sided(t, df) == pytest.approx(p, rel=2e-3)
    assert stats.t_two_sided(0.0, 3) == 1.0 and stats.t_two_sided(math.inf, 3) == 0.0


def test_blocked_comparisons_pool_the_launch_to_launch_variance_of_their_group():
    # two comparisons of one row, three launches each: d = log ratios per launch
    d1, d2 = [0.10, 0.12, 0.08], [0.00, 0.05, -0.05]
    ss = sum((x - sum(d) / 3) ** 2 for d in (d1, d2) for x in d)         # 0.0008 + 0.005
    se = math.sqrt(ss / 4 / 3)                                            # 4 pooled df, 3 launches
    t, p = stats.blocked_t([d1, d2], ["row", "row"])
    assert t[0] == pytest.approx(0.10 / se) and p[0] == pytest.approx(stats.t_two_sided(0.10 / se, 4))
    assert t[1] == pytest.approx(0.0) and p[1] == pytest.approx(1.0)
    # alone, the first has its own 2 df; one launch is no comparison
    t, p = stats.blocked_t([d1, [0.3]], ["a", "b"])
    assert p[0] == pytest.approx(stats.t_two_sided(0.10 / math.sqrt(0.0008 / 2 / 3), 2)) and p[1] == 1.0


def test_a_state_common_to_both_sides_of_each_launch_cancels_inside_launches():
    from collkit.analysis.launches import Timing
    rng = np.random.default_rng(5)
    states = [1.0, 4.0, 1.0, 4.0, 2.0, 1.0]           # some launches 2x and 4x slower for everything
    keys = tuple(("c", k) for k in range(len(states)))

    def timing(factor, noise, keys=keys):
        times = [tuple(s * factor * (1 + noise[k]) * rng.lognormal(0, 0.05, 40)) for k, s in enumerate(states)]
        return Timing(keys, tuple(float(np.median(t)) for t in times), tuple(times))

    # each point's median moves a few % from launch to launch besides the state (the machine
    # between one point and the next): iterations would call 3 % significant, blocks do not
    wobble = [0.03, -0.02, 0.0, 0.04, -0.03, 0.01]
    a, b = timing(1.0, [0.0] * 6), timing(1.03, wobble)
    (same,) = launches.compare_points([(a, b)])
    assert same.level == launches.WITHIN and same.p > 0.01
    _, iter_p = stats.mann_whitney([a.times[3]], [b.times[3]])
    assert iter_p[0] < 0.01                            # one launch's iterations alone would call it
    (diff,) = launches.compare_points([(a, timing(1.5, wobble))])
    assert diff.level == launches.WITHIN and diff.p < 1e-4
    # the same times as separate launches: the exact test on launch medians, 6 + 6
    c = timing(1.5, wobble, tuple(("d", k) for k in range(6)))
    (between,) = launches.compare_points([(a, c)])
    assert between.level == launches.BETWEEN and between.min_p == pytest.approx(2 / 924)
    # one shared launch: its iterations, said so
    (one,) = launches.compare_points([(Timing(keys[:1], a.medians[:1], a.times[:1]),
                                       Timing(keys[:1], c.medians[:1], c.times[:1]))])
    assert one.level == launches.ONE_LAUNCH and one.describe() == "inside one launch (iterations)"


def test_the_launch_interval_and_the_states_mark():
    # from 6 launches: order statistics (x(1), x(6) at n = 6 cover the median at 96.9 %)
    assert stats.launch_interval([5, 1, 4, 2, 6, 3]) == (1.0, 6.0)
    # below: Student's t on the logs, 2 launches: t(0.975, 1) = 12.706
    lo, hi = stats.launch_interval([100.0, 110.0])
    logs = [math.log(100), math.log(110)]
    half = 12.706 * abs(logs[1] - logs[0]) / math.sqrt(2) / math.sqrt(2)
    assert (lo, hi) == pytest.approx((math.exp(sum(logs) / 2 - half), math.exp(sum(logs) / 2 + half)))
    assert stats.launch_interval([100.0]) is None
    assert too_wide([100.0, 101.0, 99.0], 0.10) is False and too_wide([100.0, 150.0, 60.0], 0.10) is True
    assert launches.separate_states([170, 172, 760, 765]) and launches.separate_states([170, 760])
    assert not launches.separate_states([100, 110, 121, 133]) and not launches.separate_states([100, 102, 104])


# ------------------------------------------------------------------ merging a point's launches
def _rec(repeat, launch, times, status="ok", **extra):
    t = np.asarray(times, float)
    return {"id": "p", "collective": "allreduce", "backend": "collkit", "mpi": "openmpi", "algorithm": "ring",
            "ranks": 2, "count": 1, "bytes": 4, "status": status, "iterations": len(times) if status == "ok" else 0,
            "times_us": list(times), "stats_us": {"min": float(t.min()), "median": float(np.median(t)),
                                                  "max": float(t.max())} if len(times) else {},
            "algbw_GBps": 4e-6 / float(np.median(t)) if len(times) else 0.0, "launch": launch, "repeat": repeat,
            **extra}


def test_a_point_of_several_launches_reads_as_one_record():
    recs = [_rec(0, 3, [10, 11, 12]), _rec(1, 7, [20, 21, 22]), _rec(2, 9, [30, 31, 32, 33])]
    (merged,) = current(recs).values()
    r = Record.from_json(merged)
    assert r.time_median_us == 21.0 and r.launch_medians == [11.0, 21.0, 31.5] and r.launch_numbers == [3, 7, 9]
    assert r.iterations == 10 and r.time_min_us == 10 and r.time_max_us == 33
    assert "times_us" not in merged and r.launch_times[2] == [30.0, 31.0, 32.0, 33.0]
    assert merged["algbw_GBps"] == pytest.approx(4e-6 / 21.0)
    # the export's interval is the launches' (Student's t below 6 launches)
    assert stats.record_median_ci(r) == pytest.approx(stats.launch_interval([11.0, 21.0, 31.5]))
    # one launch: the record unchanged
    assert current([_rec(0, 1, [5, 6, 7])])["p"] == _rec(0, 1, [5, 6, 7])


def test_unstable_failed_and_invalid_launches():
    steady, shaky = _rec(0, 1, [10, 10, 10]), _rec(1, 2, [50, 60, 70], unstable="drift")
    merged = Record.from_json(current([steady, shaky])["p"])
    assert merged.time_median_us == 10 and merged.unstable == "" and merged.launch_numbers == [1]
    failed = _rec(1, 2, [], status="failed", reason="hung")
    merged = current([steady, failed])["p"]
    assert merged["status"] == "ok" and merged["launch_failures"][0]["reason"] == "hung"
    assert repeats.final([failed]) and not repeats.final([steady, failed])
    wrong = _rec(2, 3, [1, 1, 1], status="invalid", reason="rank 0: recvbuf element 1")
    assert current([steady, shaky, wrong])["p"]["status"] == "invalid" and repeats.final([steady, wrong])
    # a re-measure of an unstable launch stands for that launch only
    again = _rec(1, 4, [11, 11, 11], remeasure=1)
    assert Record.from_json(current([steady, shaky, again])["p"]).launch_numbers == [1, 4]


# ------------------------------------------------------------------ the schedule
class _Camp:
    """Just what Schedule asks of a campaign."""
    def __init__(self, held=None):
        self.held = held or {}

    def recorded_in(self, repeat):
        return {i for i, k in self.held if k == repeat}

    def remeasure_ids(self, repeat=None):
        return set()

    def finished_ids(self):
        return {i for i, k in self.held if self.held[(i, k)].get("status") == "failed"}

    def point_records(self):
        out = {}
        for (i, k), rec in sorted(self.held.items()):
            out.setdefault(i, []).append(rec)
        return out


def _groups(n_groups=4, n_points=3):
    groups = {}
    for g in range(n_groups):
        pts = [Point("allreduce", "collkit", "openmpi", f"alg{j}", g + 2, 1, 4, "int32", "sum", 0, False)
               for j in range(n_points)]
        groups[(f"g{g}",)] = pts
    return groups


def test_rounds_interleave_every_group_in_a_seeded_order_and_reverse_the_points():
    groups = _groups()
    sch = Schedule(groups, Measure(launches=3, max_launches=3, launch_seed=7))
    slots = list(sch.slots(_Camp()))
    assert [s.repeat for s in slots] == [0] * 4 + [1] * 4 + [2] * 4
    rounds = [[s.key for s in slots if s.repeat == r] for r in range(3)]
    assert all(sorted(r) == sorted(groups) for r in rounds) and len({tuple(r) for r in rounds}) > 1
    assert [s.key for s in Schedule(groups, Measure(launches=3, max_launches=3, launch_seed=7)).planned()] \
        == [s.key for s in slots]                                           # the same seed, the same order
    assert [s.key for s in Schedule(groups, Measure(launches=3, max_launches=3, launch_seed=8)).planned()] \
        != [s.key for s in slots]
    assert list(slots[4].points) == groups[slots[4].key][::-1] and list(slots[0].points) == groups[slots[0].key]
    # simulated: one round whatever the spec asks
    assert len(list(Schedule(groups, Measure(launches=5), simulated=True).slots(_Camp()))) == 4


def test_adaptive_rounds_take_only_the_points_whose_launches_disagree():
    groups = _groups(2, 2)
    ids = [p.id for pts in groups.values() for p in pts]
    held = {}
    for k in range(3):
        for n, pid in enumerate(ids):
            spread = 1.0 + (0.5 * k if n == 0 else 0.01 * k)     # the first point: launches 50 % apart
            held[(pid, k)] = _rec(k, 10 * k + n, [100 * spread] * 3) | {"id": pid}
    sch = Schedule(groups, Measure(launches=3, max_launches=5, launch_tolerance=0.1))
    extra = list(sch.slots(_Camp(held)))
    assert [(s.repeat, [p.id for p in s.points]) for s in extra] == [(3, [ids[0]])]
    # a failed point is not launched again
    held[(ids[1], 0)] = {"id": ids[1], "status": "failed", "repeat": 0}
    todo = sch.todo(_Camp(held), list(groups)[0], 1)
    assert ids[1] not in {p.id for p in todo}


def test_slurm_and_other_non_adaptive_launchers_run_the_fixed_rounds_only():
    sch = Schedule(_groups(1, 1), Measure(launches=2, max_launches=6), adaptive=False)
    assert sch.max_rounds == 2


def test_explicit_launches_mean_exactly_that_many():
    from collkit.campaign.spec import _measure
    assert (_measure({}).launches, _measure({}).max_launches) == (3, 5)
    assert _measure({"launches": 4}).max_launches == 4 and _measure({"launches": 2, "max_launches": 7}).max_launches == 7


# ------------------------------------------------------------------ the launch record
def test_oversubscribed_from_the_ranks_cpus():
    assert launch_info.cpu_set("0-2,5") == {0, 1, 2, 5}
    assert launch_info.oversubscribed({"hosts": ["a"] * 4, "cpus": ["0-1"] * 4}) is True      # 4 ranks, 2 cores
    assert launch_info.oversubscribed({"hosts": ["a"] * 2, "cpus": ["0", "1"]}) is False      # bound, one each
    assert launch_info.oversubscribed({"hosts": ["a"] * 2, "cpus": ["0", "0"]}) is True       # bound to one core
    assert launch_info.oversubscribed({"hosts": ["a", "b"], "cpus": ["0", "0"]}) is False     # two hosts
    assert launch_info.oversubscribed({"hosts": ["a"], "cpus": [""]}) is None                 # unknown (simulated)
    assert launch_info.oversubscribed({"hosts": ["a"]}) is None


# ------------------------------------------------------------------ real campaigns
DELAY_SPEC = """
name = "delay"
collectives = ["allreduce"]
sizes = ["1KiB"]
ranks = [2]
mpi = ["openmpi"]
[backends]
mpi = ["default", "ring", "recursive_doubling"]
# a setting of its own puts the forced algorithms in their own launches, apart from
# the default's: every comparison of this summary is between launches
[parameters.openmpi]
coll_tuned_allreduce_algorithm_segmentsize = [0]
[measure]
warmup = 1
min_iterations = 10
max_iterations = 40
time_budget_s = 0.002
launches = 6
"""
DELAY_US = 300


def _delayed_run(tmp_path, name, delay):
    (tmp_path / "spec.toml").write_text(DELAY_SPEC)
    out = collkit("run", "spec.toml", "--out", name, cwd=tmp_path,
                  env={"COLLKIT_BENCH_TEST_SLOW_LAUNCH": delay})
    assert out.returncode == 0, out.stdout + out.stderr
    camp = tmp_path / name
    summary = results.summarise([Record.from_json(r) for r in current(
        [json.loads(line) for line in (camp / "records.jsonl").read_text().splitlines()]).values()])
    return out, camp, summary


def _fnv1a(h: int, data: bytes) -> int:
    for c in data:
        h = ((h ^ c) * 1099511628211) & (2 ** 64 - 1)
    return h


def _seed_slowing(default_slow: int, forced_slow: int) -> str:
    """The first seed "sN" for which COLLKIT_BENCH_TEST_SLOW_LAUNCH at fraction 0.5
    slows that many of the default's and of the forced group's launches: the draw
    (bench/slow_launch.c: FNV-1a of the seed, then of the points file, below 2^-1 of
    2^53) computed over the points files this spec's launches will get."""
    from collkit.campaign import plan, platform as platforms, spec as specs
    from collkit.campaign.store import points_text
    from collkit.launch.runner import interleaved
    from collkit.library import registry
    sp = specs.parse(DELAY_SPEC)
    schedule = Schedule(interleaved(plan.build(sp, platforms.for_campaign(None, ""), registry.load()).points),
                        sp.measure)
    files = [("default" if any(p.algorithm == "default" for p in slot.points) else "forced",
              points_text(list(slot.points), sp.measure, slot.repeat).encode()) for slot in schedule.planned()]
    for n in range(1, 1000):
        base = _fnv1a(14695981039346656037, f"s{n}".encode())
        slow = {"default": 0, "forced": 0}
        for group, text in files:
            slow[group] += (_fnv1a(base, text) >> 11) / 2.0 ** 53 < 0.5
        if (slow["default"], slow["forced"]) == (default_slow, forced_slow):
            return f"s{n}"
    raise AssertionError("no seed draws that split")


def _slow_launches(camp: Path) -> dict[int, bool]:
    """Which launches of the rounds the test hook slowed, read back from the records
    (every point's median is above the injected delay in a slow launch and far below
    it otherwise). A launch that measures an unstable point again ("remeasure", a
    drift mark under load: seen once in make test) is the runner's own, not a round's:
    its draw comes from its own points file, so it is not counted."""
    out = {}
    for line in (camp / "records.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("remeasure"):
            continue
        out.setdefault(r["launch"], []).append(r["stats_us"]["median"] > DELAY_US)
    return {n: all(v) for n, v in out.items() if all(v) or not any(v)}


@needs.openmpi
def test_launches_slowed_at_random_are_no_difference(tmp_path):
    # Half the launches (drawn from the seed and the launch's points file: independent
    # of how fast what runs in it is) add 300 us to every call. The seed is the first
    # whose draws slow 5 of the default's 6 launches and 2 of the forced algorithms' 6: their
    # estimates are 150x apart, and a campaign of one launch a point whose default drew
    # a slow launch and its best a fast one calls that significant on the iterations.
    # The launch test (5 slow of 6 against 2 of 6: p near 0.2) calls no difference: the
    # slow launches are the machine's, not the algorithms'.
    out, camp, summary = _delayed_run(tmp_path, "random", f"0.5:{DELAY_US}:{_seed_slowing(5, 2)}")
    slow = _slow_launches(camp)
    assert len(slow) == 12 and sum(slow.values()) == 7                # the hook acted, as drawn
    for s in summary:
        assert s.best != "openmpi:default" and s.default_us > DELAY_US > s.best_us, s
        assert s.level == launches.BETWEEN and s.launches == (6, 6) and not s.significant and s.tie
        assert s.spread > 10 and s.states           # 2 us against 300 us
    assert "few" not in out.stdout and "tie" in out.stdout
    # what one round alone (a campaign of one launch a point) would have said
    recs = [json.loads(line) for line in (camp / "records.jsonl").read_text().splitlines()]
    best = summary[0].best.split(":")[1].split("[")[0]
    by = {(r["algorithm"], r["repeat"]): r for r in recs if r["bytes"] == 1024}
    worst = min(stats.mann_whitney([by[(best, k)]["times_us"]], [by[("default", k)]["times_us"]])[1][0]
                for k in range(6) if by[("default", k)]["stats_us"]["median"] > 10 * by[(best, k)]["stats_us"]["median"])
    assert worst < 1e-4      # far below 0.01 after Holm over the table's 2 comparisons


@needs.openmpi
def test_the_same_delay_tied_to_the_default_is_called(tmp_path):
    out, camp, summary = _delayed_run(tmp_path, "tied", f"1:{DELAY_US}:s3@allreduce/mpi:default")
    assert len(summary) == 1
    for s in summary:
        assert s.significant and s.level == launches.BETWEEN and s.launches == (6, 6), s
        assert s.default_us > DELAY_US > s.best_us and s.best != "openmpi:default"
    assert "x" in out.stdout.split("default/best")[1].splitlines()[2]      # a ratio, not "tie"


OVERSUB_SPEC = """
name = "oversub"
collectives = ["allreduce"]
sizes = ["64B"]
ranks = [{ranks}]
mpi = ["openmpi"]
[backends]
mpi = ["default"]
collkit = ["ring"]
[measure]
min_iterations = 5
time_budget_s = 0
launches = 2
"""


@needs.openmpi
def test_more_ranks_than_cores_is_marked_in_the_summary_itself(tmp_path):
    ranks = machine.cores() + 1          # one rank more than this machine has cores
    (tmp_path / "spec.toml").write_text(OVERSUB_SPEC.format(ranks=ranks))
    out = collkit("run", "spec.toml", "--out", "c", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    launch = json.loads((tmp_path / "c" / "launches.jsonl").read_text().splitlines()[0])
    assert len(launch["cpus"]) == ranks and all(launch["cpus"])
    recs = [json.loads(line) for line in (tmp_path / "c" / "records.jsonl").read_text().splitlines()]
    assert recs and all(r["oversubscribed"] is True for r in recs)
    row = next(line for line in out.stdout.splitlines() if "collkit:ring" in line or "openmpi:default" in line)
    assert "oversub" in row and "oversub: more ranks than cores on a host" in out.stdout
