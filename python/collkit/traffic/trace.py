"""Message traces of libcollkit algorithms, as ck_trace prints them.

``ck_trace`` executes an algorithm's real C code rank by rank and prints each
trace as a header line and one line per message::

    # trace collective=bcast algorithm=binomial_doubling ranks=8 count=8 root=0 dtype=int8 bytes_per_element=1 messages=7
    0 4 8 0          (messages: src dst bytes step; step = index of the send among src's sends)
    0 4 8            (pairs: src dst bytes, summed over the pair's messages)

A trace that could not be made prints ``# error collective=... reason=...``.
This module turns that text into :class:`Trace` arrays; running the program
and caching are in :mod:`collkit.traffic.tracer`."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from collkit.library import registry

FORMATS = ("messages", "pairs")


def rooted(collective: str) -> bool:
    """Whether the collective takes a root (its descriptor's has_root)."""
    return registry.collective(collective).has_root


def blocked(collective: str) -> bool:
    """Whether the count is per block (n = p blocks) rather than the whole vector."""
    return registry.collective(collective).per_block


class TraceFormatError(ValueError):
    """ck_trace printed something this parser does not understand."""


@dataclass(frozen=True)
class TraceKey:
    """Everything that makes a trace distinct (the cache adds the library version)."""

    collective: str
    algorithm: str
    ranks: int
    count: int
    root: int = 0
    dtype: str = "int8"
    fmt: str = "pairs"

    def batch_line(self) -> str:
        return f"{self.collective} {self.algorithm} {self.ranks} {self.count} {self.root} {self.dtype} {self.fmt}"

    def args(self) -> list[str]:
        return ["--collective", self.collective, "--algorithm", self.algorithm, "--ranks", str(self.ranks),
                "--count", str(self.count), "--root", str(self.root), "--dtype", self.dtype,
                "--format", self.fmt]

    def describe(self) -> str:
        root = f" root {self.root}" if rooted(self.collective) else ""
        return f"{self.collective}/{self.algorithm} at p = {self.ranks}, count {self.count}{root}"


@dataclass(frozen=True)
class Trace:
    key: TraceKey
    bytes_per_element: int
    messages: int          # messages sent (for pairs: before summing)
    src: np.ndarray        # int32
    dst: np.ndarray        # int32
    nbytes: np.ndarray     # int64
    step: np.ndarray | None  # int32, messages format only

    @property
    def n(self) -> int:
        """The vector size in bytes that results are reported in multiples of."""
        return vector_bytes(self.key.collective, self.key.ranks, self.key.count, self.bytes_per_element)

    @property
    def total_bytes(self) -> int:
        return int(self.nbytes.sum())


@dataclass(frozen=True)
class TraceFailure:
    key: TraceKey | None
    reason: str


def vector_bytes(collective: str, ranks: int, count: int, element: int) -> int:
    """n as docs/algorithms.md uses it: the whole vector; for the block
    collectives (gather, scatter, allgather, reduce-scatter, alltoall) the p
    blocks of a rank's buffer together."""
    return registry.collective(collective).vector_bytes(count * element, ranks)


def whole_vector_algorithms() -> frozenset[tuple[str, str]]:
    """(collective, algorithm) of the vector algorithms that only ever send the
    whole vector: the registry's whole_vector trait (CK_TRAIT_WHOLE_VECTOR).
    Their bytes are a multiple of n whatever the count, so they are traced at
    the small count p; tests/python/test_traffic.py checks that their traces
    scale with the count."""
    return frozenset((a.collective, a.name) for a in registry.load() if a.whole_vector)


def trace_count(collective: str, ranks: int, algorithm: str | None = None) -> int:
    """The count a trace is made with (int8, so bytes = count).

    Block collectives (gather, scatter, allgather, reduce_scatter, alltoall):
    one element per block, n = p bytes; every algorithm moves whole blocks.
    Vector collectives (bcast, reduce, allreduce): lcm(p, p'), p' =
    2^floor(log2 p): a multiple of p for the algorithms that cut the vector
    into p blocks (scatter-allgather, ring) and of p' and every smaller power
    of two for those that halve it over a power-of-two core (Rabenseifner,
    Bine and Swing bandwidth, binary blocks), so every block is whole. The
    whole-vector algorithms (whole_vector_algorithms()) use count p: the same figures in
    multiples of n, and a 2,047-rank trace copies 2 KiB per rank, not 2 MiB."""
    p = max(ranks, 1)
    if blocked(collective):
        return 1
    if algorithm is not None and (collective, algorithm) in whole_vector_algorithms():
        return p
    pow2 = 1 << (p.bit_length() - 1)
    return math.lcm(p, pow2)


def _fields(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    rest = text
    if " reason=" in " " + rest:
        head, _, reason = (" " + rest).partition(" reason=")
        out["reason"] = reason.strip()
        rest = head
    for token in rest.split():
        k, sep, v = token.partition("=")
        if not sep:
            raise TraceFormatError(f"expected key=value, got '{token}'")
        out[k] = v
    return out


def _int(fields: dict[str, str], name: str, line: str) -> int:
    try:
        return int(fields[name])
    except (KeyError, ValueError):
        raise TraceFormatError(f"header without a valid {name}: '{line}'") from None


def _key_of(fields: dict[str, str], line: str, fmt: str) -> TraceKey:
    try:
        return TraceKey(fields["collective"], fields["algorithm"], _int(fields, "ranks", line),
                        _int(fields, "count", line), int(fields.get("root", "0")), fields.get("dtype", "int8"), fmt)
    except (KeyError, ValueError):
        raise TraceFormatError(f"incomplete header: '{line}'") from None


def _numbers(body: str) -> np.ndarray:
    if not body.strip():
        return np.empty(0, dtype=np.int64)
    with warnings.catch_warnings():
        # Older numpy warns and stops at the first thing that is not a number
        # (the caller's length check catches that); newer numpy raises.
        warnings.simplefilter("ignore")
        try:
            return np.fromstring(body, dtype=np.int64, sep=" ")
        except ValueError:
            raise TraceFormatError("a message line that is not whole numbers") from None


def parse_traces(text: str, fmt: str = "messages") -> list[Trace | TraceFailure]:
    """Every trace and error of ck_trace's output, in order. ``fmt`` says which
    format was asked for (the header does not repeat it)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt}")
    cols = 4 if fmt == "messages" else 3
    out: list[Trace | TraceFailure] = []
    pos, end_all = 0, len(text)
    while pos < end_all:
        eol = text.find("\n", pos)
        if eol < 0:
            eol = end_all
        line = text[pos:eol].strip()
        if line.startswith("# trace "):
            fields = _fields(line[len("# trace "):])
            key = _key_of(fields, line, fmt)
            nxt = text.find("\n#", eol)
            body_end = end_all if nxt < 0 else nxt + 1
            nums = _numbers(text[eol + 1:body_end])
            messages = _int(fields, "messages", line)
            rows = nums.size // cols
            if nums.size % cols or (fmt == "messages" and rows != messages):
                raise TraceFormatError(f"{key.describe()}: header says {messages} messages, "
                                       f"body has {nums.size} numbers, not {cols} per line")
            table = nums.reshape(rows, cols)
            out.append(Trace(
                key=key,
                bytes_per_element=_int(fields, "bytes_per_element", line),
                messages=messages,
                src=table[:, 0].astype(np.int32),
                dst=table[:, 1].astype(np.int32),
                nbytes=table[:, 2].copy(),
                step=table[:, 3].astype(np.int32) if cols == 4 else None,
            ))
            pos = body_end
        elif line.startswith("# error "):
            fields = _fields(line[len("# error "):])
            key = None
            try:
                key = _key_of(fields, line, fmt)
            except TraceFormatError:
                pass
            out.append(TraceFailure(key, fields.get("reason", line)))
            pos = eol + 1
        elif not line or line.startswith("#"):
            pos = eol + 1
        else:
            raise TraceFormatError(f"unexpected line outside a trace: '{line[:80]}'")
    return out


def validate(trace: Trace) -> None:
    """Ranks inside 0..p-1 and no negative byte counts, or TraceFormatError."""
    p = trace.key.ranks
    for name, arr in (("source", trace.src), ("destination", trace.dst)):
        if arr.size and (arr.min() < 0 or arr.max() >= p):
            raise TraceFormatError(f"{trace.key.describe()}: a {name} rank outside 0..{p - 1}")
    if trace.nbytes.size and trace.nbytes.min() < 0:
        raise TraceFormatError(f"{trace.key.describe()}: a negative byte count")
