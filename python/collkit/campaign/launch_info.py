"""What a launch record (collkit-bench's first line, docs/bench-protocol.md) says of
the machine the launch ran on.

`oversubscribed`: more ranks on a host than CPUs those ranks may run on together
(each rank's CPU affinity, `cpus`; a rank bound to one core counts that core, ranks
sharing a core count it once). Such timings measure a machine that takes turns, not
the collective: the summary marks them (issue #54: the quickstart's 4 and 8 ranks on
2 cores). None where the record cannot tell (no `cpus`, an empty list: a simulated
launch, a C library without affinity)."""

from __future__ import annotations


def cpu_set(text: str) -> set[int] | None:
    """'0-3,8' -> {0, 1, 2, 3, 8}; None for '' or anything else."""
    if not isinstance(text, str) or not text:
        return None
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def oversubscribed(launch: dict) -> bool | None:
    hosts, cpus = launch.get("hosts"), launch.get("cpus")
    if not isinstance(hosts, list) or not isinstance(cpus, list) or len(hosts) != len(cpus) or not hosts:
        return None
    by_host: dict[str, list[set[int]]] = {}
    for host, text in zip(hosts, cpus):
        allowed = cpu_set(text)
        if allowed is None:
            return None
        by_host.setdefault(str(host), []).append(allowed)
    return any(len(ranks) > len(set().union(*ranks)) for ranks in by_host.values())
