"""tests/python/k_of_n.py: the rule timed checks use."""

from __future__ import annotations

import pytest

from k_of_n import false_failure_rate, k_of_n


def test_false_failure_rate_by_hand():
    # 2 of 4 with a miss in 6: fail when 3 or 4 miss: 4 * 5/6^4 + 1/6^4 = 21/1296
    assert false_failure_rate(2, 4, 1 / 6) == pytest.approx(21 / 1296)
    # 2 of 5 with a miss in 4: fail when 4 or 5 miss: (5 * 3 + 1) / 4^5
    assert false_failure_rate(2, 5, 1 / 4) == pytest.approx(16 / 1024)
    assert false_failure_rate(3, 3, 0.0) == 0.0 and false_failure_rate(1, 1, 1.0) == 1.0


def test_k_passes_stop_the_trials():
    ran = []
    seen = k_of_n(lambda i: (ran.append(i) or True, f"run {i}"), 2, 4)
    assert ran == [0, 1] and len(seen) == 2


def test_too_few_passes_fail_with_every_account():
    outcomes = [False, True, False, False, True]
    ran = []
    with pytest.raises(AssertionError) as e:
        k_of_n(lambda i: (ran.append(i) or outcomes[i], f"{i} seen"), 2, 4)
    assert ran == [0, 1, 2, 3]                  # the third miss decides; the fifth outcome is never asked
    assert "1 of 4 trials passed, 2 of 4 needed" in str(e.value) and "0 seen" in str(e.value)


def test_a_miss_then_k_passes_is_a_pass():
    outcomes = [False, True, True]
    assert len(k_of_n(lambda i: (outcomes[i], ""), 2, 3)) == 3


@pytest.mark.parametrize("k,n", [(0, 3), (4, 3)])
def test_a_rule_that_cannot_be_met_or_cannot_fail_is_refused(k, n):
    with pytest.raises(ValueError):
        k_of_n(lambda i: (True, ""), k, n)
