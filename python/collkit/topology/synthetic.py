"""Synthetic machines: fat trees, dragonflies and tori described by the numbers
people use for them, in a form that both the traffic analysis and the SimGrid
platform generator read (docs/topologies.md explains every choice).

A :class:`Machine` is one network shape with its link speeds; the presets in
:data:`PRESETS` are modelled on LUMI, Leonardo, MareNostrum 5 and Fugaku.
``machine.instance(nodes)`` is the smallest piece of the same shape that holds
``nodes`` nodes (whole groups, links unchanged): a 64-node simulation on
``lumi-like`` builds one group, not the whole machine. An :class:`Instance`
names its hosts, says which group and switch each node is in
(:meth:`Instance.topology`) and which links a message crosses
(:meth:`Instance.route`, SimGrid 3.32's own minimal routing, so a test can
check a simulated time against the model's arithmetic).

Units: bandwidth in bytes/s, latency in seconds, host speed in flop/s. The
SimGrid builds of libcollkit charge one flop per byte reduced and half a flop
per byte copied, so the speed *is* the local reduction rate in bytes/s.

What SimGrid's ``<cluster>`` topologies can express, and so what a machine here
can say:

* every link of a ``fattree`` has the same bandwidth and latency (the node's
  link included); tapering comes from switch and parallel-link counts;
* a ``dragonfly`` has one base bandwidth (the node's link) and integer
  multiplicities for the links inside a group and between two groups; its
  global links may have their own latency and keep only part of their
  bandwidth (``global_link_lat``, ``background_load``), which the platform
  then writes link by link instead of as a cluster;
* a ``torus`` has one bandwidth for every link; nodes are the routers.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Union

from collkit.common.errors import UserError, closest, did_you_mean
from collkit.topology.model import Node, Topology

KINDS = ("fattree", "dragonfly", "torus")
HOST_PREFIX = "node"
SIM_PREFIX = "sim:"   # "sim:lumi-like" names a preset wherever a machine or map is asked for

# Defaults stated in docs/topologies.md: one rank per node, a loopback about
# four times a 200 Gb/s NIC, and reductions at 10 GB/s (one core streaming
# two operands from memory: an assumption, not a measurement).
DEFAULT_PPN = 1
DEFAULT_LOOPBACK_BW = 100e9
DEFAULT_LOOPBACK_LAT = 0.2e-6
DEFAULT_SPEED = 10e9


def _prod(values) -> int:
    return math.prod(values) if values else 1


def _positive_ints(values, what: str) -> tuple[int, ...]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise UserError(f"{what} must be positive integers, got {list(values)}")
        out.append(v)
    return tuple(out)


@dataclass(frozen=True)
class Link:
    """One link class a route crosses: what it is, its bandwidth and latency."""
    what: str           # "node", "up-1" ... (fat tree), "local", "global" (dragonfly), "x", "y" ... (torus)
    bw: float
    lat: float


# --------------------------------------------------------------------------- shapes

@dataclass(frozen=True)
class FatTree:
    """XGFT(h; m1..mh; w1..wh): ``down[i]`` children per level-(i+1) switch
    (``down[0]`` nodes per leaf switch), ``up[i]`` parents per level-i element
    (``up[0]`` leaf switches per node), ``parallel[i]`` links between a
    level-i element and each of its parents (default 1). ``2;16,16;1,8`` is
    256 nodes, 16 per leaf, each leaf with 8 uplinks: 2:1 at the top.
    A message takes one of parallel links (SimGrid picks it by a static
    rule), so parallel links add capacity for concurrent flows, not speed
    for one.

    Group = the nodes under one level-(h-1) switch (a leaf switch when h = 2,
    a pod otherwise); switch = the node's leaf switch."""

    kind: ClassVar[str] = "fattree"
    down: tuple[int, ...]
    up: tuple[int, ...]
    parallel: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "down", _positive_ints(self.down, "fattree down (children per switch)"))
        object.__setattr__(self, "up", _positive_ints(self.up, "fattree up (parents per node/switch)"))
        object.__setattr__(self, "parallel", _positive_ints(self.parallel, "fattree parallel (links per parent)")
                           or (1,) * len(self.down))
        if not self.down:
            raise UserError("a fattree needs at least one level")
        if len(self.up) != len(self.down):
            raise UserError(f"fattree: {len(self.down)} levels of children but {len(self.up)} of parents")
        if len(self.parallel) != len(self.down):
            raise UserError(f"fattree: {len(self.down)} levels but {len(self.parallel)} parallel-link counts")
        if self.up[0] != 1:
            # SimGrid routes a node through its first leaf only; several NICs per
            # node are not modelled (docs/topologies.md).
            raise UserError("fattree: up[0] (leaf switches per node) must be 1")

    @property
    def levels(self) -> int:
        return len(self.down)

    @property
    def capacity(self) -> int:
        return _prod(self.down)

    @property
    def group_size(self) -> int:
        return _prod(self.down[:-1]) if self.levels > 1 else self.capacity

    def describe(self) -> dict[str, Any]:
        return {"levels": self.levels, "down": list(self.down), "up": list(self.up),
                "parallel": list(self.parallel), "xgft": self.xgft(),
                "oversubscription": self.oversubscription()}

    def xgft(self) -> str:
        return f"{self.levels};{','.join(map(str, self.down))};{','.join(map(str, self.up))}"

    def topo_parameters(self) -> str:
        return f"{self.xgft()};{','.join(map(str, self.parallel))}"

    def oversubscription(self) -> list[float]:
        """Links down / links up of a switch at levels 1..h-1 (1.0 = full bandwidth)."""
        return [self.down[i] * self.parallel[i] / (self.up[i + 1] * self.parallel[i + 1])
                for i in range(self.levels - 1)]

    def shrink(self, groups: int) -> "FatTree":
        if self.levels == 1:
            return self
        return FatTree(self.down[:-1] + (groups,), self.up, self.parallel)

    def groups_for(self, nodes: int) -> int:
        return -(-nodes // self.group_size)

    def group_of(self, i: int) -> int:
        return i // self.group_size

    def switch_of(self, i: int) -> int:
        return i // self.down[0]

    def route(self, a: int, b: int, bw: float, lat: float) -> list[Link]:
        # Up to the lowest level whose subtree holds both, then down: 2 links per level.
        span = 1
        for level, m in enumerate(self.down, 1):
            span *= m
            if a // span == b // span:
                ups = [Link(f"up-{i}", bw, lat) for i in range(1, level + 1)]
                downs = [Link(f"down-{i}", bw, lat) for i in range(level, 0, -1)]
                return ups + downs
        raise AssertionError("nodes outside the tree")


@dataclass(frozen=True)
class Dragonfly:
    """``groups`` groups of ``routers`` all-to-all connected routers, ``nodes``
    per router; one global link of multiplicity ``global_links`` between each
    pair of groups, local links of multiplicity ``local_links``. SimGrid
    attaches the link to group j at router j of every group, so groups <=
    routers per group. Group = dragonfly group; switch = router."""

    kind: ClassVar[str] = "dragonfly"
    groups: int
    routers: int
    nodes: int
    global_links: int = 1
    local_links: int = 1

    def __post_init__(self) -> None:
        _positive_ints((self.groups, self.routers, self.nodes), "dragonfly groups, routers and nodes")
        _positive_ints((self.global_links, self.local_links), "dragonfly link multiplicities")
        if self.groups > self.routers:
            raise UserError(f"dragonfly: {self.groups} groups need at least {self.groups} routers per group "
                            f"(SimGrid attaches the link to group j at router j), not {self.routers}")

    @property
    def capacity(self) -> int:
        return self.groups * self.routers * self.nodes

    @property
    def group_size(self) -> int:
        return self.routers * self.nodes

    def describe(self) -> dict[str, Any]:
        return {"groups": self.groups, "routers_per_group": self.routers, "nodes_per_router": self.nodes,
                "global_links": self.global_links, "local_links": self.local_links}

    def topo_parameters(self) -> str:
        # One chassis per group: SimGrid 3.32's minimal routing between
        # chassis of one group takes links of chassis 0 whatever the source
        # chassis, so the chassis level is not used (docs/topologies.md).
        return f"{self.groups},{self.global_links};1,1;{self.routers},{self.local_links};{self.nodes}"

    def shrink(self, groups: int) -> "Dragonfly":
        return replace(self, groups=groups)

    def groups_for(self, nodes: int) -> int:
        return -(-nodes // self.group_size)

    def group_of(self, i: int) -> int:
        return i // self.group_size

    def switch_of(self, i: int) -> int:
        return i // self.nodes

    def route(self, a: int, b: int, bw: float, lat: float, global_lat: float | None = None,
              global_share: float = 1.0) -> list[Link]:
        # global_lat: the global link's own latency (None: lat, as SimGrid's
        # DRAGONFLY cluster has it); global_share: the part of its bandwidth left
        # to this job (1 - background_load).
        ga, ra = divmod(a // self.nodes, self.routers)
        gb, rb = divmod(b // self.nodes, self.routers)
        local = Link("local", bw * self.local_links, lat)
        hops = [Link("node", bw, lat)]
        if (ga, ra) != (gb, rb):
            if ga != gb:
                if ra != gb:             # to the router of this group that reaches group gb
                    hops.append(local)
                hops.append(Link("global", bw * self.global_links * global_share,
                                 lat if global_lat is None else global_lat))
                ra = ga                  # arrived at router ga of group gb
            if ra != rb:
                hops.append(local)
        hops.append(Link("node", bw, lat))
        return hops


@dataclass(frozen=True)
class Torus:
    """A torus of ``dims`` (host id = x + X*y + X*Y*z ...), dimension-order
    routing. Group = a block of ``unit`` nodes (e.g. Fugaku's 2x3x2 Tofu unit);
    the nodes are the routers, so there is no switch."""

    kind: ClassVar[str] = "torus"
    dims: tuple[int, ...]
    unit: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        dims = _positive_ints(self.dims, "torus dimensions")
        if not dims:
            raise UserError("a torus needs at least one dimension")
        unit = _positive_ints(self.unit, "torus unit") if self.unit else dims[:2] + (1,) * (len(dims) - 2)
        if len(unit) != len(dims):
            raise UserError(f"torus: unit {list(unit)} has {len(unit)} dimensions, the torus {len(dims)}")
        for d, u in zip(dims, unit):
            if d % u:
                raise UserError(f"torus: unit {list(unit)} does not tile dimensions {list(dims)}")
        object.__setattr__(self, "dims", dims)
        object.__setattr__(self, "unit", unit)

    @property
    def capacity(self) -> int:
        return _prod(self.dims)

    @property
    def group_size(self) -> int:
        return _prod(self.unit)

    def describe(self) -> dict[str, Any]:
        return {"dims": list(self.dims), "unit": list(self.unit)}

    def topo_parameters(self) -> str:
        return ",".join(map(str, self.dims))

    def coords(self, i: int) -> tuple[int, ...]:
        out = []
        for d in self.dims:
            i, c = divmod(i, d)
            out.append(c)
        return tuple(out)

    def shape_for(self, nodes: int) -> tuple[int, ...]:
        """The smallest torus of whole units holding ``nodes``; ties go to the
        most cubic shape, then to the longest first dimension."""
        counts = [d // u for d, u in zip(self.dims, self.unit)]
        best: tuple | None = None
        for ks in itertools.product(*(range(1, c + 1) for c in counts)):
            shape = tuple(k * u for k, u in zip(ks, self.unit))
            size = _prod(shape)
            if size < nodes:
                continue
            key = (size, max(shape) - min(shape), tuple(-s for s in shape))
            if best is None or key < best[0]:
                best = (key, shape)
        assert best is not None
        return best[1]

    def shrink_to(self, nodes: int) -> "Torus":
        return Torus(self.shape_for(nodes), self.unit)

    def group_of(self, i: int) -> int:
        g = 0
        scale = 1
        for c, d, u in zip(self.coords(i), self.dims, self.unit):
            g += (c // u) * scale
            scale *= d // u
        return g

    def route(self, a: int, b: int, bw: float, lat: float) -> list[Link]:
        # SimGrid 3.32's dimension-order route: the direction in each dimension
        # is chosen from the source's coordinate, then followed to the target.
        hops: list[Link] = []
        names = "xyzabcdefghijklmnopqrstuvw"
        for j, (m, t, d) in enumerate(zip(self.coords(a), self.coords(b), self.dims)):
            if m == t:
                continue
            right = (m < t <= m + d // 2) or (m > d // 2 and (m + d // 2) % d >= t)
            steps = (t - m) % d if right else (m - t) % d
            hops.extend(Link(names[j] if j < len(names) else f"d{j}", bw, lat) for _ in range(steps))
        return hops


Shape = Union[FatTree, Dragonfly, Torus]


# --------------------------------------------------------------------------- machine

@dataclass(frozen=True)
class Machine:
    """One synthetic machine: a shape, its links, what a node is."""

    name: str
    shape: Shape
    link_bw: float                 # bytes/s of a node's link and of every base link
    link_lat: float                # s per link crossed
    loopback_bw: float = DEFAULT_LOOPBACK_BW    # between ranks of one node
    loopback_lat: float = DEFAULT_LOOPBACK_LAT
    speed: float = DEFAULT_SPEED   # flop/s of a host = local reduction rate in bytes/s
    ppn: int = DEFAULT_PPN         # ranks per node unless told otherwise
    max_nodes: int = 0             # nodes of the real machine (0: the shape's capacity)
    source: str = ""               # where the numbers come from
    notes: tuple[str, ...] = field(default=())   # what the model simplifies
    # NICs per node. 0: the node's ranks are cores of one host behind one link
    # (a SimGrid <cluster>). k >= 1: one host per rank, k NICs per node, local
    # rank l on NIC l mod k, loopback_* = each rank's own link into the node's
    # memory (collkit.simulation.platform_xml.multinic_xml); needs a one-level
    # fat tree (one non-blocking switch) and ppn >= k.
    nics: int = 0
    # Dragonfly only (docs/topologies.md, "Global links"): the latency of a
    # link between two groups (None: link_lat, like every other link; the
    # optical cables between groups are longer), and the share of every
    # global link's bandwidth that other jobs use, modelled as a fixed
    # reservation: the job's global links keep (1 - background_load) of their
    # bandwidth. global_link_lat given (even = link_lat) or a load above 0
    # makes the platform an explicit dragonfly
    # (collkit.simulation.platform_xml.dragonfly_xml): SimGrid's DRAGONFLY
    # cluster has one latency and one base bandwidth for all its links.
    global_link_lat: float | None = None
    background_load: float = 0.0

    def __post_init__(self) -> None:
        for what, value in (("link_bw", self.link_bw), ("link_lat", self.link_lat),
                            ("loopback_bw", self.loopback_bw), ("loopback_lat", self.loopback_lat),
                            ("speed", self.speed)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise UserError(f"machine {self.name}: {what} must be a number, got {value!r}")
            if value < 0 or (value == 0 and not what.endswith("lat")):
                raise UserError(f"machine {self.name}: {what} must be positive, got {value}")
        if isinstance(self.ppn, bool) or not isinstance(self.ppn, int) or self.ppn < 1:
            raise UserError(f"machine {self.name}: ppn must be a positive integer, got {self.ppn!r}")
        if isinstance(self.nics, bool) or not isinstance(self.nics, int) or self.nics < 0:
            raise UserError(f"machine {self.name}: nics (NICs per node) must be a non-negative integer, "
                            f"got {self.nics!r}")
        if self.nics >= 1 and not (isinstance(self.shape, FatTree) and self.shape.levels == 1):
            raise UserError(f"machine {self.name}: nics = {self.nics} needs one non-blocking switch "
                            "(kind = \"fattree\", down = [NODES], up = [1]); multi-NIC nodes are not modelled "
                            f"on a {self.shape.kind} with more levels")
        if self.nics > self.ppn:
            raise UserError(f"machine {self.name}: nics = {self.nics} needs ppn >= {self.nics} "
                            f"(each NIC serves at least one rank), got ppn = {self.ppn}")
        for what, value, ok in (
                ("global_link_lat", self.global_link_lat, "a latency >= 0 (seconds)"),
                ("background_load", self.background_load,
                 "a share of the global links' capacity, 0 <= load < 1")):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise UserError(f"machine {self.name}: {what} must be {ok}, got {value!r}")
            if self.shape.kind != "dragonfly" and (what == "global_link_lat" or value != 0):
                # Only the explicit dragonfly has separate global links; SimGrid's
                # FAT_TREE and TORUS clusters give every link the same numbers.
                raise UserError(f"machine {self.name}: {what} applies to a dragonfly's links between groups; "
                                f"a {self.shape.kind} has no such links here")
        if self.global_link_lat is not None and self.global_link_lat < 0:
            raise UserError(f"machine {self.name}: global_link_lat must be a latency >= 0 (seconds), "
                            f"got {self.global_link_lat}")
        if not 0 <= self.background_load < 1:
            raise UserError(f"machine {self.name}: background_load must be 0 <= load < 1 (the share of each "
                            f"global link's capacity other jobs use; 1 or more leaves this job nothing), "
                            f"got {self.background_load}")
        if self.max_nodes == 0:
            object.__setattr__(self, "max_nodes", self.shape.capacity)
        if isinstance(self.max_nodes, bool) or not isinstance(self.max_nodes, int) \
                or not 1 <= self.max_nodes <= self.shape.capacity:
            raise UserError(f"machine {self.name}: max_nodes must be 1..{self.shape.capacity} "
                            f"(the shape's size), got {self.max_nodes!r}")

    @property
    def kind(self) -> str:
        return self.shape.kind

    @property
    def global_lat(self) -> float:
        """The latency of a dragonfly's global links (link_lat unless set)."""
        return self.link_lat if self.global_link_lat is None else self.global_link_lat

    @property
    def explicit_dragonfly(self) -> bool:
        """Whether the platform is the explicit dragonfly: global_link_lat is
        given (even equal to link_lat, which the tests use to compare the two
        platforms) or background_load is above 0. SimGrid's DRAGONFLY cluster
        can say neither."""
        return self.kind == "dragonfly" and (self.global_link_lat is not None or self.background_load > 0)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, **self.shape.describe(),
                "link_bw_Bps": self.link_bw, "link_lat_s": self.link_lat,
                "loopback_bw_Bps": self.loopback_bw, "loopback_lat_s": self.loopback_lat,
                "speed_flops": self.speed, "ppn": self.ppn, "nics": self.nics, "max_nodes": self.max_nodes,
                **({"global_link_lat_s": self.global_lat, "background_load": self.background_load}
                   if self.kind == "dragonfly" else {}),
                "capacity": self.shape.capacity, "source": self.source, "notes": list(self.notes)}

    def instance(self, nodes: int) -> "Instance":
        """The smallest instance of this shape with at least ``nodes`` nodes:
        whole groups (fat-tree pods, dragonfly groups) or whole torus units,
        every link property unchanged."""
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise UserError(f"a machine instance needs at least one node, not {nodes!r}")
        if nodes > self.max_nodes:
            raise UserError(f"{nodes} nodes do not fit {self.name}: it has {self.max_nodes}")
        shape = self.shape
        if isinstance(shape, Torus):
            small: Shape = shape.shrink_to(nodes)
        else:
            small = shape.shrink(shape.groups_for(nodes))
        return Instance(self, small)


def host_index(host: str) -> int | None:
    """i for host node<i> (the names an Instance gives its nodes), else None."""
    digits = host[len(HOST_PREFIX):]
    ok = host.startswith(HOST_PREFIX) and digits.isdigit() and str(int(digits)) == digits
    return int(digits) if ok else None


@dataclass(frozen=True)
class Instance:
    """The platform actually built: a machine's shape cut to whole groups."""

    machine: Machine
    shape: Shape
    nodes: int = field(init=False)
    hosts: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", self.shape.capacity)
        object.__setattr__(self, "hosts", tuple(f"{HOST_PREFIX}{i}" for i in range(self.shape.capacity)))

    def group_of(self, i: int) -> int:
        return self.shape.group_of(i)

    def switch_of(self, i: int) -> int | None:
        return None if isinstance(self.shape, Torus) else self.shape.switch_of(i)

    def topology(self) -> Topology:
        """The same hosts with their groups and switches, for the traffic analysis."""
        kind = self.shape.kind
        group_word = {"fattree": "pod", "dragonfly": "group", "torus": "unit"}[kind]
        switch_word = {"fattree": "leaf", "dragonfly": "router"}.get(kind)
        nodes = []
        for i, host in enumerate(self.hosts):
            s = self.switch_of(i)
            nodes.append(Node(host, f"{group_word}{self.group_of(i)}",
                              None if s is None or switch_word is None else f"{switch_word}{s}"))
        return Topology(tuple(nodes), source=f"sim:{self.machine.name} ({self.nodes} nodes)", kind=kind)

    def route(self, a: int, b: int) -> list[Link]:
        """Links from node a to node b under SimGrid 3.32's routing of this
        topology; a == b is the loopback."""
        for i in (a, b):
            if not 0 <= i < self.nodes:
                raise UserError(f"node {i} is not in this {self.nodes}-node instance")
        m = self.machine
        if a == b:
            return [Link("loopback", m.loopback_bw, m.loopback_lat)]
        if isinstance(self.shape, Dragonfly):
            return self.shape.route(a, b, m.link_bw, m.link_lat, m.global_lat, 1.0 - m.background_load)
        return self.shape.route(a, b, m.link_bw, m.link_lat)

    def transfer_time(self, a: int, b: int, size: int) -> float:
        """Latency plus size over the slowest link: one message alone on the
        network under SimGrid's CM02 model with its factors off."""
        links = self.route(a, b)
        return sum(x.lat for x in links) + size / min(x.bw for x in links)

    def describe(self) -> dict[str, Any]:
        return {"machine": self.machine.name, "kind": self.shape.kind, "nodes": self.nodes,
                "groups": self.nodes // self.shape.group_size, **self.shape.describe()}


# --------------------------------------------------------------------------- units

_BW_UNITS = {"": 1.0, "bps": 1 / 8, "Bps": 1.0}
_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "Ki": 2.0 ** 10, "Mi": 2.0 ** 20, "Gi": 2.0 ** 30, "Ti": 2.0 ** 40}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12}
_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"


def parse_bandwidth(value: Any, what: str) -> float:
    """``25e9`` (bytes/s), ``"25GBps"``, ``"200Gbps"`` (bits), ``"12.5GiBps"``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = re.fullmatch(_NUMBER + r"\s*(Ki|Mi|Gi|Ti|k|K|M|G|T|)(bps|Bps)", str(value).strip())
    if not m:
        raise UserError(f"{what}: '{value}' is not a bandwidth (e.g. 25GBps, 200Gbps, 25e9)")
    return float(m.group(1)) * _PREFIX[m.group(2)] * _BW_UNITS[m.group(3)]


def parse_latency(value: Any, what: str) -> float:
    """``1e-6`` (seconds), ``"1us"``, ``"500ns"``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = re.fullmatch(_NUMBER + r"\s*(s|ms|us|ns|ps)", str(value).strip())
    if not m:
        raise UserError(f"{what}: '{value}' is not a latency (e.g. 1us, 500ns, 1e-6)")
    return float(m.group(1)) * _TIME[m.group(2)]


def parse_speed(value: Any, what: str) -> float:
    """``10e9`` (flop/s), ``"10Gf"``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = re.fullmatch(_NUMBER + r"\s*(k|K|M|G|T|)f", str(value).strip())
    if not m:
        raise UserError(f"{what}: '{value}' is not a host speed (e.g. 10Gf, 1e10)")
    return float(m.group(1)) * _PREFIX[m.group(2)]


# --------------------------------------------------------------------------- presets

def _preset_list() -> list[Machine]:
    # Numbers and their sources: docs/topologies.md, one section per preset.
    return [
        Machine(
            name="lumi-like",
            shape=Dragonfly(groups=24, routers=32, nodes=4, global_links=20, local_links=1),
            link_bw=25e9, link_lat=0.5e-6, max_nodes=2978,
            source="LUMI-G (HPE Cray EX, Slingshot-11 dragonfly): LUMI documentation and training material; "
                   "docs/topologies.md",
            notes=("one 200 Gb/s NIC per node (LUMI-G nodes have four)",
                   "24 groups of 128 nodes, 32 switches of 4 nodes each; 20 links between two groups "
                   "inferred from the documented 276 TB/s LUMI-G global bandwidth",
                   "per-link latency 0.5 us is an assumption")),
        Machine(
            name="leonardo-like",
            shape=Dragonfly(groups=20, routers=20, nodes=9, global_links=18, local_links=1),
            link_bw=25e9, link_lat=0.5e-6, max_nodes=3456,
            source="Leonardo Booster (InfiniBand HDR dragonfly+): CINECA documentation, the node map in "
                   "data/leonardo; docs/topologies.md",
            notes=("each group is a two-level fat tree on the real machine; modelled as all-to-all routers",
                   "the real cells of 180 nodes on 18 leaf switches become 20 routers of 9 nodes "
                   "(SimGrid needs groups <= routers per group)",
                   "200 Gb/s per node (the documented pair bandwidth), not the four HDR100 ports",
                   "18 links between two groups is an assumption from the switch radix",
                   "per-link latency 0.5 us is an assumption")),
        Machine(
            name="marenostrum5-like",
            shape=FatTree(down=(16, 10, 41), up=(1, 16, 5)),
            link_bw=25e9, link_lat=0.5e-6, max_nodes=6408,
            source="MareNostrum 5 GPP (InfiniBand NDR200, fat tree, 2:1 oversubscribed): BSC documentation, "
                   "Bine trees paper; docs/topologies.md",
            notes=("all links at the node's NDR200 speed (SimGrid's FAT_TREE has one link bandwidth)",
                   "pods of 160 nodes at full bandwidth, 2:1 above them: the pod size is an assumption")),
        Machine(
            name="fugaku-like",
            shape=Torus(dims=(48, 69, 48), unit=(2, 3, 2)),
            link_bw=6.8e9, link_lat=0.1e-6, max_nodes=158976,
            source="Fugaku (Tofu interconnect D, 6D mesh/torus 24x23x24x2x3x2): RIKEN/Fujitsu documentation; "
                   "docs/topologies.md",
            notes=("the 6D TofuD network as the 3D torus (X*a, Y*b, Z*c) that Fugaku presents to jobs",
                   "per-hop latency 0.1 us is an assumption")),
        Machine(
            name="rails4-like",
            shape=FatTree(down=(64,), up=(1,)),
            link_bw=25e9, link_lat=0.5e-6, loopback_bw=50e9, loopback_lat=0.2e-6, ppn=4, nics=4,
            source="generic multi-NIC cluster: 64 nodes of 4 ranks, each rank on its own 200 Gb/s NIC "
                   "(the Parallel Rings paper's node has 4 GPUs and 4 HCAs); docs/topologies.md",
            notes=("one non-blocking switch between the NICs (a rail-optimised network with no contention "
                   "above the NICs)",
                   "each rank has its own 50 GB/s link into node memory (loopback_bw): an assumption for a "
                   "CPU node, far below NVLink",
                   "set nics = 1 or 2 to compare the same node with fewer NICs")),
        Machine(
            name="fattree-2to1",
            shape=FatTree(down=(16, 64), up=(1, 8)),
            link_bw=25e9, link_lat=0.5e-6,
            source="generic two-level 2:1 fat tree (XGFT 2;16,64;1,8); docs/topologies.md"),
        Machine(
            name="dragonfly-small",
            shape=Dragonfly(groups=8, routers=8, nodes=4, global_links=2, local_links=1),
            link_bw=25e9, link_lat=0.5e-6,
            source="generic dragonfly, 8 groups of 8 routers with 4 nodes; docs/topologies.md"),
    ]


PRESETS: dict[str, Machine] = {m.name: m for m in _preset_list()}


def preset(name: str) -> Machine:
    """A preset by name; an unknown name is a UserError with a suggestion."""
    key = name.strip().lower()
    if key.startswith(SIM_PREFIX):
        key = key[len(SIM_PREFIX):]
    if key in PRESETS:
        return PRESETS[key]
    hint = closest(key, list(PRESETS))
    extra = f"; did you mean '{hint}'?" if hint else ""
    raise UserError(f"unknown simulated machine '{name}'{extra} (presets: {', '.join(PRESETS)})")


# --------------------------------------------------------------------------- tables

COMMON_KEYS = ("name", "preset", "kind", "link_bw", "link_lat", "loopback_bw", "loopback_lat", "speed", "ppn",
               "max_nodes", "nics")
SHAPE_KEYS = {
    "fattree": ("down", "up", "parallel"),
    "dragonfly": ("groups", "routers", "nodes_per_router", "global_links", "local_links", "global_link_lat",
                  "background_load"),
    "torus": ("dims", "unit"),
}
MACHINE_KEYS = COMMON_KEYS + tuple(k for keys in SHAPE_KEYS.values() for k in keys)


def _int(table: dict, key: str, where: str) -> int:
    v = table[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise UserError(f"{where}: {key} must be an integer, got {v!r}")
    return v


def _ints(table: dict, key: str, where: str) -> tuple[int, ...]:
    v = table[key]
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise UserError(f"{where}: {key} must be a list of integers, got {v!r}")
    return tuple(v)


def _shape(kind: str, table: dict, base: Shape | None, where: str) -> Shape:
    keys = SHAPE_KEYS[kind]
    given = [k for k in keys if k in table]
    if base is not None and base.kind == kind and not given:
        return base
    if kind == "fattree":
        missing = [k for k in ("down", "up") if k not in table and not isinstance(base, FatTree)]
        if missing:
            raise UserError(f"{where}: a fattree needs {' and '.join(missing)}")
        down = _ints(table, "down", where) if "down" in table else base.down  # type: ignore[union-attr]
        up = _ints(table, "up", where) if "up" in table else base.up  # type: ignore[union-attr]
        if "parallel" in table:
            parallel = _ints(table, "parallel", where)
        else:
            parallel = base.parallel if isinstance(base, FatTree) and len(base.parallel) == len(down) else ()
        return FatTree(down, up, parallel)
    if kind == "dragonfly":
        b = base if isinstance(base, Dragonfly) else None
        need = [k for k in ("groups", "routers", "nodes_per_router") if k not in table and b is None]
        if need:
            raise UserError(f"{where}: a dragonfly needs {', '.join(need)}")
        return Dragonfly(
            groups=_int(table, "groups", where) if "groups" in table else b.groups,  # type: ignore[union-attr]
            routers=_int(table, "routers", where) if "routers" in table else b.routers,  # type: ignore[union-attr]
            nodes=_int(table, "nodes_per_router", where) if "nodes_per_router" in table else b.nodes,  # type: ignore[union-attr]
            global_links=_int(table, "global_links", where) if "global_links" in table else (b.global_links if b else 1),
            local_links=_int(table, "local_links", where) if "local_links" in table else (b.local_links if b else 1))
    b = base if isinstance(base, Torus) else None
    if "dims" not in table and b is None:
        raise UserError(f"{where}: a torus needs dims")
    dims = _ints(table, "dims", where) if "dims" in table else b.dims  # type: ignore[union-attr]
    unit = _ints(table, "unit", where) if "unit" in table else (b.unit if b and "dims" not in table else ())
    return Torus(dims, unit)


def from_table(table: dict, source: str) -> Machine:
    """A machine from a TOML table (a platform file's ``[simgrid]`` machine
    keys, :data:`MACHINE_KEYS`): either ``preset = "NAME"`` with keys that
    override it, or ``kind`` with that kind's shape keys. Bandwidths take
    ``"25GBps"``/``"200Gbps"`` or bytes/s, latencies ``"1us"`` or seconds,
    speed ``"10Gf"`` or flop/s."""
    where = source
    if not isinstance(table, dict):
        raise UserError(f"{where}: the machine must be a table")
    for key in table:
        if key not in MACHINE_KEYS:
            extra = did_you_mean(key, MACHINE_KEYS)
            raise UserError(f"{where}: unknown machine key '{key}'{extra}; allowed: {', '.join(MACHINE_KEYS)}")
    base: Machine | None = None
    if "preset" in table:
        if not isinstance(table["preset"], str):
            raise UserError(f"{where}: preset must be a string")
        try:
            base = preset(table["preset"])
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None
    kind = table.get("kind", base.kind if base else None)
    if kind is None:
        raise UserError(f"{where}: say kind = {' | '.join(repr(k) for k in KINDS)} or preset = NAME")
    if kind not in KINDS:
        hint = closest(str(kind), KINDS)
        extra = f"; did you mean '{hint}'?" if hint else ""
        raise UserError(f"{where}: unknown kind '{kind}'{extra} (choose {', '.join(KINDS)})")
    for other, keys in SHAPE_KEYS.items():
        if other != kind:
            stray = [k for k in keys if k in table and k not in SHAPE_KEYS[kind]]
            if stray:
                raise UserError(f"{where}: {stray[0]} belongs to a {other}, not a {kind}")
    try:
        shape = _shape(kind, table, base.shape if base else None, where)
    except UserError as exc:
        text = str(exc)
        raise UserError(text if text.startswith(where) else f"{where}: {text}") from None
    if base is None and "link_bw" not in table:
        raise UserError(f"{where}: link_bw is required (e.g. link_bw = \"25GBps\")")
    if base is None and "link_lat" not in table:
        raise UserError(f"{where}: link_lat is required (e.g. link_lat = \"0.5us\")")
    name = table.get("name", base.name if base else "")
    if not isinstance(name, str):
        raise UserError(f"{where}: name must be a string")
    ppn = table.get("ppn", base.ppn if base else DEFAULT_PPN)
    if "max_nodes" in table:
        max_nodes = _int(table, "max_nodes", where)
    elif base is not None and shape == base.shape:
        max_nodes = base.max_nodes
    else:
        max_nodes = 0
    def pick(key, parse, default):
        return parse(table[key], f"{where}: {key}") if key in table else default
    try:
        return Machine(
            name=name or f"{kind} ({source})", shape=shape,
            link_bw=pick("link_bw", parse_bandwidth, base.link_bw if base else 0.0),
            link_lat=pick("link_lat", parse_latency, base.link_lat if base else 0.0),
            loopback_bw=pick("loopback_bw", parse_bandwidth, base.loopback_bw if base else DEFAULT_LOOPBACK_BW),
            loopback_lat=pick("loopback_lat", parse_latency, base.loopback_lat if base else DEFAULT_LOOPBACK_LAT),
            speed=pick("speed", parse_speed, base.speed if base else DEFAULT_SPEED),
            ppn=ppn, max_nodes=max_nodes, nics=table.get("nics", base.nics if base else 0),
            global_link_lat=pick("global_link_lat", parse_latency, base.global_link_lat if base else None),
            background_load=table.get("background_load", base.background_load if base else 0.0),
            source=source if base is None else f"{base.name} as changed by {source}",
            notes=base.notes if base else ())
    except UserError as exc:
        text = str(exc)
        raise UserError(text if text.startswith(where) else f"{where}: {text}") from None
