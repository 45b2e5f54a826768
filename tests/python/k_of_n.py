"""The one way a test checks a timed bound: k passes out of at most n
independent trials, with the false-failure rate that rule has stated where it
is used (docs/testing.md, "Timed checks").

A timed bound on this machine holds in most runs, not all: another test file
shares the cores, a rank is descheduled. Asking for 1 of n is a retry until
it passes (a bound that never holds still passes once in a while); asking for
n of n fails a correct program now and then. k of n sits between, and its
price is a number: with a trial missing with probability p_miss when the
program is right, the test fails wrongly with probability P(Binomial(n,
p_miss) > n - k). Trials stop as soon as the verdict is decided (k passes, or
n - k + 1 misses): the verdict is the same as running all n."""

from __future__ import annotations

from math import comb
from typing import Callable


def false_failure_rate(k: int, n: int, p_miss: float) -> float:
    """P(fewer than k of n trials pass) where each misses with p_miss."""
    return sum(comb(n, m) * p_miss**m * (1 - p_miss)**(n - m) for m in range(n - k + 1, n + 1))


def k_of_n(trial: Callable[[int], tuple[bool, str]], k: int, n: int) -> list[str]:
    """Run trial(i) for i = 0, 1, ... until k have passed or n - k + 1 have
    missed; AssertionError (every trial's account) if fewer than k passed.
    trial returns (passed, what it saw). Returns the accounts of the trials run."""
    if not 1 <= k <= n:
        raise ValueError(f"k of n needs 1 <= k <= n, got {k} of {n}")
    seen: list[str] = []
    passed = missed = 0
    for i in range(n):
        ok, what = trial(i)
        seen.append(f"trial {i + 1}: {'pass' if ok else 'miss'}: {what}")
        passed += ok
        missed += not ok
        if passed == k or missed > n - k:
            break
    assert passed >= k, f"{passed} of {len(seen)} trials passed, {k} of {n} needed:\n" + "\n".join(seen)
    return seen
