"""What an import statement imports, with relative imports resolved: shared by
the tests that read the package's imports (test_import_cycles.py,
test_backend_literals.py)."""

from __future__ import annotations

import ast


def import_source(node: ast.ImportFrom, package: str) -> str:
    """The module a `from ... import` names (`package`: the importing module's
    package, where a relative import starts)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join(base + ([node.module] if node.module else []))
