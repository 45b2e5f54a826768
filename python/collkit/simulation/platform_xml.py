"""SimGrid platform XML (SimGrid 4.1, DTD 4.1) for an :class:`~collkit.topology.synthetic.Instance`.

One ``<cluster>`` with SimGrid's own FAT_TREE, DRAGONFLY or TORUS topology, so
SimGrid builds the links and routes itself. SimGrid 4.x crashes (SIGSEGV at
start) on such a cluster as the platform's top-level element, so it sits in a
zone ``world`` of Full routing, as SimGrid's own example platforms do; with one
zone inside, that zone adds no route and no link.

* hosts ``node0 .. node{N-1}``, in the instance's node order (SimGrid numbers
  cluster hosts by their radical, and its topologies place host i exactly
  where the model puts node i);
* ``core = ppn``: the ranks of a node are cores of one host, so they share the
  node's links; messages between them take the loopback link
  (``loopback_bw``/``loopback_lat``);
* ``SPLITDUPLEX`` links: each direction has the full bandwidth;
* ``speed`` = the machine's host speed, the local reduction rate in bytes/s.

Numbers are written in base units (Bps, s, f) with full precision, so the XML
says exactly what the model says."""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

from collkit.common.errors import UserError
from collkit.topology.synthetic import HOST_PREFIX, Instance

TOPOLOGY = {"fattree": "FAT_TREE", "dragonfly": "DRAGONFLY", "torus": "TORUS"}


def _num(x: float) -> str:
    return repr(float(x))


def platform_xml(inst: Instance, ppn: int, explicit: bool = False) -> str:
    """The platform file text; ``ppn`` ranks (cores) per node. A dragonfly
    whose global links differ from its other links (``global_link_lat``,
    ``background_load``) is written explicitly (:func:`dragonfly_xml`), as is
    any dragonfly when ``explicit`` is true (the tests compare the two)."""
    if isinstance(ppn, bool) or not isinstance(ppn, int) or ppn < 1:
        raise UserError(f"ranks per node must be a positive integer, not {ppn!r}")
    m = inst.machine
    if m.explicit_dragonfly or (explicit and inst.shape.kind == "dragonfly"):
        return dragonfly_xml(inst, ppn)
    if explicit:
        raise UserError(f"only a dragonfly has an explicit platform, not a {inst.shape.kind}")
    attrs = {
        "id": "machine",
        "prefix": HOST_PREFIX,
        "suffix": "",
        "radical": f"0-{inst.nodes - 1}",
        "speed": f"{_num(m.speed)}f",
        "core": str(ppn),
        "bw": f"{_num(m.link_bw)}Bps",
        "lat": f"{_num(m.link_lat)}s",
        "loopback_bw": f"{_num(m.loopback_bw)}Bps",
        "loopback_lat": f"{_num(m.loopback_lat)}s",
        "sharing_policy": "SPLITDUPLEX",
        "topology": TOPOLOGY[inst.shape.kind],
        "topo_parameters": inst.shape.topo_parameters(),
    }
    cluster = " ".join(f"{k}={quoteattr(v)}" for k, v in attrs.items())
    comment = f"collkit: {m.name}, {inst.nodes} nodes ({inst.shape.kind}), {ppn} per node".replace("--", "-")
    return ("<?xml version='1.0'?>\n"
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            "<platform version=\"4.1\">\n"
            f"  <!-- {comment} -->\n"
            "  <zone id=\"world\" routing=\"Full\">\n"
            f"    <cluster {cluster}/>\n"
            "  </zone>\n"
            "</platform>\n")


# --------------------------------------------------------------------------- explicit dragonfly

