"""One dependence rule (issue #50): the autotuner's working time of a call
(preload/working_rule.c: each rank's values reduced by maximum, replayed by
`collkit-rules --working`) equals program/waits.py's `call_working` for the
same arrivals and exits, for every collective the preload runs, rank counts
from 1 and every root; hand-worked calls pin both to the rule itself."""

from __future__ import annotations

import random
import subprocess

import pytest

from collkit.mpis import known
from collkit.program import waits

COLLECTIVES = ("bcast", "reduce", "gather", "scatter", "allgather", "reduce_scatter", "allreduce", "alltoall")


def _tool(lines: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(known.any_build("rules")), "--working"], input="".join(f"{ln}\n" for ln in lines),
                          capture_output=True, text=True, timeout=60)


def _agreed(lines: list[str]) -> list[tuple[float, float]]:
    r = _tool(lines)
    assert r.returncode == 0, r.stderr
    return [(float(w), float(t)) for w, t in (ln.split() for ln in r.stdout.splitlines())]


def _line(coll: str, root: int | None, arrivals, exits) -> str:
    pairs = " ".join(f"{a!r} {e!r}" for a, e in zip(arrivals, exits))
    return f"{coll} {-1 if root is None else root} {pairs}"


# (collective, root, arrivals, exits, working worked out by hand)
BY_HAND = [
    ("allreduce", None, [0.0, 0.5], [1.0, 2.0], 1.5),         # last exit 2 minus last arrival 0.5
    ("bcast", 0, [1.0, 0.0], [2.0, 3.0], 2.0),                # rank 1 waits for the root until 1, works to 3
    ("bcast", 1, [1.0, 0.0], [2.0, 3.0], 3.0),                # the root arrived first: rank 0 works 1 to 2, root 0 to 3
    ("reduce", 1, [0.0, 1.0], [5.0, 2.0], 5.0),               # a non-root only gives: all its 5 s are working
    ("gather", 0, [0.0, 3.0, 1.0], [4.0, 3.5, 1.5], 1.0),     # the root works from the last arrival 3 to 4
    ("alltoall", None, [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], 1.0),
    ("allgather", None, [0.0, 2.0], [2.5, 2.5], 0.5),
    ("scatter", 2, [0.0, 0.0, 2.0], [2.1, 2.9, 2.2], 0.9),    # rank 1 waits for the root until 2, works to 2.9
]


@pytest.mark.parametrize("coll, root, arrivals, exits, want", BY_HAND)
def test_both_sides_give_the_hand_worked_working_time(coll, root, arrivals, exits, want):
    assert waits.call_working(coll, root, arrivals, exits) == pytest.approx(want)
    (working, whole), = _agreed([_line(coll, root, arrivals, exits)])
    assert working == pytest.approx(want)
    assert whole == pytest.approx(max(e - a for a, e in zip(arrivals, exits)))


def test_the_reduction_agrees_with_waits_on_random_calls():
    rng = random.Random(50)
    calls = []
    for coll in COLLECTIVES:
        for p in (1, 2, 3, 5, 8, 13):
            roots = range(p) if coll in waits.FROM_ROOT + waits.TO_ROOT else [None]
            for root in roots:
                for _ in range(6):
                    # arrivals spread like a skewed program's, some ranks at once; exits after
                    a = [rng.choice([0.0, 1e-6 * rng.expovariate(0.01)]) + 1e5 for _ in range(p)]
                    e = [x + rng.choice([0.0, 1e-6 * rng.expovariate(0.05)]) for x in a]
                    if rng.random() < 0.5:   # a late rank: the others' exits wait for it
                        late = max(a) + 1e-6 * rng.expovariate(0.02)
                        e = [max(x, late) + 1e-7 * rng.random() for x in e]
                    calls.append((coll, root, a, e))
    agreed = _agreed([_line(*c) for c in calls])
    assert len(agreed) == len(calls)
    for (coll, root, a, e), (working, whole) in zip(calls, agreed):
        assert working == pytest.approx(waits.call_working(coll, root, a, e), abs=1e-12), (coll, root, a, e)
        assert whole == pytest.approx(max(x - y for y, x in zip(a, e)), abs=1e-12)
        assert 0.0 <= working <= whole + 1e-12


@pytest.mark.parametrize("line", ["allreduce 0 0 1", "bcast -1 0 1", "bcast 2 0 1 0 1", "allreduce -1 0",
                                  "allreduce -1 0 nan", "scan -1 0 1", "allreduce -1 0 1 2"])
def test_a_bad_call_line_is_refused_with_one_line(line):
    r = _tool([line])
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and "line 1: expected COLLECTIVE ROOT" in r.stderr
