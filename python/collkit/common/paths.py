"""Where collkit's own files are: the package, and its source checkout when it
runs from one (``make setup``'s editable install).

Builds of the C parts are found through the registry of known MPIs
(collkit.mpis.known), never by a path of the checkout: an installed collkit
has no checkout. The checkout's build/ keeps what only developers have: the
SimGrid build (build/simgrid) and the ctest trees."""

from __future__ import annotations

import os
from pathlib import Path


def package_root() -> Path:
    """The installed collkit package (python/collkit in a checkout)."""
    return Path(__file__).resolve().parents[1]


def checkout_root() -> Path | None:
    """The source checkout collkit runs from, or None for an installed package."""
    root = package_root().parents[1]
    if package_root() == root / "python" / "collkit" and (root / "CMakeLists.txt").is_file() \
            and (root / "lib").is_dir():
        return root
    return None


def repo_root() -> Path:
    """The checkout; for the developer tools (tests, SimGrid builds) only."""
    root = checkout_root()
    return root if root is not None else package_root().parents[1]


def build_root() -> Path:
    """The checkout's build/ (COLLKIT_BUILD_ROOT overrides): SimGrid's build."""
    env = os.environ.get("COLLKIT_BUILD_ROOT")
    return Path(env) if env else repo_root() / "build"


def build_dir(name: str) -> Path:
    return build_root() / name
