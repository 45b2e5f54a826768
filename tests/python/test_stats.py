"""analysis/stats.py (median interval, Mann-Whitney U, Holm, bootstrap), the export's
interval columns and the summary's significance and warnings (analysis/results.py)."""

import json
import math

import numpy as np
import pytest

from collkit.analysis import results, stats
from collkit.campaign.record import Record


# ------------------------------------------------------------------ median interval
def test_median_interval_ranks_follow_the_binomial_table():
    assert stats.median_ci_ranks(5) is None            # 1 - 2/32 < 95 %: no interval
    assert stats.median_ci_ranks(6) == (0, 5)          # 1 - 2/64 = 96.9 %
    assert stats.median_ci_ranks(50) == (17, 32)       # ranks 18 and 33, the textbook pair
    lo, hi = stats.median_ci_ranks(1000)
    assert hi == 999 - lo and 468 <= lo <= 470


def test_median_interval_covers_the_true_median_in_most_trials():
    rng = np.random.default_rng(7)
    true_median = math.exp(0.0)                        # lognormal(0, 0.5): median e^0 = 1
    for n in (10, 31, 200):
        trials = 600
        hits = 0
        for _ in range(trials):
            lo, hi = stats.median_ci(rng.lognormal(0.0, 0.5, n))
            hits += lo <= true_median <= hi
        # the order-statistic interval is conservative: coverage >= 95 % up to sampling error
        assert 0.93 <= hits / trials <= 0.999, (n, hits / trials)


def test_median_interval_of_too_few_values_is_none():
    assert stats.median_ci([1.0, 2.0, 3.0]) is None
    assert stats.median_ci([5.0, 1.0, 4.0, 2.0, 3.0, 6.0]) == (1.0, 6.0)


# ------------------------------------------------------------------ Mann-Whitney U
def test_mann_whitney_against_hand_computed_examples():
    # x = 1,2,3 vs y = 4,5,6: U = 0, mean 4.5, var 3*3*7/12 = 5.25,
    # z = (4.5 - 0.5) / sqrt(5.25) = 1.7457, p = erfc(z / sqrt 2) = 0.0809
    u, p = stats.mann_whitney([[1, 2, 3]], [[4, 5, 6]])
    assert u[0] == 0 and p[0] == pytest.approx(0.080856, abs=1e-5)
    # ties: x = 1,2,2,3 vs y = 2,3,4,4,5; ranks 1 | 3 3 3 | 5.5 5.5 | 7.5 7.5 | 9,
    # R_x = 12.5, U = 2.5; tie groups 3,2,2: sum t^3-t = 36; var = 20/12 (10 - 36/72) = 15.833,
    # z = (10 - 2.5 - 0.5) / 3.979 = 1.759, p = 0.0785
    u, p = stats.mann_whitney([[1, 2, 2, 3]], [[2, 3, 4, 4, 5]])
    assert u[0] == 2.5 and p[0] == pytest.approx(0.078546, abs=1e-5)


def test_mann_whitney_is_symmetric_and_handles_degenerate_samples():
    rng = np.random.default_rng(1)
    x, y = list(rng.random(12)), list(rng.random(9) + 0.3)
    (ux, uy), (px, py) = [np.concatenate(v) for v in zip(stats.mann_whitney([x], [y]),
                                                           stats.mann_whitney([y], [x]))]
    assert ux + uy == pytest.approx(12 * 9) and px == pytest.approx(py)
    u, p = stats.mann_whitney([[5.0, 5.0], [], [1.0]], [[5.0, 5.0, 5.0], [1.0], [2.0]])
    assert p[0] == 1.0 and p[1] == 1.0 and math.isnan(u[1]) and u[2] == 0.0


def test_mann_whitney_of_many_pairs_equals_one_at_a_time():
    rng = np.random.default_rng(3)
    xs = [list(np.round(rng.random(int(n)), 2)) for n in rng.integers(1, 40, 30)]
    ys = [list(np.round(rng.random(int(n)) + 0.1, 2)) for n in rng.integers(1, 40, 30)]
    u_all, p_all = stats.mann_whitney(xs, ys)
    for i in range(30):
        u, p = stats.mann_whitney([xs[i]], [ys[i]])
        assert (u_all[i], p_all[i]) == pytest.approx((u[0], p[0]))
    # equal lengths take the 2-D path: same answers
    eq = [x[:1] * 5 + x for x in xs]
    u1, p1 = stats.mann_whitney(eq[:10], eq[10:20])
    u2, p2 = stats.mann_whitney(eq[:10] + [[1.0]], eq[10:20] + [[2.0, 3.0]])
    assert np.allclose(u1, u2[:10]) and np.allclose(p1, p2[:10])


