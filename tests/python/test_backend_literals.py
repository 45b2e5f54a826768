"""No module of collkit outside backends/ names the nccl backend (issue #52, item 3).

The nccl backend answers the campaign layer through the device-backend protocol
(backends/device.py, listed in backends/devices.py): the spec's keys and tables, the
planner's points and parameters, labels, metadata, `collkit run`'s program, `collkit
list --parameters` and `collkit mpis` loop over that list. A module elsewhere that
names the backend is a branch on it that the protocol should answer instead.

Forbidden, in every python/collkit/**/*.py outside python/collkit/backends/, as the
parser reads it (so comments, which the parser drops, may say NCCL):

* a string constant equal to "nccl" in any case ('nccl', "NCCL", a piece of an f-string):
  the key compared, looked up or stored (`"nccl" in spec.backends`, `table == "nccl"`);
* importing the nccl module (`from collkit.backends import nccl`, `import
  collkit.backends.nccl`, `from collkit.backends.nccl import X`, relative forms);
* an attribute of a bare name `nccl` (`nccl.discover()`): the module used through a
  name bound elsewhere.

Allowed: text that mentions NCCL among other words (docstrings, messages, a help text,
the `collkit build --nccl` option and its `ns.nccl`, the build's `nccl` flag in
mpis/build.py): it names a program or a build, it does not choose a backend."""

from __future__ import annotations

import ast
from pathlib import Path

from import_sources import import_source

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "python" / "collkit"
BACKENDS_DIR = PACKAGE_DIR / "backends"
NAME = "nccl"
MODULE = "collkit.backends.nccl"


def _imports_module(node: ast.AST, package: str) -> bool:
    """Whether an import statement imports collkit.backends.nccl (`package`: the
    importing module's package, for relative imports)."""
    if isinstance(node, ast.Import):
        return any(a.name == MODULE or a.name.startswith(MODULE + ".") for a in node.names)
    if isinstance(node, ast.ImportFrom):
        source = import_source(node, package)
        if source == MODULE or source.startswith(MODULE + "."):
            return True
        return any(f"{source}.{a.name}" == MODULE for a in node.names)
    return False


def findings(text: str, package: str = "collkit") -> list[tuple[int, str]]:
    """(line, what) for every place in the module source `text` that names the backend."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() == NAME:
            found.append((node.lineno, f"the string {node.value!r}"))
        elif _imports_module(node, package):
            found.append((node.lineno, f"an import of {MODULE}"))
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == NAME):
            found.append((node.lineno, f"{NAME}.{node.attr}"))
    return sorted(found)


def _package_of(path: Path) -> str:
    """The package a file's relative imports start from (its folder, for __init__.py too)."""
    return ".".join(("collkit",) + path.parent.relative_to(PACKAGE_DIR).parts)


def test_no_module_outside_backends_names_the_nccl_backend():
    bad = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if BACKENDS_DIR in path.parents:
            continue
        for line, what in findings(path.read_text(encoding="utf-8"), _package_of(path)):
            bad.append(f"{path.relative_to(PACKAGE_DIR.parents[1])}:{line}: {what}")
    assert not bad, ("outside backends/, ask the device backends (backends/devices.py) instead of naming "
                     "nccl:\n" + "\n".join(bad))


def test_the_checker_finds_each_forbidden_form():
    planted = '''"""A docstring may say the nccl backend runs NCCL."""
from collkit.backends import nccl
import collkit.backends.nccl
from collkit.backends.nccl import discover
from . import nccl as n
# a comment naming nccl is fine
if "nccl" in spec.backends:
    table = 'NCCL'
offer = nccl.discover()
label = f"{x}nccl"
flag = ns.nccl
message = "backends.nccl needs an NVIDIA GPU"
'''
    got = findings(planted, package="collkit.backends")
    assert got == [(2, "an import of collkit.backends.nccl"), (3, "an import of collkit.backends.nccl"),
                   (4, "an import of collkit.backends.nccl"), (5, "an import of collkit.backends.nccl"),
                   (7, "the string 'nccl'"), (8, "the string 'NCCL'"), (9, "nccl.discover"),
                   (10, "the string 'nccl'")]


def test_the_checker_passes_what_the_protocol_leaves():
    clean = '''from collkit.backends import devices
for device in devices.chosen(spec.backends):
    points += device.points(spec, platform, _point)
parser.add_argument("--nccl", help="also build collkit-bench-nccl")
key = f"{base}{' nccl' if ns.nccl else ''}"
'''
    assert findings(clean) == []
