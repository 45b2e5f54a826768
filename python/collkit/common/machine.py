"""This machine's resources, for estimates made before anything launches."""

from __future__ import annotations

import os
from pathlib import Path

MARGIN = 0.8   # an estimate may use at most this share of MemAvailable


def available_memory(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """MemAvailable in bytes, or None where the kernel does not say."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def fits(need: float, avail: int | None) -> bool:
    """Whether an estimate fits in MARGIN of the available memory (unknown: yes)."""
    return avail is None or need <= avail * MARGIN
