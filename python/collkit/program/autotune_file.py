"""What the preload's autotuner decided (issue #42; docs/preload.md, "Autotune"),
as the rank files carry it ("autotune", preload/autotune_write.c) and the
profile keeps it: per class its candidates with their exploration calls, time,
median and verdict, its choice and the time the candidates not chosen took.
`collkit profile --autotune` shows it (table)."""

from __future__ import annotations

import math
import textwrap
from dataclasses import asdict, dataclass

from collkit.common.table import render

STATES = ("settled", "paused", "exploring")
VERDICTS = ("chosen", "out", "racing")


class BadAutotune(ValueError):
    """A malformed "autotune" object: the message names the field."""


@dataclass(frozen=True)
class Candidate:
    name: str
    calls: int
    time_s: float
    median_s: float
    ci_s: tuple[float, float]
    verdict: str          # chosen | out | racing
    out_look: int         # the look that eliminated it (0: never)
    p: float              # its test's p-value when out (1 otherwise)


@dataclass(frozen=True)
class TunedClass:
    collective: str
    comm_size: int
    world: bool
    bytes: int
    datatype: str | None
    op: str | None
    root: int | None
    in_place: bool
    calls: int
    state: str            # settled | paused | exploring
    why: str
    choice: str           # what it runs from now on ("library" when undecided)
    explored: int
    explore_s: float      # exploration's working time (after the arrivals each call depends on)
    wait_s: float         # and its waiting for late ranks: recorded, never raced on
    lost_s: float         # exploration's working time on the candidates not chosen
    cost_s: float
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True)
class Autotune:
    out: str
    budget: float         # a fraction of the class's time
    alpha: float
    max_calls: int
    classes: tuple[TunedClass, ...]

    def to_json(self) -> dict:
        return asdict(self)


def _num(d: dict, key: str, where: str, integer: bool = False) -> float:
    v = d.get(key)
    ok = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok or not math.isfinite(v):
        raise BadAutotune(f"{where}: '{key}' is not {'an integer' if integer else 'a finite number'}")
    return v


def _str(d: dict, key: str, where: str, nullable: bool = False) -> str | None:
    v = d.get(key)
    if v is None and nullable:
        return None
    if not isinstance(v, str):
        raise BadAutotune(f"{where}: '{key}' is not a string")
    return v


def _candidate(raw: object, where: str) -> Candidate:
    if not isinstance(raw, dict):
        raise BadAutotune(f"{where} is not an object")
    ci = raw.get("ci_s")
    if not isinstance(ci, list) or len(ci) != 2 or not all(isinstance(x, (int, float)) and math.isfinite(x)
                                                           for x in ci):
        raise BadAutotune(f"{where}: 'ci_s' is not two numbers")
    verdict = _str(raw, "verdict", where)
    if verdict not in VERDICTS:
        raise BadAutotune(f"{where}: 'verdict' is not one of {', '.join(VERDICTS)}")
    return Candidate(name=_str(raw, "name", where), calls=int(_num(raw, "calls", where, True)),
                     time_s=_num(raw, "time_s", where), median_s=_num(raw, "median_s", where),
                     ci_s=(float(ci[0]), float(ci[1])), verdict=verdict,
                     out_look=int(_num(raw, "out_look", where, True)), p=_num(raw, "p", where))


