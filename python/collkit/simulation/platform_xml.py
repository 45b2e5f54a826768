"""SimGrid 3.32 platform XML for an :class:`~collkit.topology.synthetic.Instance`.

One ``<cluster>`` with SimGrid's own FAT_TREE, DRAGONFLY or TORUS topology, so
SimGrid builds the links and routes itself (platform DTD 4.1):

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


def platform_xml(inst: Instance, ppn: int) -> str:
    """The platform file text; ``ppn`` ranks (cores) per node."""
    if isinstance(ppn, bool) or not isinstance(ppn, int) or ppn < 1:
        raise UserError(f"ranks per node must be a positive integer, not {ppn!r}")
    m = inst.machine
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
            f"  <cluster {cluster}/>\n"
            "</platform>\n")
