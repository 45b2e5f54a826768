"""The format of collkit's Intel MPI tuning file: lines of Intel's own
``I_MPI_ADJUST_<COLL>=<presetid>:<l>-<m>;...`` settings (its developer reference,
"I_MPI_ADJUST Family Environment Variables"), each optionally for some process counts
only (``@4 I_MPI_ADJUST_ALLREDUCE=...``). A `tuned:FILE` launch of p ranks puts the
settings that hold at p into the environment of every rank (backends/impi.py);
docs/tuning-files.md, "Intel MPI".

Why a file of variables: they are what Intel documents for a user's choice, and
what the task of this format asked for. Intel MPI 2021.19 does read a JSON tree itself
(I_MPI_TUNING=FILE, mpitune's output format: coll=Allreduce -> ppn=-1 -> comm_size=N
-> comm_id=-1 -> msg_size=<upper bound> -> ALLREDUCE=<preset>; checked here: its size
thresholds and comm sizes are followed, and a malformed file is ignored without a
word): collkit writes it too, as the format `impi-json` (backends/impi_tree.py).
Preset 0 is Intel's built-in choice, not always the .dat's: at 5 ranks and 4096 ints,
I_MPI_ADJUST_ALLREDUCE=0 ran another schedule than a plain run (impi_tree.py).
I_MPI_TUNING_BIN takes only the binary ``tuning_*.dat`` (a JSON file there: "was not
loaded").

Why the process count stands before the variable and not in Intel's ``@<p>-<q>``:
checked on 2021.19 (shm, 4 ranks, the logging op of tests/python/test_impi.py), a
value with ``@`` conditions ignores their message sizes (the last preset given for the
process count runs at every size), while a value of size conditions alone is
followed: the first item (file order) whose upper bound is at least the message size
runs, the lower bounds are not read, and a size above every bound runs the last item.
So collkit writes, per process count, size conditions that ascend without a gap from 0
to MAX_BOUND (what runs is then what the file says) and refuses any other value.

Grammar:

    line    := '#' comment | ['@' p ['-' q]] VARIABLE '=' value   (value may be in double quotes)
    value   := presetid | item (';' item)*
    item    := presetid ':' l '-' m

numbers without leading zeros; 0 is the library's own choice. campaign/tuning.py tells
such a file by its content and checks it here."""

from __future__ import annotations

import re
from dataclasses import dataclass

from collkit.common.errors import UserError

FORMAT = "impi"          # `collkit tune --format`, TuningFile.library

# Intel's I_MPI_ADJUST_<opname> stems (developer reference 2021), blocking and
# nonblocking (I-prefixed); a name outside them is a typo Intel would ignore.
_STEMS = ("ALLGATHER", "ALLGATHERV", "ALLREDUCE", "ALLTOALL", "ALLTOALLV", "ALLTOALLW", "BARRIER", "BCAST",
          "EXSCAN", "GATHER", "GATHERV", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "REDUCE", "SCAN", "SCATTER",
          "SCATTERV")
STEMS = frozenset(_STEMS) | frozenset("I" + s for s in _STEMS)
VARIABLE_PREFIX = "I_MPI_ADJUST_"
# 2021.19 refuses a larger bound ("Incorrect adjust value: ALLREDUCE=8:4096-2147483648,
# will be ignored"): it reads them as C ints
MAX_BOUND = 2**31 - 1

_NUMBER = r"(?:0|[1-9][0-9]{0,9})"
_LINE = re.compile(rf"\s*(?:@({_NUMBER})(?:-({_NUMBER}))?\s+)?(I_MPI_ADJUST_[A-Z_]+)\s*=\s*(.*?)\s*")
_ITEM = re.compile(rf"({_NUMBER})(?::({_NUMBER})-({_NUMBER}))?")


@dataclass(frozen=True)
class Item:
    preset: int
    bytes_lo: int
    bytes_hi: int


@dataclass(frozen=True)
class Setting:
    variable: str
    procs: tuple[int, int] | None       # the process counts it is for; None: every count
    items: tuple[Item, ...]

    def holds(self, ranks: int) -> bool:
        return self.procs is None or self.procs[0] <= ranks <= self.procs[1]

    def value(self) -> str:
        if len(self.items) == 1 and (self.items[0].bytes_lo, self.items[0].bytes_hi) == (0, MAX_BOUND):
            return str(self.items[0].preset)
        return ";".join(f"{i.preset}:{i.bytes_lo}-{i.bytes_hi}" for i in self.items)

    def line(self) -> str:
        if self.procs is None:
            qualifier = ""
        elif self.procs[0] == self.procs[1]:
            qualifier = f"@{self.procs[0]} "
        else:
            qualifier = f"@{self.procs[0]}-{self.procs[1]} "
        return f"{qualifier}{self.variable}={self.value()}"


