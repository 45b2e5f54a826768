"""`collkit --version`: the version (python/collkit/__init__.py, its one
home) and the source it was built from."""

from __future__ import annotations

import subprocess

from collkit import __version__
from collkit.common.paths import checkout_root, package_root


def source() -> str:
    """A checkout's commit, asked of git (an sdist made in the checkout leaves
    its stamp there, stale after the next commit); else the stamp an sdist or
    a package build left in the package (python/collkit/SOURCE)."""
    root = checkout_root()
    if root is not None:
        try:
            commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                                    capture_output=True, text=True, timeout=10).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            commit, dirty = "", ""
        if commit:
            return f"checkout {root}, commit {commit}" + (" with uncommitted changes" if dirty else "")
    try:
        text = (package_root() / "SOURCE").read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    if text:
        return text
    return f"checkout {root}" if root is not None else "unknown source"


def describe() -> str:
    return f"collkit {__version__} ({source()})"
