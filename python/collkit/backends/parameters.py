"""Library parameters a spec may sweep (``[parameters.NAME]``, docs/campaigns.md,
"Library parameters"): what each library says it has, and the check of a spec's values
before anything launches.

Where the names come from, like the algorithms (backends/openmpi.py, backends/mpich.py):

* Open MPI: ``ompi_info --parsable --all --level 9``, every MCA parameter of every
  framework with its type and, where it has them, its enumerators (openmpi.parse);
* MPICH: its CVAR list as ``mpivars`` prints it (mpich.parse), enumerated CVARs with
  their value names;
* NCCL: no tool lists its variables, so a fixed table of the documented ones that
  shape a collective (NCCL's environment-variable documentation); NCCL_ALGO and
  NCCL_PROTO are not in it: ``[backends] nccl`` forces them.

A value must have the parameter's type (an integer type takes integers, in range
for its width; a bool true/false; an enumerated one a listed name or value) and lie
inside collkit's known bounds for it (``BOUNDS``). Values are kept as the strings the
library is given; they travel in point ids and the points file, so only
``[A-Za-z0-9._+-]`` is accepted."""

from __future__ import annotations

import re
from dataclasses import dataclass

from collkit.common.errors import UserError, did_you_mean

# Integer widths as Open MPI names its MCA types (ompi_info's `type` field).
_RANGES = {
    "int": (-2**31, 2**31 - 1),
    "unsigned_int": (0, 2**32 - 1),
    "unsigned_long": (0, 2**64 - 1),
    "unsigned_long_long": (0, 2**64 - 1),
    "size_t": (0, 2**64 - 1),
    "long": (-2**63, 2**63 - 1),
    "long_long": (-2**63, 2**63 - 1),
    "int64_t": (-2**63, 2**63 - 1),
    "uint64_t": (0, 2**64 - 1),
}
_BOOLS = {"true": "1", "false": "0", "1": "1", "0": "0", "yes": "1", "no": "0"}
_SAFE = re.compile(r"^[A-Za-z0-9._+-]+$")

# Bounds the library does not print but enforces or needs. Open MPI's coll/tuned:
# a segment size is bytes (0: one segment), a negative one is undefined; a tree or
# chain fanout above MAXTREEFANOUT (32, ompi/mca/coll/base/coll_base_topo.h) makes
# the tree builder fail and the forced call return an error.
_OMPI_BOUNDS = (
    (re.compile(r"^coll_tuned_\w+_algorithm_segmentsize$"), 0, 2**31 - 1),
    (re.compile(r"^coll_tuned_\w+_algorithm_(tree|chain)_fanout$"), 1, 32),
)

# Open MPI's coll/tuned per-algorithm parameters: "Only has meaning if algorithm is
# forced" (their ompi_info help), so the library's default is not measured once per value.
_OMPI_FORCED_ONLY = re.compile(r"^coll_tuned_\w+_algorithm_\w+$")

# The Open MPI rules file's columns (tune/writers/openmpi.py) that a parameter fills.
RULES_COLUMNS = {"segmentsize": "segsize", "tree_fanout": "fanout", "chain_fanout": "fanout"}


@dataclass(frozen=True)
class Parameter:
    name: str                          # as the library spells it
    kind: str                          # "int" (with lo/hi), "bool", "enum", "string"
    lo: int | None = None
    hi: int | None = None
    choices: tuple[tuple[str, str], ...] = ()   # enum: (value, name) pairs
    forced_only: bool = False          # shapes forced algorithms only: the default is not crossed with it
    readable: bool = True              # the library reports it through MPI_T

    def check(self, value: object, where: str) -> str:
        """The value as the library is given it, or UserError naming `where`."""
        text = self._value(value, where)
        if not _SAFE.match(text):
            raise UserError(f"{where}: {self.name} value {text!r} has characters collkit cannot carry in a "
                            "point id; use letters, digits and . _ + -")
        return text

    def _value(self, value: object, where: str) -> str:
        if isinstance(value, float) or value is None or isinstance(value, (list, dict)):
            raise UserError(f"{where}: {value!r} is not a value of {self.name} ({self.describe()})")
        if self.kind == "bool":
            text = str(value).lower()
            if text not in _BOOLS:
                raise UserError(f"{where}: {value!r} is not a value of {self.name} (true or false)")
            return "true" if _BOOLS[text] == "1" else "false"
        if self.kind == "enum":
            text = str(value).lower() if isinstance(value, bool) else str(value)
            for v, n in self.choices:
                if text in (v, n):
                    return n
            names = [n for _, n in self.choices]
            raise UserError(f"{where}: {self.name} has no value {value!r}{did_you_mean(text, names)}; "
                            f"it takes {', '.join(names)}")
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise UserError(f"{where}: {self.name} takes an integer, not {value!r}")
            if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
                raise UserError(f"{where}: {self.name} = {value} is out of range ({self.describe()})")
            return str(value)
        return str(value).lower() if isinstance(value, bool) else str(value)

    def describe(self) -> str:
        if self.kind == "int":
            return f"an integer from {self.lo} to {self.hi}"
        if self.kind == "enum":
            return "one of " + ", ".join(n for _, n in self.choices)
        return "true or false" if self.kind == "bool" else "a string"