def dragonfly_xml(inst: Instance, ppn: int) -> str:
    """The dragonfly of ``inst`` written link by link, so that its global links
    can have their own latency (``global_link_lat``) and keep only
    ``1 - background_load`` of their bandwidth, which SimGrid 4.1's DRAGONFLY
    cluster cannot say (every link it generates takes the cluster's one
    ``lat`` and a multiple of its one ``bw``: ``DragonflyZone::generate_link``).

    Same links, same routes as that cluster, so with the global links left as
    they are it simulates the same times (tests/python/test_dragonfly_links.py):

    * zone ``machine`` (Full routing) holds one zone ``g{G}`` per group and
      the global links; a ``zoneRoute`` per ordered pair of groups names the
      routers that hold their link, as SimGrid's cluster does: router j of
      every group holds the link to group j (link ``global-{i}-{j}``, i < j:
      UP from i to j, DOWN back);
    * zone ``g{G}`` (Floyd routing) holds the group's hosts, its routers
      ``g{G}-r{R}`` and only adjacent routes: host <-> its router over the
      node's link ``node{i}-link`` (UP towards the router), router <-> router
      over ``g{G}-l{j}-{k}`` (j < k, UP from j to k; bandwidth x local_links),
      host <-> itself over its FATPIPE loopback ``node{i}-loopback`` (the
      cluster's loopback). Floyd finds the shortest routes, which inside an
      all-to-all group are unique: host, router, [other router], host. So a
      message between groups crosses its node link, the local link to the
      router holding the global link (unless it is already there), the global
      link, the local link to the destination's router (unless it arrived
      there), the destination's node link: the cluster's minimal route.

    Size: per group, one route per host and per router pair, plus G^2
    zoneRoutes; Floyd costs (hosts + routers)^3 per group at load (measured in
    docs/topologies.md)."""
    shape = inst.shape
    m = inst.machine
    bw, lat = _num(m.link_bw), _num(m.link_lat)
    local_bw = _num(m.link_bw * shape.local_links)
    # the same expression as Dragonfly.route, so the model and the file agree to the bit
    global_bw = _num(m.link_bw * shape.global_links * (1.0 - m.background_load))
    global_lat = _num(m.global_lat)
    groups = shape.groups
    comment = (f"collkit: {m.name}, {inst.nodes} nodes (explicit dragonfly: global links "
               f"{global_lat} s, background load {m.background_load!r}), {ppn} per node").replace("--", "-")
    out = ["<?xml version='1.0'?>",
           "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">",
           "<platform version=\"4.1\">",
           f"  <!-- {comment} -->",
           "  <zone id=\"machine\" routing=\"Full\">"]
    duplex = "sharing_policy=\"SPLITDUPLEX\""
    for g in range(groups):
        out.append(f"    <zone id=\"g{g}\" routing=\"Floyd\">")
        first = g * shape.group_size
        hosts = range(first, first + shape.group_size)
        out.extend(f"      <host id=\"{HOST_PREFIX}{i}\" speed=\"{_num(m.speed)}f\" core=\"{ppn}\"/>" for i in hosts)
        out.extend(f"      <router id=\"g{g}-r{r}\"/>" for r in range(shape.routers))
        for i in hosts:
            out.append(f"      <link id=\"{HOST_PREFIX}{i}-link\" bandwidth=\"{bw}Bps\" latency=\"{lat}s\" {duplex}/>")
            out.append(f"      <link id=\"{HOST_PREFIX}{i}-loopback\" bandwidth=\"{_num(m.loopback_bw)}Bps\" "
                       f"latency=\"{_num(m.loopback_lat)}s\" sharing_policy=\"FATPIPE\"/>")
        pairs = [(j, k) for j in range(shape.routers) for k in range(j + 1, shape.routers)]
        out.extend(f"      <link id=\"g{g}-l{j}-{k}\" bandwidth=\"{local_bw}Bps\" latency=\"{lat}s\" {duplex}/>"
                   for j, k in pairs)
        for i in hosts:
            host, router = f"{HOST_PREFIX}{i}", f"g{g}-r{(i - first) // shape.nodes}"
            out.append(f"      <route src=\"{host}\" dst=\"{host}\" symmetrical=\"NO\">"
                       f"<link_ctn id=\"{host}-loopback\"/></route>")
            # symmetrical (the default): the way back takes the DOWN direction
            out.append(f"      <route src=\"{host}\" dst=\"{router}\">"
                       f"<link_ctn id=\"{host}-link\" direction=\"UP\"/></route>")
        out.extend(f"      <route src=\"g{g}-r{j}\" dst=\"g{g}-r{k}\">"
                   f"<link_ctn id=\"g{g}-l{j}-{k}\" direction=\"UP\"/></route>" for j, k in pairs)
        out.append("    </zone>")
    for a in range(groups):
        for b in range(a + 1, groups):
            out.append(f"    <link id=\"global-{a}-{b}\" bandwidth=\"{global_bw}Bps\" "
                       f"latency=\"{global_lat}s\" {duplex}/>")
    for a in range(groups):
        for b in range(a + 1, groups):
            # symmetrical: the way back takes the link's DOWN direction, between the same routers
            out.append(f"    <zoneRoute src=\"g{a}\" dst=\"g{b}\" gw_src=\"g{a}-r{b}\" gw_dst=\"g{b}-r{a}\">"
                       f"<link_ctn id=\"global-{a}-{b}\" direction=\"UP\"/></zoneRoute>")
    out += ["  </zone>", "</platform>"]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- multi-NIC nodes

def nic_of(local: int, nics: int) -> int:
    """The NIC a node's local rank is bound to: round robin, so ranks 0..k-1
    of a node each get their own NIC (a rail) and further ranks share them."""
    return local % nics


def rank_host(node: int, local: int) -> str:
    """The SimGrid host of local rank ``local`` of ``node`` on a multi-NIC platform."""
    return f"{HOST_PREFIX}{node}-c{local}"


