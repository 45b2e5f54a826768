"""The import graph of collkit, read statically, has no circle anywhere.

Every ``import`` and ``from ... import`` counts, at module level or inside a
function or an ``if TYPE_CHECKING:`` block: a circle that only works because
one side imports late is still a circle (spec.py once imported backends.nccl
inside a function, nccl.py imported campaign.points inside one, and points.py
imports spec; backends/__init__.py and openmpi.py / mpich.py once imported each
other, until the data classes moved to backends/offer.py and the choice of a
family's backend to backends/families.py).

A package's ``__init__`` is a module of its own here: ``from collkit.backends
import offer`` imports collkit.backends.offer, not collkit.backends."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from import_sources import import_source

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from call_cycles import circles  # noqa: E402  (one Tarjan for C files and Python modules)

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "python" / "collkit"


def _modules() -> dict[str, Path]:
    """Module name -> file, for every module of the collkit package."""
    out = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = ("collkit",) + path.relative_to(PACKAGE_DIR).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The longest collkit module that `name` is or lies in ("collkit.x.Y" -> "collkit.x")."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph() -> dict[str, dict[str, list[int]]]:
    """importer -> {imported collkit module -> line numbers of the imports}."""
    modules = _modules()
    graph: dict[str, dict[str, list[int]]] = {m: {} for m in modules}
    for mod, path in modules.items():
        is_package = path.name == "__init__.py"
        package = mod if is_package else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = import_source(node, package)
                for alias in node.names:
                    # `from collkit.x import y` imports the submodule collkit.x.y
                    # where there is one, else a name of collkit.x.
                    sub = f"{source}.{alias.name}"
                    targets.append(sub if sub in modules else source)
            for target in targets:
                owner = _owner(target, modules)
                if owner is not None and owner != mod:
                    graph[mod].setdefault(owner, []).append(node.lineno)
    return graph


def _cycle_through(graph: dict[str, dict[str, list[int]]], start: str) -> list[str]:
    """A shortest import path from `start` back to itself ([] when there is none)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return list(reversed(path)) + [start]
                if child not in previous:
                    previous[child] = node
                    nxt.append(child)
        frontier = nxt
    return []


def _describe(graph: dict[str, dict[str, list[int]]], cycle: list[str]) -> str:
    modules = _modules()
    root = PACKAGE_DIR.parents[1]
    steps = []
    for a, b in zip(cycle, cycle[1:]):
        where = ", ".join(f"{modules[a].relative_to(root)}:{line}" for line in graph[a][b])
        steps.append(f"  {a} -> {b}  ({where})")
    return "\n".join(steps)


def test_graph_sees_function_local_and_relative_imports():
    graph = import_graph()
    # spec.py imports collkit.campaign.tuning as `from collkit.campaign import tuning`
    assert "collkit.campaign.tuning" in graph["collkit.campaign.spec"]
    # openmpi.py's ompi_parameter is imported from a sibling module (relative to the package)
    assert "collkit.backends.parameters" in graph["collkit.backends.openmpi"]
    # a function-local import counts (nccl.py imports campaign/platform.py inside with_nccl_bench)
    assert "collkit.campaign.platform" in graph["collkit.backends.nccl"]
    # the package re-exports the families' choice; a family module imports the data, not the package
    assert "collkit.backends.families" in graph["collkit.backends"]
    assert "collkit.backends.offer" in graph["collkit.backends.openmpi"]
    assert "collkit.backends" not in graph["collkit.backends.openmpi"]


def test_the_graph_finds_a_planted_cycle():
    graph = {"a": {"b": [1]}, "b": {"c": [2]}, "c": {"a": [3]}, "d": {"a": [4]}}
    assert circles(graph) == [["a", "b", "c"]]
    assert _cycle_through(graph, "a") == ["a", "b", "c", "a"]


def test_no_import_cycle_anywhere():
    graph = import_graph()
    bad = circles(graph)
    report = []
    for comp in bad:
        report.append("import cycle among: " + ", ".join(comp))
        report.append(_describe(graph, _cycle_through(graph, comp[0])))
    assert not bad, "collkit's modules may not import each other in a circle:\n" + "\n".join(report)
