"""The machine model shared by the traffic analysis and (later) SimGrid platforms."""

from collkit.topology.model import Node, Topology, UnknownHost, normalise_host
from collkit.topology.readers import read_csv, read_leonardo, read_map

__all__ = ["Node", "Topology", "UnknownHost", "normalise_host", "read_csv", "read_leonardo", "read_map"]
