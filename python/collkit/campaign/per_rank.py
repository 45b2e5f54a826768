"""Per-rank records ([measure] granularity = "ranks"): where their matrix is kept.

collkit-bench writes each rank's summaries into the point's record and the full
rank x iteration matrix (planes time_us, arrival_us, exit_us; float32) inline, as
base64 (docs/bench-protocol.md, "Per-rank records"). A campaign keeps the record
small: when a record is added (store.Campaign.add), the matrix moves to a side file

    DIR/ranks/<point id, '/' and ':' as '_'>[.remeasure-N].f32.gz

made smaller in three steps, each measured on an oversubscribed Open MPI point (8
ranks x 500 iterations: 35 KB with none but the last, 18 KB with all three;
docs/benchmarks-log.md):

* the time plane is left out where it is exit - arrival (every sync but `window`,
  whose time runs from the window start; not under the test-only
  COLLKIT_BENCH_TEST_SLOW_START, which adds to the time alone): the reader computes
  it back;
* each float keeps MANTISSA_BITS of its 23 mantissa bits (rounded to nearest): a
  relative error below 2^-17, 8 ns on a 1 ms value, and a time computed back within
  about 2^-16 of the iteration's exit (36 ns at most on that point, whose exits reach
  3.5 ms), far below what the times can resolve (the clock offsets' error bound is
  microseconds, and the iteration noise is larger); the low bytes become zeros;
* the bytes are shuffled (all first bytes, then all second bytes, ...: sign and
  exponent bytes of one point's times hardly vary) and gzip-compressed.

The record keeps `per_rank.matrix` = {planes, stored, shape, dtype, encoding,
mantissa_bits, file, bytes}. The raw launch file (raw/launch-N.jsonl) keeps what
collkit-bench wrote, so --resume can take the record in again.

`matrix()` reads a record's matrix back as a numpy array of shape (3, ranks,
iterations), from the side file or, for a record not yet moved (a raw line), inline."""

from __future__ import annotations

import base64
import gzip
import re
from pathlib import Path

import numpy as np

from collkit.common import atomic

SUBDIR = "ranks"
ENCODING = "byteshuffle+gzip"
PLANES = ("time_us", "arrival_us", "exit_us")
MANTISSA_BITS = 16


def _round_mantissa(a: np.ndarray, bits: int) -> np.ndarray:
    """float32 values rounded to `bits` mantissa bits (nearest, ties away from zero)."""
    u = np.ascontiguousarray(a, dtype="<f4").view("<u4").astype(np.uint64)
    drop = 23 - bits
    u = ((u + (1 << (drop - 1))) >> drop) << drop
    return u.astype("<u4").view("<f4")


def _shuffle(raw: bytes) -> bytes:
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, 4).T.tobytes()


def _unshuffle(data: bytes) -> bytes:
    return np.frombuffer(data, dtype=np.uint8).reshape(4, -1).T.tobytes()


def side_name(point_id: str, remeasure: int = 0) -> str:
    stem = re.sub(r"[^A-Za-z0-9._+-]", "_", point_id)
    return f"{stem}{f'.remeasure-{remeasure}' if remeasure else ''}.f32.gz"


def externalise(rec: dict, campaign_dir: Path) -> dict:
    """The record with its inline matrix moved to its side file (unchanged when it has none)."""
    pr = rec.get("per_rank")
    m = pr.get("matrix") if isinstance(pr, dict) else None
    if not isinstance(m, dict) or "base64" not in m:
        return rec
    shape = tuple(int(x) for x in m["shape"])
    full = np.frombuffer(base64.b64decode(m["base64"]), dtype="<f4").reshape(shape)
    # under `window` the time runs from the window start, not from the rank's entry
    stored = list(PLANES) if rec.get("sync") == "window" else list(PLANES[1:])
    kept = full[[PLANES.index(p) for p in stored]]
    raw = _round_mantissa(kept, MANTISSA_BITS).tobytes()
    name = side_name(str(rec.get("id", "point")), int(rec.get("remeasure", 0) or 0))
    data = gzip.compress(_shuffle(raw), compresslevel=9, mtime=0)
    (campaign_dir / SUBDIR).mkdir(exist_ok=True)
    atomic.write_bytes(campaign_dir / SUBDIR / name, data)
    moved = {k: v for k, v in m.items() if k != "base64"} | {
        "stored": stored, "encoding": ENCODING, "mantissa_bits": MANTISSA_BITS, "file": f"{SUBDIR}/{name}",
        "bytes": len(data)}
    return rec | {"per_rank": pr | {"matrix": moved}}


def matrix(rec: dict, campaign_dir: Path | None) -> np.ndarray | None:
    """(3, ranks, iterations) float32, or None when the record has no readable matrix."""
    pr = rec.get("per_rank")
    m = pr.get("matrix") if isinstance(pr, dict) else None
    if not isinstance(m, dict):
        return None
    try:
        shape = tuple(int(x) for x in m["shape"])
        if "base64" in m:
            return np.frombuffer(base64.b64decode(m["base64"]), dtype="<f4").reshape(shape)
        if campaign_dir is None or m.get("encoding") != ENCODING:
            return None
        stored = [str(p) for p in m.get("stored", PLANES)]
        raw = _unshuffle(gzip.decompress((campaign_dir / str(m["file"])).read_bytes()))
        planes = np.frombuffer(raw, dtype="<f4").reshape((len(stored),) + shape[1:])
        out = np.empty(shape, dtype="<f4")
        for k, name in enumerate(PLANES):
            if name in stored:
                out[k] = planes[stored.index(name)]
        if "time_us" not in stored:
            out[0] = out[2] - out[1]
        return out
    except (OSError, KeyError, TypeError, ValueError, EOFError, gzip.BadGzipFile):
        return None
