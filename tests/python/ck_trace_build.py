"""The built ck_trace that the traffic, link-load and parity tests run, and
their skip marker where no build exists."""

from pathlib import Path

import pytest

from collkit.common.paths import build_dir


def ck_trace() -> Path | None:
    for mpi in ("openmpi", "mpich"):
        path = build_dir(mpi) / "tools" / "trace" / "ck_trace"
        if path.is_file():
            return path
    return None


needs_ck_trace = pytest.mark.skipif(ck_trace() is None,
                                    reason="ck_trace is not built (build/<mpi>/tools/trace/ck_trace)")