def ompi_parameter(name: str, mca_type: str, enumerators: list[tuple[str, str]]) -> Parameter:
    """An Open MPI MCA parameter from ompi_info's type and enumerators, with BOUNDS."""
    forced_only = bool(_OMPI_FORCED_ONLY.match(name))
    if enumerators:
        return Parameter(name, "enum", choices=tuple(enumerators), forced_only=forced_only)
    if mca_type == "bool":
        return Parameter(name, "bool", forced_only=forced_only)
    if mca_type in _RANGES:
        lo, hi = _RANGES[mca_type]
        for pattern, blo, bhi in _OMPI_BOUNDS:
            if pattern.match(name):
                lo, hi = max(lo, blo), min(hi, bhi)
        return Parameter(name, "int", lo, hi, forced_only=forced_only)
    return Parameter(name, "string", forced_only=forced_only)


def mpich_parameter(name: str, value: str, items: tuple[tuple[str, str], ...]) -> Parameter:
    """An MPICH CVAR from mpivars: enumerated where it lists its values (MPI_T then
    reports the position, which the record keeps as read), an integer where its
    current value is one, else a string."""
    if len(items) >= 2:
        return Parameter(name, "enum", choices=tuple((str(i), n) for i, (n, _) in enumerate(items)))
    if re.fullmatch(r"-?\d+", value.strip()):
        return Parameter(name, "int", *_RANGES["int"])
    if value.strip().lower() in ("true", "false"):
        return Parameter(name, "bool")
    return Parameter(name, "string")


# NCCL's documented variables that shape a collective, with their bounds (NCCL's
# environment-variable documentation): channel counts up to MAXCHANNELS, 64 in current
# NCCL (src/include/device.h; older releases had 32, and their own limit then applies);
# NCCL_BUFFSIZE is the per-channel, per-peer buffer in bytes. NCCL reads them when a
# communicator is created; it has no interface that reports them.
NCCL = {p.name: p for p in (
    Parameter("NCCL_NCHANNELS", "int", 1, 64, readable=False),
    Parameter("NCCL_MIN_NCHANNELS", "int", 1, 64, readable=False),
    Parameter("NCCL_MAX_NCHANNELS", "int", 1, 64, readable=False),
    Parameter("NCCL_BUFFSIZE", "int", 1, 2**31 - 1, readable=False),
)}
# What collkit's own forcing sets (backends/openmpi.py, mpich.py, nccl.py, campaign/tuning.py):
# a parameter of these names would undo or fake the choice of algorithm, which
# [backends] makes.
FORCING = {
    "openmpi": re.compile(r"^(coll|coll_tuned_use_dynamic_rules|coll_tuned_dynamic_rules_filename"
                          r"|coll_tuned_\w+_algorithm)$"),
    "mpich": re.compile(r"^MPIR_CVAR_(\w+_INTRA_ALGORITHM|DEVICE_COLLECTIVES|COLLECTIVE_FALLBACK"
                        r"|COLL_SELECTION_TUNING_JSON_FILE)$"),
    "nccl": re.compile(r"^NCCL_(ALGO|PROTO)$"),
}


def check(table: str, family: str, library: str, known: dict[str, Parameter],
          values: dict[str, tuple]) -> dict[str, tuple[str, ...]]:
    """A spec's [parameters.TABLE] against the library's parameters: every name known
    (did-you-mean otherwise), every value of its type and in range. Returns the values
    as strings, in the spec's order."""
    out: dict[str, tuple[str, ...]] = {}
    for name, raw in values.items():
        where = f"parameters.{table}.{name}"
        if family in FORCING and FORCING[family].match(name):
            backend = "nccl" if family == "nccl" else "mpi"
            raise UserError(f"{where}: collkit sets {name} itself to force the algorithms that [backends] "
                            f"{backend} names; choose algorithms there, not as parameters")
        param = known.get(name)
        if param is None and not known:
            raise UserError(f"{where}: {library} reports no parameters collkit can set (SimGrid's SMPI, and "
                            f"MPIs collkit cannot force, have none); remove [parameters.{table}] for it")
        if param is None:
            hint = did_you_mean(name, known)
            raise UserError(f"{where}: {library} has no parameter '{name}'{hint}; `collkit list --parameters "
                            "TEXT` shows those whose name contains TEXT")
        out[name] = tuple(dict.fromkeys(param.check(v, where) for v in raw))
    return out


def short(name: str) -> str:
    """A parameter's name in labels: Open MPI's per-algorithm ones without the
    'coll_tuned_<coll>_algorithm_' stem ('segmentsize', 'tree_fanout'), MPICH's and
    NCCL's without MPIR_CVAR_ / NCCL_, lower case; any other name whole."""
    m = re.match(r"^coll_tuned_[a-z]+(?:_[a-z]+)*?_algorithm_(\w+)$", name)
    if m:
        return m.group(1)
    for prefix in ("MPIR_CVAR_", "NCCL_"):
        if name.startswith(prefix):
            return name[len(prefix):].lower()
    return name


def rules_column(name: str) -> str | None:
    """The Open MPI rules file column ("segsize", "fanout") a parameter fills, or None."""
    if not name.startswith("coll_tuned_"):
        return None
    return RULES_COLUMNS.get(short(name))
