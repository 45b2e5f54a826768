"""The machine model: nodes, the groups they sit in, and their switches.

A *group* is the unit whose boundary the traffic analysis counts crossings of:
a dragonfly group (Leonardo's CELL) or a fat-tree pod. A *switch* is the
node's leaf switch, when the map says. The same model will describe machines
for SimGrid platforms, so it carries names, not just numbers.

Host names are looked up after :func:`normalise_host`: lower case, domain
stripped (``LRDN0063.leonardo.local`` -> ``lrdn0063``). Each map reader says
which name it gives its nodes (the Leonardo map: ``lrdn`` + the NODE field)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def normalise_host(host: str) -> str:
    """The key a host is looked up by: trimmed, lower case, without its domain."""
    return host.strip().split(".", 1)[0].lower()


class UnknownHost(LookupError):
    """A host name the map does not list."""

    def __init__(self, host: str, position: int):
        super().__init__(host)
        self.host = host
        self.position = position


@dataclass(frozen=True)
class Node:
    name: str                 # normalised host name
    group: str                # dragonfly group / fat-tree pod
    switch: str | None = None  # leaf switch, when the map says
    rack: str | None = None


@dataclass(frozen=True)
class Topology:
    """Nodes in map order, with integer ids for their groups and switches.

    ``node_group[i]`` is the index into ``group_names`` of node i's group, and
    likewise ``node_switch`` (-1 where a node has no switch)."""

    nodes: tuple[Node, ...]
    source: str = ""
    kind: str = "generic"  # "dragonfly" for maps that name dragonfly groups
    group_names: tuple[str, ...] = field(init=False)
    switch_names: tuple[str, ...] = field(init=False)
    node_group: np.ndarray = field(init=False, repr=False)
    node_switch: np.ndarray = field(init=False, repr=False)
    _index: dict[str, int] = field(init=False, repr=False)
    _memo: dict[str, int] = field(init=False, repr=False, compare=False)  # names as written

    def __post_init__(self) -> None:
        index: dict[str, int] = {}
        groups: dict[str, int] = {}
        switches: dict[str, int] = {}
        g = np.empty(len(self.nodes), dtype=np.int32)
        s = np.full(len(self.nodes), -1, dtype=np.int32)
        for i, node in enumerate(self.nodes):
            if node.name in index:
                raise ValueError(f"node {node.name} is listed twice")
            index[node.name] = i
            g[i] = groups.setdefault(node.group, len(groups))
            if node.switch is not None:
                s[i] = switches.setdefault(node.switch, len(switches))
        g.setflags(write=False)
        s.setflags(write=False)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_memo", dict(index))
        object.__setattr__(self, "group_names", tuple(groups))
        object.__setattr__(self, "switch_names", tuple(switches))
        object.__setattr__(self, "node_group", g)
        object.__setattr__(self, "node_switch", s)

    @classmethod
    def single_group(cls, count: int, prefix: str = "node") -> "Topology":
        """``count`` nodes named prefix0, prefix1, ... in one group: the machine
        assumed when no map is given."""
        return cls(tuple(Node(f"{prefix}{i}", "0") for i in range(count)), source="(one group)")

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def groups(self) -> int:
        return len(self.group_names)

    def find(self, host: str) -> int | None:
        """Index of a host (any case, with or without domain), or None."""
        return self._index.get(normalise_host(host))

    def lookup(self, hosts: list[str]) -> np.ndarray:
        """Node indices of host names; UnknownHost names the first unknown one."""
        memo = self._memo
        try:
            # Fast path: every name seen before (jobs of one machine share names).
            return np.fromiter(map(memo.__getitem__, hosts), dtype=np.int32, count=len(hosts))
        except KeyError:
            pass
        index = self._index
        out = np.empty(len(hosts), dtype=np.int32)
        for i, host in enumerate(hosts):
            j = memo.get(host)
            if j is None:
                j = index.get(normalise_host(host))
                if j is None:
                    raise UnknownHost(host.strip(), i)
                if len(memo) < 1 << 20:
                    memo[host] = j
            out[i] = j
        return out
