"""The autotuner's defaults and bounds, read from the one place the shim
compiles them from (preload/autotune_settings.h, its `#define` lines), so that
`collkit preload --autotune`'s help, its checks and the shim agree. The header
ships with collkit: in a checkout under preload/, in an installed package
under collkit/native/src/preload/ (pyproject.toml's force-include)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from collkit.common.errors import UserError
from collkit.common.paths import checkout_root, package_root

HEADER = Path("preload") / "autotune_settings.h"
_DEFINE = re.compile(r'^#define\s+CKP_AUTOTUNE_([A-Z_]+)\s+("[^"]*"|[0-9.]+)\s*$', re.M)


@dataclass(frozen=True)
class Settings:
    out: str
    budget_pct: float
    budget_pct_max: float
    calls: int
    after: int
    calls_max: int
    alpha: float
    alpha_max: float


def header() -> Path:
    root = checkout_root()
    return root / HEADER if root is not None else package_root() / "native" / "src" / HEADER


@lru_cache(maxsize=1)
def settings() -> Settings:
    path = header()
    try:
        found = {m.group(1): m.group(2) for m in _DEFINE.finditer(path.read_text())}
    except OSError as e:
        raise UserError(f"cannot read {path} ({e.strerror}): collkit's installation is incomplete; "
                        "install it again (pip install)") from None
    try:
        return Settings(out=found["OUT"].strip('"'), budget_pct=float(found["BUDGET_PCT"]),
                        budget_pct_max=float(found["BUDGET_PCT_MAX"]), calls=int(found["CALLS"]),
                        after=int(found["AFTER"]), calls_max=int(found["CALLS_MAX"]),
                        alpha=float(found["ALPHA"]), alpha_max=float(found["ALPHA_MAX"]))
    except (KeyError, ValueError):
        raise UserError(f"{path} lacks one of the autotuner's settings: collkit's installation is broken; "
                        "install it again (pip install)") from None
