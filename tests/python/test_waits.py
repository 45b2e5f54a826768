"""The one rule that splits a call's time into waiting and working
(collkit/program/waits.py), on calls whose answer is known by hand."""

from __future__ import annotations

import pytest

from collkit.program import waits


def test_an_allreduce_waits_for_the_last_arrival():
    # rank 2 arrives 300 us after rank 0; all leave 50 us after it arrived
    a = [0.0, 100e-6, 300e-6]
    e = [350e-6, 350e-6, 350e-6]
    wait, work = waits.split("allreduce", None, a, e)
    assert wait == pytest.approx([300e-6, 200e-6, 0.0])
    assert work == pytest.approx([50e-6, 50e-6, 50e-6])
    assert waits.call_working("allreduce", None, a, e) == pytest.approx(50e-6)


def test_waiting_plus_working_is_the_time_in_the_call_and_neither_is_negative():
    # rank 0 left before the last arrival (possible for a rooted one): all waiting
    a = [0.0, 10e-6, 500e-6]
    e = [20e-6, 600e-6, 550e-6]
    for coll, root in (("allreduce", None), ("bcast", 0), ("reduce", 1), ("scan", None), ("gatherv", 2)):
        wait, work = waits.split(coll, root, a, e)
        for r in range(3):
            assert wait[r] >= 0 and work[r] >= 0
            assert wait[r] + work[r] == pytest.approx(e[r] - a[r])


def test_a_bcast_non_root_waits_for_the_root_only():
    a = [200e-6, 0.0, 400e-6]          # root 0 arrives at 200 us, rank 2 late at 400 us
    e = [210e-6, 250e-6, 420e-6]
    wait, work = waits.split("bcast", 0, a, e)
    assert wait == pytest.approx([0.0, 200e-6, 0.0])   # rank 1 waited for the root, not for rank 2
    assert work == pytest.approx([10e-6, 50e-6, 20e-6])


def test_a_reduce_root_waits_for_everyone_a_non_root_for_nobody():
    a = [0.0, 100e-6, 300e-6]
    e = [330e-6, 120e-6, 310e-6]
    wait, work = waits.split("reduce", 0, a, e)
    assert wait == pytest.approx([300e-6, 0.0, 0.0])
    assert work == pytest.approx([30e-6, 20e-6, 10e-6])


def test_a_scan_waits_for_its_prefix():
    a = [0.0, 300e-6, 100e-6]
    e = [310e-6, 320e-6, 330e-6]
    wait, _ = waits.split("scan", None, a, e)
    assert wait == pytest.approx([0.0, 0.0, 200e-6])    # rank 2 waits for rank 1; rank 1 for nobody later


def test_an_unknown_collective_is_refused():
    with pytest.raises(ValueError):
        waits.split("neighbor_allgather", None, [0.0], [1.0])
