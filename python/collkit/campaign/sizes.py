"""Message sizes as people write them: ``8B``, ``64KiB``, ``16MiB``, ranges ``8B..16MiB x2``.

Binary prefixes only (KiB = 1024 B); ``K``/``M``/``G`` and ``KB`` are read as the
binary ones too, because nobody benchmarking collectives means 1000-byte blocks."""

from __future__ import annotations

import re

from collkit.common.errors import UserError

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}
_SIZE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_RANGE = re.compile(r"^\s*([^.\s]+)\s*\.\.\s*([^\sx]+)\s*(?:x\s*(\d+))?\s*$")


def parse_size(text: str | int) -> int:
    """Bytes in one size; UserError on anything else."""
    if isinstance(text, bool):
        raise UserError(f"size {text!r} is not a size; write e.g. 8B, 64KiB or 16MiB")
    if isinstance(text, int):
        if text < 0:
            raise UserError(f"size {text} is negative")
        return text
    m = _SIZE.match(str(text))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _UNITS:
        raise UserError(f"cannot read size '{text}'; write e.g. 8B, 64KiB or 16MiB")
    return int(m.group(1)) * _UNITS[unit]


def parse_sizes(value: object) -> list[int]:
    """A list of sizes, or one range ``LO..HI xF`` (factor F, default 2), or one size."""
    if isinstance(value, list):
        if not value:
            raise UserError("sizes is an empty list")
        out: list[int] = []
        for item in value:
            out.extend(parse_sizes(item) if isinstance(item, str) and ".." in item else [parse_size(item)])
        return sorted(set(out))
    if isinstance(value, str) and ".." in value:
        m = _RANGE.match(value)
        if not m:
            raise UserError(f"cannot read size range '{value}'; write e.g. '8B..16MiB x2'")
        lo, hi = parse_size(m.group(1)), parse_size(m.group(2))
        factor = int(m.group(3) or 2)
        if factor < 2:
            raise UserError(f"size range '{value}': the factor must be at least 2")
        if lo < 1 or hi < lo:
            raise UserError(f"size range '{value}': need 1 <= low <= high")
        sizes, s = [], lo
        while s <= hi:
            sizes.append(s)
            s *= factor
        return sizes
    if isinstance(value, (str, int)):
        return [parse_size(value)]
    raise UserError(f"sizes must be a list or a range string like '8B..16MiB x2', not {value!r}")


def format_size(n: int) -> str:
    """Shortest exact form: 8B, 1KiB, 1536B, 16MiB."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return f"{n}B"