def _class(raw: object, where: str) -> TunedClass:
    if not isinstance(raw, dict):
        raise BadAutotune(f"{where} is not an object")
    state = _str(raw, "state", where)
    if state not in STATES:
        raise BadAutotune(f"{where}: 'state' is not one of {', '.join(STATES)}")
    cands = raw.get("candidates")
    if not isinstance(cands, list):
        raise BadAutotune(f"{where}: 'candidates' is not a list")
    root = raw.get("root")
    if root is not None and (isinstance(root, bool) or not isinstance(root, int)):
        raise BadAutotune(f"{where}: 'root' is not an integer or null")
    for key in ("world", "in_place"):
        if not isinstance(raw.get(key), bool):
            raise BadAutotune(f"{where}: '{key}' is not true or false")
    return TunedClass(
        collective=_str(raw, "collective", where), comm_size=int(_num(raw, "comm_size", where, True)),
        world=raw["world"], bytes=int(_num(raw, "bytes", where, True)),
        datatype=_str(raw, "datatype", where, True), op=_str(raw, "op", where, True), root=root,
        in_place=raw["in_place"], calls=int(_num(raw, "calls", where, True)), state=state,
        why=_str(raw, "why", where), choice=_str(raw, "choice", where),
        explored=int(_num(raw, "explored", where, True)), explore_s=_num(raw, "explore_s", where),
        wait_s=_num(raw, "wait_s", where),
        lost_s=_num(raw, "lost_s", where), cost_s=_num(raw, "cost_s", where),
        candidates=tuple(_candidate(c, f"{where} candidate {i}") for i, c in enumerate(cands)))


def parse(raw: object) -> Autotune:
    """The "autotune" object of a rank file or a profile; BadAutotune naming the field."""
    if not isinstance(raw, dict):
        raise BadAutotune("'autotune' is not an object")
    classes = raw.get("classes")
    if not isinstance(classes, list):
        raise BadAutotune("autotune: 'classes' is not a list")
    return Autotune(out=_str(raw, "out", "autotune"), budget=_num(raw, "budget", "autotune"),
                    alpha=_num(raw, "alpha", "autotune"), max_calls=int(_num(raw, "max_calls", "autotune", True)),
                    classes=tuple(_class(c, f"autotune class {i}") for i, c in enumerate(classes)))


def _what(c: TunedClass) -> str:
    parts = [c.collective, f"{c.bytes} B", f"p={c.comm_size}" + (" world" if c.world else "")]
    if c.datatype:
        parts.append(f"{c.datatype} {c.op}")
    if c.root is not None:
        parts.append(f"root {c.root}")
    if c.in_place:
        parts.append("in place")
    return " ".join(parts)


def table(a: Autotune, width: int, most: int = 20) -> list[str]:
    """The autotuner's section of `collkit profile`: per explored class (the
    longest exploration first, at most `most`) each candidate's exploration
    calls, time, median and verdict; the class's choice and the time on the
    candidates not chosen; then the classes in words."""
    # candidates are listed once the ranks agreed on some calls (a look): classes with them
    explored = sorted((c for c in a.classes if c.candidates), key=lambda c: -c.explore_s)
    lines = [""] + textwrap.wrap(
        f"autotune: {len(a.classes)} classes, {sum(c.state == 'settled' for c in a.classes)} settled; rules "
        f"written to {a.out} (budget {100 * a.budget:g} %, alpha {a.alpha:g}, at most {a.max_calls} "
        "exploration calls a class)", width)
    rows = []
    for c in explored[:most]:
        for i, k in enumerate(c.candidates):
            verdict = k.verdict if k.verdict != "out" else f"out (look {k.out_look}, p {k.p:.2g})"
            rows.append([_what(c) if i == 0 else "", k.name, str(k.calls), f"{k.time_s:.6f}",
                         f"{k.median_s * 1e6:.3f}", verdict])
        rows.append(["", f"-> {c.choice}" if c.state == "settled" else f"({c.state}: library)", "", "", "",
                     f"{c.lost_s:.6f} s on the others, {c.wait_s:.6f} s waiting"])
    if rows:
        lines.append(render(["class", "candidate", "calls", "time s", "median us", "verdict"], rows,
                            right={2, 3, 4}, width=width))
    if len(explored) > most:
        lines.append(f"... and {len(explored) - most} more explored classes (the profile file has them all)")
    unexplored = len(a.classes) - len(explored)
    if unexplored:
        lines += textwrap.wrap(f"{unexplored} classes reached no decision point (one candidate, started settled "
                               "from --autotune-from rules, or too few calls for a first stage)", width)
    return lines