def is_adjust_file(text: str) -> bool:
    """Whether `text` claims to be such a file: its first line that is not a comment
    sets an I_MPI_ADJUST_ variable (read() then checks every line)."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return _LINE.fullmatch(stripped) is not None or stripped.startswith(VARIABLE_PREFIX)
    return False


def parse_value(value: str, where: str) -> tuple[Item, ...]:
    """A variable's value; UserError naming the fault where 2021.19 would not run
    what it says (see the module's docstring)."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    if "@" in value:
        raise UserError(f"{where}: '{value[:60]}' gives process counts inside the value, where Intel MPI 2021.19 "
                        "ignores the message sizes; put them before the variable: @4 I_MPI_ADJUST_...=8:0-4095;...")
    raw_items = value.split(";")
    items: list[Item] = []
    for raw in raw_items:
        m = _ITEM.fullmatch(raw)
        if m is None:
            raise UserError(f"{where}: '{raw}' is not <presetid>:<l>-<m> (numbers without leading zeros) in "
                            f"'{value[:60]}'")
        preset, lo, hi = m.groups()
        if lo is None:
            if len(raw_items) > 1:
                raise UserError(f"{where}: preset {preset} has no size range in a ';' list; give every preset of "
                                "a list its <l>-<m>")
            items.append(Item(int(preset), 0, MAX_BOUND))
            continue
        item = Item(int(preset), int(lo), int(hi))
        expected = items[-1].bytes_hi + 1 if items else 0
        # Intel reads only the upper bounds, first to last: ranges that start where
        # the previous ended make that the same as the ranges written
        if item.bytes_lo != expected or item.bytes_hi < item.bytes_lo or item.bytes_hi > MAX_BOUND:
            raise UserError(f"{where}: '{raw}': size ranges must ascend without a gap from 0 to {MAX_BOUND} "
                            f"(this one should start at {expected}); Intel MPI reads only their upper bounds")
        items.append(item)
    if items[-1].bytes_hi != MAX_BOUND:
        raise UserError(f"{where}: the last size range ends at {items[-1].bytes_hi}; end it at {MAX_BOUND} "
                        "(Intel MPI runs the last preset for every larger size anyway)")
    return tuple(items)


def read(text: str, where: str) -> tuple[Setting, ...]:
    """The file's settings in file order; UserError naming the line."""
    out: list[Setting] = []
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _LINE.fullmatch(line)
        if m is None:
            raise UserError(f"{where}:{n}: '{stripped[:60]}' is not [@<p>[-<q>]] I_MPI_ADJUST_<COLL>=<value>; "
                            "an Intel MPI tuning file holds only such lines and '#' comments")
        plo, phi, name, value = m.groups()
        if name[len(VARIABLE_PREFIX):] not in STEMS:
            raise UserError(f"{where}:{n}: {name} is not one of Intel MPI's I_MPI_ADJUST_<opname> variables "
                            "(I_MPI_ADJUST_ALLREDUCE, ..._BCAST, ...)")
        procs = None if plo is None else (int(plo), int(phi if phi is not None else plo))
        if procs is not None and not 1 <= procs[0] <= procs[1]:
            raise UserError(f"{where}:{n}: process counts @{procs[0]}-{procs[1]} must be 1 or more and ascend")
        setting = Setting(name, procs, parse_value(value, f"{where}:{n}: {name}"))
        for other in out:
            if other.variable == name and _overlap(other.procs, procs):
                raise UserError(f"{where}:{n}: {name} is already set for some of these process counts (an earlier "
                                "line); give each count one line")
        out.append(setting)
    if not out:
        raise UserError(f"{where}: the file sets no I_MPI_ADJUST_<COLL> variable; it holds no rules")
    return tuple(out)


def _overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is None or b is None or (a[0] <= b[1] and b[0] <= a[1])


def environment(settings: tuple[Setting, ...], ranks: int | None, where: str) -> dict[str, str]:
    """The variables a launch of `ranks` processes gets; `ranks` None (a launch whose
    process count collkit does not know): only a file without per-count lines."""
    if ranks is None:
        counted = next((s for s in settings if s.procs is not None), None)
        if counted is not None:
            raise UserError(f"{where}: its lines are per process count (@{counted.procs[0]} ...), and this run's "
                            "count is not known to collkit; measure the file in a campaign (tuned:FILE) instead")
        return {s.variable: s.value() for s in settings}
    return {s.variable: s.value() for s in settings if s.holds(ranks)}


def chosen(items: tuple[Item, ...], nbytes: int) -> int:
    """The preset 2021.19 runs for a message of `nbytes` (its message size): the first
    item whose upper bound is at least that, else the last."""
    return next((i.preset for i in items if nbytes <= i.bytes_hi), items[-1].preset)


def collectives(settings: tuple[Setting, ...]) -> tuple[str, ...]:
    """The collectives the file sets, by Intel's names in lower case (reduce_scatter_block, ...)."""
    return tuple(dict.fromkeys(s.variable[len(VARIABLE_PREFIX):].lower() for s in settings))


def broken(text: str, preset: int) -> str:
    """The file with every preset id set to `preset` (tune/proof.py's broken copy)."""
    out = []
    for setting in read(text, "the file"):
        items = tuple(Item(preset, i.bytes_lo, i.bytes_hi) for i in setting.items)
        out.append(Setting(setting.variable, setting.procs, items).line())
    return "\n".join(out) + "\n"
