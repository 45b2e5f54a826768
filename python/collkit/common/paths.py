"""Where collkit's C build lives.

The package is installed in editable mode from the repository, so the build
directories sit next to it: ``<repo>/build/<mpi>/``. ``COLLKIT_BUILD_ROOT``
points elsewhere (e.g. an out-of-tree build)."""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    # python/collkit/common/paths.py -> repository root
    return Path(__file__).resolve().parents[3]


def build_root() -> Path:
    env = os.environ.get("COLLKIT_BUILD_ROOT")
    return Path(env) if env else repo_root() / "build"


def build_dir(mpi: str) -> Path:
    return build_root() / mpi
