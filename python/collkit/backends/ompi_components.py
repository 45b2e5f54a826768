"""Which Open MPI coll component serves each collective on MPI_COMM_WORLD.

Open MPI picks a coll component per collective when a communicator is made
(``mca_coll_base_comm_select``, ompi/mca/coll/base/coll_base_comm_select.c, the
same in 4.1 and 5.0): every component whose comm_query gives a priority >= 0 is
enabled in ascending priority, and each enabled module overwrites the
communicator's function pointer of every collective it implements (the COPY
macro). So a collective is served by the last enabled module that implements
it. With ``coll_base_verbose`` >= 9 the library prints that order, per process:

    coll:base:comm_select: new communicator: MPI_COMM_WORLD (cid 0)
    coll:base:comm_select: selecting       tuned, priority  30, Enabled

4.1 and 5.0 (checked 5.0.10 source, 5.0.11 here) do not print which module got
which function (a per-function line exists only from Open MPI's main branch,
commit 3960b69264), so the other half comes from the components' comm_query
functions, :data:`IMPLEMENTS` below. Seen on this machine (4.1.4 and 5.0.11):
at 1 rank ``self`` (priority 75) serves MPI_COMM_WORLD; at 2 and 4 ranks
``tuned``; ``han`` disqualifies itself (ompi/mca/coll/han/coll_han_module.c,
``mca_coll_han_comm_query``: "comm has only local processes") on a one-node
communicator, and ``sm``/``adapt`` are enabled but then disable themselves ("no
underlying reduce")."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from collkit.common.errors import UserError
from collkit.library.registry import COLLECTIVES

# The MPI function a collkit collective calls (collkit-bench calls
# MPI_Reduce_scatter_block for reduce_scatter).
# Only the exception is listed: COLLECTIVES comes from the registry, which
# importing this module must not need (`collkit list` without any build says why).
FUNCTION = {"reduce_scatter": "reduce_scatter_block"}


class _Every(frozenset):
    """Every collective: what basic, self and tuned implement."""

    def __contains__(self, item: object) -> bool:
        return True


_EVERY = _Every()

# The blocking collectives of collkit each component's comm_query sets (4.1.4
# and 5.0.10 sources, ompi/mca/coll/<name>/coll_<name>_module.c). libnbc sets
# only non-blocking and persistent ones.
IMPLEMENTS: dict[str, frozenset[str]] = {
    "basic": _EVERY,
    "self": _EVERY,
    "tuned": _EVERY,
    "libnbc": frozenset(),
    "han": frozenset({"allgather", "allreduce", "bcast", "gather", "reduce", "scatter"}),
    "sm": frozenset({"allreduce", "bcast", "reduce"}),
    "adapt": frozenset({"bcast", "reduce"}),
}

# Components that wrap the module below them and call it (sync's barriers,
# monitoring's counters, the accelerator's buffer staging): the one below
# chooses the algorithm, so it is the one named.
WRAPPERS = frozenset({"sync", "monitoring", "cuda", "accelerator"})

_LINE = re.compile(r"^\[([^\]]+)\] coll:base:comm_select: (.*)$")
_NEW = re.compile(r"^new communicator: (.+?) \(cid ")
_SELECTING = re.compile(r"^selecting\s+(\w+), priority\s+(-?\d+), (Enabled|Disabled)$")


def enabled_on_world(text: str) -> list[str]:
    """The components enabled on MPI_COMM_WORLD, in the order Open MPI installed
    them, as the first process in `text` (coll_base_verbose >= 9 output) reports
    them; [] when the output holds none (verbosity below 9, or not Open MPI)."""
    current: dict[str, str] = {}      # process -> the communicator being selected for
    order: dict[str, list[str]] = {}
    first = ""
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        proc, body = m.groups()
        if new := _NEW.match(body):
            current[proc] = new.group(1)
            continue
        sel = _SELECTING.match(body)
        if sel and current.get(proc) == "MPI_COMM_WORLD":
            first = first or proc
            if sel.group(3) == "Enabled":
                order.setdefault(proc, []).append(sel.group(1))
    return order.get(first, [])


def serving(enabled: list[str], collective: str) -> str:
    """The component whose function MPI_COMM_WORLD calls for `collective`: the
    last enabled one that implements it. A component collkit has no table for
    (hcoll, ucc, xhc, ...) ends the search with its name and a "?": it may serve
    the collective or hand it to one below, which collkit cannot tell; "" when
    none of them implements it."""
    func = FUNCTION.get(collective, collective)
    for name in reversed(enabled):
        if name in WRAPPERS:
            continue
        if name not in IMPLEMENTS:
            return f"{name}?"
        if func in IMPLEMENTS[name]:
            return name
    return ""


def serving_all(text: str) -> dict[str, str]:
    """Every collkit collective's serving component on MPI_COMM_WORLD, from verbose output."""
    enabled = enabled_on_world(text)
    return {c: serving(enabled, c) for c in COLLECTIVES} if enabled else {}


# Verbosity 9 prints the selection lines and nothing per call, so the probe's
# output stays a few lines per communicator and process.
VERBOSE = {"OMPI_MCA_coll_base_verbose": "9"}


def probe(install, ranks: int, env: dict[str, str], program: Path, timeout: float = 120.0) -> dict[str, str]:
    """Launch `program` (collkit-bench with no points: MPI_Init, MPI_Finalize) at
    `ranks` ranks with the launch environment `env` and coll_base_verbose, and
    read which component serves each collective on MPI_COMM_WORLD. The
    selection depends on the rank count, the nodes and the environment (a
    ``coll=^han`` changes it), so it is asked under the campaign's own."""
    with tempfile.TemporaryDirectory(prefix="collkit-coll-") as tmp:
        points = Path(tmp) / "points.jsonl"
        points.write_text("")
        argv = install.launch(ranks, program, ["--points", str(points), "--out", str(Path(tmp) / "out.jsonl")])
        full = install.environment() | dict(env) | VERBOSE
        try:
            done = subprocess.run(argv, env=full, capture_output=True, text=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UserError(f"cannot ask {install.name} which coll components it selects: {exc}") from None
    if done.returncode != 0:
        raise UserError(f"cannot ask {install.name} which coll components it selects: {argv[0]} exited "
                        f"{done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1]}")
    return serving_all(done.stdout + "\n" + done.stderr)
