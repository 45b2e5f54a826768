"""Writes that never leave a half-written file behind."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """Replace `path` atomically: write a sibling temporary file, fsync, rename."""
    write_bytes(path, text.encode())


def write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` atomically with `data`: a sibling temporary file, fsync, rename."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_json(path: Path, obj: object) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def append_line(path: Path, line: str) -> None:
    """Append one line with a single write and fsync it. A crash can at worst leave
    a torn last line, which readers skip (see read_jsonl)."""
    data = (line.rstrip("\n") + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl(path: Path) -> list[dict]:
    """Every complete JSON object line; a torn or garbled line is skipped."""
    out: list[dict] = []
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out