def _signed_rank_brute(values):
    """The same p-value by enumerating every sign pattern (the definition)."""
    import itertools
    x = [v for v in values if v != 0]
    mags = sorted(abs(v) for v in x)
    rank = {m: (mags.index(m) + 1 + len(mags) - mags[::-1].index(m)) / 2 for m in mags}
    ranks = [rank[abs(v)] for v in x]
    centre = sum(ranks) / 2
    dev = abs(sum(r for r, v in zip(ranks, x) if v > 0) - centre)
    hits = sum(1 for signs in itertools.product((0, 1), repeat=len(x))
               if abs(sum(r for r, s in zip(ranks, signs) if s) - centre) >= dev - 1e-9)
    return hits / 2 ** len(x)


@pytest.mark.parametrize("values", [
    [0.3, 0.1, 0.2, 0.5, 0.4, 0.6, 0.8, 0.7],           # all positive: 2 / 2^8
    [1, -2, 3, -4, 5, -6, 7, -8],
    [0.1, 0.1, -0.1, 0.2, 0.2, 0.3, -0.3, 0.4, 0.0],      # ties and a zero
    [-0.01, -0.02, 0.5, -0.03, -0.04, -0.05],
])
def test_signed_rank_is_exact(values):
    assert stats.signed_rank_p(values) == pytest.approx(_signed_rank_brute(values))


def test_signed_rank_degenerate_and_bad_input():
    assert stats.signed_rank_p([]) == 1.0
    assert stats.signed_rank_p([0.0, 0.0]) == 1.0
    assert stats.signed_rank_p([2.0] * 8) == pytest.approx(2 / 256)
    with pytest.raises(ValueError):
        stats.signed_rank_p([1.0, math.nan])


def test_holm_adjusts_step_down():
    assert list(stats.holm([0.01, 0.04, 0.03, 0.005])) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert list(stats.holm([])) == []


# ------------------------------------------------------------------ bootstrap
@pytest.mark.parametrize("n", [1, 2, 7, 8, 50, 51])
def test_resampled_medians_have_the_distribution_of_resampling(n):
    rng = np.random.default_rng(11)
    x = np.sort(rng.lognormal(size=n))
    drawn = stats.bootstrap_medians(x[None, :], 100_000, np.random.default_rng(5))[0]
    brute = np.median(x[rng.integers(0, n, size=(100_000, n))], axis=1)
    assert drawn.mean() == pytest.approx(brute.mean(), rel=0.01)
    assert drawn.std() == pytest.approx(brute.std(), rel=0.03, abs=1e-9)
    for q in (0.05, 0.5, 0.95):
        assert np.quantile(drawn, q) == pytest.approx(np.quantile(brute, q), rel=0.02)


def test_bootstrap_ratio_interval_is_deterministic_and_sensible():
    rng = np.random.default_rng(2)
    base = [list(rng.lognormal(0, 0.1, 40)) for _ in range(20)]
    slow = [list(np.array(b) * 2.0) for b in base]
    lo, hi = stats.bootstrap_median_ratio(base, slow)
    assert ((lo < 2.0) & (hi > 2.0)).all() and (lo > 1.7).all() and (hi < 2.3).all()
    same = [list(rng.lognormal(0, 0.1, 40)) for _ in range(20)]
    lo, hi = stats.bootstrap_median_ratio(base, same)
    assert ((lo < 1) & (hi > 1)).mean() >= 0.8
    assert np.array_equal(stats.bootstrap_median_ratio(base, same)[0], lo)
    lo, hi = stats.bootstrap_median_ratio([[], [1.0]], [[1.0], [2.0]])
    assert math.isnan(lo[0]) and (lo[1], hi[1]) == (2.0, 2.0)


# ------------------------------------------------------------------ records and the export
def rec(algorithm, times, backend="collkit", status="ok", ranks=4, size=1024, implausible="", **stats_us):
    t = np.asarray(times, dtype=float)
    st = {"min": float(t.min()), "median": float(np.median(t)), "max": float(t.max()),
          "p5": float(np.percentile(t, 5)), "p95": float(np.percentile(t, 95))} if len(t) else {}
    st.update(stats_us)
    return Record.from_json({
        "id": f"{backend}-{algorithm}-{ranks}-{size}", "collective": "allreduce", "backend": backend,
        "mpi": "openmpi", "algorithm": algorithm, "ranks": ranks, "count": size // 4, "bytes": size,
        "dtype": "int32", "op": "sum", "root": 0, "in_place": False, "status": status, "reason": "",
        "iterations": len(t), "times_us": [float(v) for v in t], "stats_us": st, "implausible": implausible})


def test_export_appends_the_median_interval_columns(tmp_path):
    times = list(np.linspace(10.0, 20.0, 50))
    rows = [rec("ring", times), rec("bine", [1.0, 2.0, 3.0]), rec("x", [], status="failed")]
    text = results.to_csv(rows)
    header = text.splitlines()[0].split(",")
    assert tuple(header[:len(results.COLUMNS)]) == results.COLUMNS
    assert header[-4:] == ["time_median_ci_low_us", "time_median_ci_high_us", "implausible", "unstable"]
    by = {r["algorithm"]: r for r in json.loads(results.to_json(rows))}
    lo, hi = stats.median_ci(times)
    assert (by["ring"]["time_median_ci_low_us"], by["ring"]["time_median_ci_high_us"]) == (lo, hi)
    assert lo < by["ring"]["time_median_us"] < hi
    assert by["bine"]["time_median_ci_low_us"] is None and by["x"]["time_median_ci_high_us"] is None
    assert stats.record_median_ci(rows[0]) == (lo, hi)
    (tmp_path / "r.csv").write_text(text)
    back = results.read_csv(tmp_path / "r.csv")
    assert results.to_csv(back) == text


