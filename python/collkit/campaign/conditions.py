"""What a campaign's calls are measured under: [measure] (or a [[case]]'s) `conditions`.

    [measure]
    conditions = "program"          # "synchronised" (default) | "program"
    gap_us = 12.5                   # program: each rank's time between leaving one call and
                                    # arriving at the next, common to all ranks (0 to 1e6; default 0)
    skew_us = [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],           # program: per rank of the launch,
               [0, 20, 40, 60, 80, 100, 120, 140, 160, 180, 200]]  # its arrival after the call's
                                    # first arrival at 0, 10, ..., 100 % (us, non-decreasing, 0 to 1e6)

"synchronised" is what collkit-bench always measured: every iteration separated
(`sync`), the slowest rank of calls that start together. "program" runs the
iterations back to back, and before each call every rank waits gap_us plus a
draw from its own skew distribution (docs/bench-protocol.md, "Program conditions"),
keeping every rank's arrival and exit (granularity "ranks" is forced), so that the
records hold what the call costs amid the program's imbalance and pipelining, and
its working part (campaign/working.py).

This module is the one home of the setting's shape: its checks (one line each,
`UserError`), its points-file fields, and its form in a record: `{"mode":
"synchronised"}` or `{"mode": "program", "gap_us": G, "skew_us": [[...], ...]}`;
above RECORD_RANKS ranks the per-rank lists become a digest (`skew_ranks`,
`skew_sha256` of the lists as compact JSON, and `skew_us_max`, the largest value of
each quantile over the ranks), since every record of a launch would repeat the
same thousands of numbers that the campaign's spec already holds whole."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

from collkit.common.errors import UserError, did_you_mean
from collkit.library import registry

MODES = ("synchronised", "program")
KEYS = ("conditions", "gap_us", "skew_us")
MAX_US = 1e6             # collkit-bench's bound (bench/conditions.h, COND_MAX_US)
RECORD_RANKS = 64        # up to this many ranks a record keeps the lists whole (704 numbers)


@dataclass(frozen=True)
class Conditions:
    mode: str = "synchronised"
    gap_us: float = 0.0
    skew_us: tuple[tuple[float, ...], ...] = ()   # program: one row of quantiles per rank (registry.skew_quantiles)

    @property
    def program(self) -> bool:
        return self.mode == "program"

    def points_fields(self) -> list[str]:
        """The points-file tokens (none for synchronised: the default's lines stay as they were)."""
        if not self.program:
            return []
        rows = ";".join(",".join(repr(float(v)) for v in row) for row in self.skew_us)
        return ["conditions=program", f"gap_us={float(self.gap_us)!r}", f"skew_us={rows}"]

    def to_json(self) -> dict:
        """The whole setting (resolved.json's points)."""
        if not self.program:
            return {"mode": self.mode}
        return {"mode": self.mode, "gap_us": self.gap_us, "skew_us": [list(r) for r in self.skew_us]}

    def record(self) -> dict:
        """The setting as a record keeps it (the digest above RECORD_RANKS ranks)."""
        if not self.program or len(self.skew_us) <= RECORD_RANKS:
            return self.to_json()
        lists = [list(r) for r in self.skew_us]
        digest = hashlib.sha256(json.dumps(lists, separators=(",", ":")).encode()).hexdigest()
        return {"mode": self.mode, "gap_us": self.gap_us, "skew_ranks": len(lists), "skew_sha256": digest,
                "skew_us_max": [max(r[k] for r in lists) for k in range(registry.skew_quantiles())]}

    @classmethod
    def from_json(cls, d: object) -> "Conditions":
        """to_json()'s (or collkit-bench's record field's) inverse; absent: synchronised."""
        if not isinstance(d, dict) or d.get("mode") != "program":
            return cls()
        return cls("program", float(d.get("gap_us", 0.0)),
                   tuple(tuple(float(v) for v in row) for row in d.get("skew_us") or ()))


SYNCHRONISED = Conditions()


def record_form(rec_conditions: object) -> dict:
    """A record's `conditions` field: collkit-bench's (program) in the record's form,
    {"mode": "synchronised"} where the bench wrote none (the default, and every
    record made before the field existed)."""
    if isinstance(rec_conditions, dict) and rec_conditions.get("mode") == "program":
        if "skew_us" in rec_conditions:
            return Conditions.from_json(rec_conditions).record()
        return dict(rec_conditions)          # already a digest
    return SYNCHRONISED.to_json()


# Two settings are the same when every number agrees to this many microseconds:
# a spec writes them with 10 significant digits and collkit-bench's records with
# %.10g, so a setting that went spec -> bench -> record comes back within it.
SAME_US = 1e-3


def matches(record_conditions: dict, expected: Conditions) -> bool:
    """Whether a record (its `conditions`, record_form's shape) was measured under
    `expected`: the same mode, and for program conditions the same gap and skew (whole
    lists, or above RECORD_RANKS the digest's rank count and per-quantile maxima)."""
    rec = record_form(record_conditions)
    if rec.get("mode") != expected.mode:
        return False
    if not expected.program:
        return True
    want = expected.record()
    if abs(float(rec.get("gap_us", -1.0)) - want["gap_us"]) > SAME_US:
        return False

    def close(a: object, b: list) -> bool:
        return (isinstance(a, list) and len(a) == len(b)
                and all(isinstance(x, (int, float)) and abs(float(x) - y) <= SAME_US for x, y in zip(a, b)))
    if "skew_us" in want:
        got = rec.get("skew_us")
        return isinstance(got, list) and len(got) == len(want["skew_us"]) and all(
            close(g, w) for g, w in zip(got, want["skew_us"]))
    return rec.get("skew_ranks") == want["skew_ranks"] and close(rec.get("skew_us_max"), want["skew_us_max"])


def mode_of(rec: dict) -> str:
    """The conditions a stored record was measured under (absent: synchronised)."""
    c = rec.get("conditions")
    return "program" if isinstance(c, dict) and c.get("mode") == "program" else "synchronised"


def _raise(msg: str):
    raise UserError(msg)


def _us(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _raise(f"{what} must be a number of microseconds, not {value!r}")
    if not math.isfinite(value) or not 0 <= value <= MAX_US:
        _raise(f"{what} must be a finite number of microseconds from 0 to 1e6, not {value!r}")
    return float(value)


def _skew(value: object, where: str) -> tuple[tuple[float, ...], ...]:
    what = f"{where}.skew_us"
    n = registry.skew_quantiles()
    shape = f"a list with one list per rank of {n} quantiles (0, 10, ..., 100 %) in microseconds"
    if not isinstance(value, list) or not value or not all(isinstance(r, list) for r in value):
        _raise(f"{what} must be {shape}, not {value!r}"[:300])
    rows = []
    for rank, row in enumerate(value):
        if len(row) != n:
            _raise(f"{what} rank {rank}: {len(row)} values; give {n} (the 0, 10, ..., 100 % quantiles)")
        vals = tuple(_us(v, f"{what} rank {rank}") for v in row)
        for k in range(1, n):
            if vals[k] < vals[k - 1]:
                _raise(f"{what} rank {rank}: quantiles must not decrease ({vals[k - 1]:g} at {10 * (k - 1)} %, "
                       f"then {vals[k]:g} at {10 * k} %)")
        rows.append(vals)
    return tuple(rows)


def parse(raw: dict, where: str, inherited: Conditions | None = None) -> Conditions | None:
    """The conditions keys of a [measure] table or a [[case]] (where: "measure" or
    "case"); None when the table sets none of them. A case that sets only gap_us or
    skew_us takes the rest from `inherited` (the [measure]'s)."""
    if not any(k in raw for k in KEYS):
        return None
    base = inherited or SYNCHRONISED
    mode = raw.get("conditions", base.mode if ("gap_us" in raw or "skew_us" in raw) else "synchronised")
    if not (isinstance(mode, str) and mode in MODES):
        _raise(f"unknown {where}.conditions {mode!r}{did_you_mean(str(mode), MODES)}; choose one of "
               f"{', '.join(MODES)}")
    if mode == "synchronised":
        for k in ("gap_us", "skew_us"):
            if k in raw:
                _raise(f"{where}.{k} applies to conditions = \"program\" only; set {where}.conditions = "
                       f"\"program\" or remove {k}")
        return SYNCHRONISED
    gap = _us(raw["gap_us"], f"{where}.gap_us") if "gap_us" in raw else (base.gap_us if base.program else 0.0)
    if "skew_us" in raw:
        skew = _skew(raw["skew_us"], where)
    elif base.program:
        skew = base.skew_us
    else:
        _raise(f"{where}.conditions = \"program\" needs {where}.skew_us: per rank of the launch, its "
               f"{registry.skew_quantiles()} arrival quantiles in microseconds (all zeros: no skew; collkit spec --from-profile "
               "writes them)")
    return Conditions("program", gap, skew)


def check_ranks(c: Conditions, ranks: tuple[int, ...], where: str) -> None:
    """Program conditions give one skew row per rank: every rank count they apply to must be theirs."""
    if not c.program:
        return
    wrong = [r for r in ranks if r != len(c.skew_us)]
    if wrong:
        _raise(f"{where}.skew_us gives {len(c.skew_us)} ranks' quantiles, but it applies to ranks = "
               f"{list(ranks)}; give one list per rank of a single rank count (a [[case]] per rank count, "
               "each with its own skew_us)")


def check_measure(c: Conditions, sync: str, granularity: str, where: str) -> None:
    """What program conditions cannot go with: a separation of iterations (there is
    none) or a granularity that drops the per-rank planes (the working part needs them)."""
    if not c.program:
        return
    if sync != "dissemination":   # the default, which program conditions leave to the agreements
        _raise(f"measure.sync = \"{sync}\" separates iterations, and {where}.conditions = \"program\" runs them "
               "back to back; remove measure.sync")
    if granularity == "none":
        _raise(f"measure.granularity = \"none\" drops the per-rank arrivals and exits that {where}.conditions = "
               "\"program\" records; remove it (program conditions keep every rank's planes)")
