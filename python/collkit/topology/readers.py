"""Readers of node maps: the Leonardo map format and a generic CSV.

Leonardo (``nodes.txt``): one node per line as KEY VALUE pairs,
``NODE 0063 RACK 3 CELL 2 ROW 1 PARTITION 1 SWITCH 10300``. NODE and CELL are
required; CELL is the dragonfly group, SWITCH the leaf switch. Node ``NODE
NNNN`` is host ``lrdnNNNN``: the NODE field as written (four digits, zero
padded, as Leonardo's host names are) after the prefix ``lrdn``.

Generic CSV: ``host,group[,switch]`` per line, host names as the allocations
write them (looked up without domain, in any case). A first line whose first
field is ``host`` is a header. In both formats blank lines and lines starting
with ``#`` are skipped.
"""

from __future__ import annotations

from pathlib import Path

from collkit.common.errors import UserError
from collkit.topology.model import Node, Topology, normalise_host

LEONARDO_PREFIX = "lrdn"


def _lines(path: Path):
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise UserError(f"map file {path} does not exist") from None
    except UnicodeDecodeError:
        raise UserError(f"map file {path} is not a text file") from None
    except OSError as exc:
        raise UserError(f"cannot read map file {path}: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield number, stripped


def _build(nodes: list[Node], where: list[int], path: Path, kind: str) -> Topology:
    if not nodes:
        raise UserError(f"map file {path} lists no nodes")
    seen: dict[str, int] = {}
    for node, line in zip(nodes, where):
        if node.name in seen:
            raise UserError(f"map file {path} line {line}: node {node.name} already listed on line {seen[node.name]}")
        seen[node.name] = line
    return Topology(tuple(nodes), source=str(path), kind=kind)


def read_leonardo(path: Path) -> Topology:
    nodes: list[Node] = []
    where: list[int] = []
    for number, line in _lines(path):
        tokens = line.split()
        if len(tokens) % 2:
            raise UserError(f"map file {path} line {number}: expected KEY VALUE pairs, got '{line}'")
        fields = {tokens[i].upper(): tokens[i + 1] for i in range(0, len(tokens), 2)}
        if "NODE" not in fields or "CELL" not in fields:
            raise UserError(f"map file {path} line {number}: needs NODE and CELL, got '{line}'")
        node_id = fields["NODE"]
        if not node_id.isdigit():
            raise UserError(f"map file {path} line {number}: NODE '{node_id}' is not a number")
        nodes.append(Node(LEONARDO_PREFIX + node_id, fields["CELL"], fields.get("SWITCH"), fields.get("RACK")))
        where.append(number)
    return _build(nodes, where, path, "dragonfly")


def read_csv(path: Path) -> Topology:
    nodes: list[Node] = []
    where: list[int] = []
    first = True
    for number, line in _lines(path):
        cells = [c.strip() for c in line.split(",")]
        if first and cells[0].lower() == "host":
            first = False
            continue
        first = False
        if len(cells) not in (2, 3) or not all(cells):
            raise UserError(f"map file {path} line {number}: expected 'host,group[,switch]', got '{line}'")
        nodes.append(Node(normalise_host(cells[0]), cells[1], cells[2] if len(cells) == 3 else None))
        where.append(number)
    return _build(nodes, where, path, "generic")


def read_map(path: Path | str) -> Topology:
    """A node map in either format, told apart by its first line."""
    path = Path(path)
    for _, line in _lines(path):
        if line.split(None, 1)[0].upper() == "NODE":
            return read_leonardo(path)
        return read_csv(path)
    raise UserError(f"map file {path} lists no nodes")