# ------------------------------------------------------------------ summary
def test_summary_shows_a_ratio_only_for_a_significant_difference():
    rng = np.random.default_rng(4)
    fast = rng.lognormal(np.log(10), 0.05, 40)
    rows = [rec("ring", fast, size=1024), rec("default", fast * 3, backend="mpi", size=1024),
            rec("ring", rng.lognormal(np.log(10), 0.05, 40), size=2048),
            rec("default", rng.lognormal(np.log(10), 0.05, 40), backend="mpi", size=2048)]
    lines = {s.bytes: s for s in results.summarise(rows)}
    assert lines[1024].significant and lines[1024].ratio == pytest.approx(3.0, rel=0.1)
    assert lines[2048].tie and lines[2048].ratio is None
    table = results.summary_table(list(lines.values()))
    row_1k, row_2k = [ln for ln in table.splitlines() if "collkit:ring" in ln]
    # ranks size best best_us default_us default/best spread note n: one launch, no spread
    assert row_1k.split()[-3].endswith("x") and row_1k.split()[-2] == "-"
    assert row_2k.split()[-4:-1] == ["-", "-", "tie"]
    assert "tie: best not significantly faster than the default" in table


def test_summary_default_as_best_and_missing_default():
    rng = np.random.default_rng(5)
    rows = [rec("ring", rng.lognormal(np.log(20), 0.05, 30)),
            rec("default", rng.lognormal(np.log(10), 0.05, 30), backend="mpi"),
            rec("bine", rng.lognormal(np.log(10), 0.05, 30), size=64)]
    lines = {s.bytes: s for s in results.summarise(rows)}
    assert lines[1024].ratio == 1.0 and not lines[1024].compared
    assert lines[64].ratio is None and not lines[64].tie
    assert "tie" not in results.summary_table(list(lines.values()))


def test_summary_footer_warns_once_per_kind_with_a_count_and_an_example():
    rng = np.random.default_rng(6)
    rows = [rec("ring", rng.lognormal(np.log(10), 0.05, 5)),                     # few iterations
            rec("bine", np.concatenate([np.full(20, 10.0), np.full(20, 30.0)])),  # p95/p5 = 3
            rec("swing", rng.lognormal(np.log(0.5), 0.05, 30)),                   # below 1 us
            rec("rd", rng.lognormal(np.log(0.5), 0.05, 30), size=64)]
    footer = results.checks_footer(results.summarise(rows))
    assert len(footer) == 3
    assert footer[0].startswith("warning: 1 point with fewer than 10 iterations, e.g. collkit:ring allreduce p=4")
    assert "2 points with a median below 1 us" in footer[2]
    assert "large spread" in footer[1]
    assert results.checks_footer(results.summarise([rec("ring", np.linspace(10, 11, 30))])) == []


def test_an_implausible_point_is_flagged_and_never_the_best():
    """An artificial too-fast record (below the launch's one-message floor, as
    collkit-bench flags it) is named in the export and the footer, and the
    summary picks the fastest plausible algorithm instead."""
    why = "median 0.5 us below the one-message floor 1.7 us measured in this launch"
    fast = rec("knomial", [0.5] * 30, backend="mpi", implausible=why)
    real = rec("ring", list(np.linspace(9.0, 11.0, 30)))
    default = rec("default", list(np.linspace(19.0, 21.0, 30)), backend="mpi")
    lines = results.summarise([fast, real, default])
    assert len(lines) == 1 and lines[0].best == real.label and lines[0].best_us == real.time_median_us
    table = results.summary_table(lines)
    assert "one-message floor" in table and "knomial" in table.split("warning")[-1]
    by = {r["algorithm"]: r for r in json.loads(results.to_json([fast, real, default]))}
    assert by["knomial"]["implausible"] == why and by["ring"]["implausible"] == ""


def test_an_implausible_default_gets_no_ratio():
    why = "median 1.7 us below the one-message floor 9.0 us measured in this launch"
    default = rec("default", [1.7] * 30, backend="mpi", implausible=why)
    real = rec("tree", list(np.linspace(10.0, 12.0, 30)), backend="mpi")
    lines = results.summarise([default, real])
    assert lines[0].best == real.label and lines[0].default_implausible
    table = results.summary_table(lines)
    assert table.splitlines()[0] == "allreduce, openmpi"    # a section per collective and library
    row = table.splitlines()[3]
    # no word where the ratio belongs: the note column says why, the footer explains it
    assert row.split()[-3:-1] == ["-", "floor"]
    assert "floor: the default's median is below the one-message floor" in table