def multinic_xml(inst: Instance, nodes: int, ppn: int) -> str:
    """A platform of ``nodes`` nodes with ``inst.machine.nics`` NICs each and
    ``ppn`` ranks per node, one SimGrid host per rank.

    A ``<cluster>`` puts all ranks of a node on one host behind one link, so
    each node is written as a zone of its own (DTD 4.1):

    * host ``node{i}-c{l}`` for local rank l, its own SPLITDUPLEX *intra-node*
      link ``node{i}-mem{l}`` (loopback_bw/loopback_lat) into the node's memory:
      a message between two ranks of a node crosses the sender's link up and
      the receiver's down, and nothing else;
    * NIC ``node{i}-nic{j}``, a SPLITDUPLEX link of the machine's link_bw and
      link_lat; rank l reaches the node's gateway router ``node{i}-sw`` through
      NIC l mod k (:func:`nic_of`), so ranks on different NICs sending off the
      node at once each get a whole NIC;
    * between nodes, routes from gateway to gateway cross one link ``switch``
      of zero latency, FATPIPE (never shared) at the NIC's bandwidth: the
      machine is one non-blocking switch (a one-level fat tree, the only shape
      Machine allows with nics >= 1; a rail-optimised network is the same for
      these flows), so the NICs are the only inter-node bottleneck. SimGrid
      forbids a route without links, hence the link.

    The routes within a node and between nodes are listed explicitly (Full
    routing): O(nodes^2) lines, about 2 MB at 256 nodes."""
    m = inst.machine
    nics = m.nics
    if nics < 1:
        raise UserError(f"machine {m.name} has no NIC count (nics); it is a cluster platform")
    if isinstance(ppn, bool) or not isinstance(ppn, int) or ppn < nics:
        raise UserError(f"{nics} NICs per node need at least {nics} ranks per node (one per NIC), not {ppn!r}")
    if not 1 <= nodes <= inst.nodes:
        raise UserError(f"{nodes} nodes do not fit the {inst.nodes}-node instance of {m.name}")
    nic = f"bandwidth=\"{_num(m.link_bw)}Bps\" latency=\"{_num(m.link_lat)}s\" sharing_policy=\"SPLITDUPLEX\""
    mem = (f"bandwidth=\"{_num(m.loopback_bw)}Bps\" latency=\"{_num(m.loopback_lat)}s\" "
           "sharing_policy=\"SPLITDUPLEX\"")
    comment = (f"collkit: {m.name}, {nodes} nodes of {ppn} ranks and {nics} NICs, "
               "one non-blocking switch").replace("--", "-")
    out = ["<?xml version='1.0'?>",
           "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">",
           "<platform version=\"4.1\">",
           f"  <!-- {comment} -->",
           "  <zone id=\"machine\" routing=\"Full\">"]
    for i in range(nodes):
        node, sw = f"{HOST_PREFIX}{i}", f"{HOST_PREFIX}{i}-sw"
        out.append(f"    <zone id=\"{node}\" routing=\"Full\">")
        out.extend(f"      <host id=\"{rank_host(i, l)}\" speed=\"{_num(m.speed)}f\"/>" for l in range(ppn))
        out.append(f"      <router id=\"{sw}\"/>")
        out.extend(f"      <link id=\"{node}-nic{j}\" {nic}/>" for j in range(nics))
        out.extend(f"      <link id=\"{node}-mem{l}\" {mem}/>" for l in range(ppn))
        for l in range(ppn):
            h, j = rank_host(i, l), nic_of(l, nics)
            out.append(f"      <route src=\"{h}\" dst=\"{sw}\" symmetrical=\"NO\">"
                       f"<link_ctn id=\"{node}-nic{j}\" direction=\"UP\"/></route>")
            out.append(f"      <route src=\"{sw}\" dst=\"{h}\" symmetrical=\"NO\">"
                       f"<link_ctn id=\"{node}-nic{j}\" direction=\"DOWN\"/></route>")
            for o in range(ppn):
                if o != l:
                    out.append(f"      <route src=\"{h}\" dst=\"{rank_host(i, o)}\" symmetrical=\"NO\">"
                               f"<link_ctn id=\"{node}-mem{l}\" direction=\"UP\"/>"
                               f"<link_ctn id=\"{node}-mem{o}\" direction=\"DOWN\"/></route>")
        out.append("    </zone>")
    out.append(f"    <link id=\"switch\" bandwidth=\"{_num(m.link_bw)}Bps\" latency=\"0s\" sharing_policy=\"FATPIPE\"/>")
    for a in range(nodes):
        for b in range(a + 1, nodes):
            out.append(f"    <zoneRoute src=\"{HOST_PREFIX}{a}\" dst=\"{HOST_PREFIX}{b}\" "
                       f"gw_src=\"{HOST_PREFIX}{a}-sw\" gw_dst=\"{HOST_PREFIX}{b}-sw\">"
                       "<link_ctn id=\"switch\"/></zoneRoute>")
    out += ["  </zone>", "</platform>"]
    return "\n".join(out) + "\n"
