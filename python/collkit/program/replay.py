"""``collkit replay FILE --platform sim:NAME [--rules FILE] [--json]``: a
`--trace` profile's collective calls, in order and with the computation
between them, on a SimGrid-simulated machine at the program's rank count,
through the same C code (collkit-replay: libcollkit's algorithms where the
rules choose them, SMPI's own collectives otherwise).

What to replay is decided in collkit.program.replay_input (and the rules in
collkit.program.rules_choice); the platform XML, hostfile, settings and the
smpirun command line are the SimGrid launcher's (collkit.launch.simgrid), so
a replay simulates the machine a campaign on the same --platform simulates.

smpirun runs under launch/watch.py's watchdog, as `collkit profile`'s launcher
does: at --timeout, or when SIGINT or SIGTERM reaches collkit, every process it
started is stopped before collkit says so in one line and exits with status 2."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from collkit.backends import smpi
from collkit.campaign import platform as platforms
from collkit.campaign.sizes import format_size
from collkit.common import argtypes
from collkit.common.errors import UserError
from collkit.common.table import render
from collkit.launch import simgrid, watch
from collkit.program import profile_file, replay_input
from collkit.program.rules_choice import LIBRARY, LIBRARY_ALGORITHM, Choice, load_rules
from collkit.simulation import settings as sim, simgrid_install

DEFAULT_TIMEOUT_S = 600.0

ASSUMES = (
    "the computation between two calls takes, on the simulated host, the time it took where the "
    "program was profiled (replayed as simulated sleep: smpi_nanosleep)",
    "the network is the simulated platform's, not the one the profile was taken on",
    "SMPI's collectives with the profiled MPI's selection logic stand for the library's own",
    "ranks are placed on the platform's nodes as its ppn and placement say",
    "a rebuilt communicator orders its ranks by world rank after its first one",
    "buffer contents do not matter (large ones are SMPI shared memory); libcollkit's local reductions "
    "cost simulated time, SMPI's do not "
    "(" + smpi.REDUCTION_NOTE + ")",
)
LEAVES_OUT = (
    "calls of the left-out classes, listed with their profiled time (their time folds into the next gap)",
    "point-to-point messages, I/O and everything else between the collectives, except as time",
    "contention between the program's own traffic and the collectives",
)


def _platform(arg: str) -> platforms.Platform:
    if not sim.is_sim(arg) and not Path(arg).is_file():
        raise UserError(f"--platform {arg}: replay runs on a simulated machine; give sim:NAME "
                        "(e.g. sim:fattree-2to1) or a platform file with a [simgrid] table")
    plat = platforms.load(Path(arg))
    if plat.simgrid is None:
        raise UserError(f"--platform {arg}: not a simulated machine (no [simgrid] table); give sim:NAME "
                        "or a platform file with a [simgrid] table")
    return plat


def _read_result(path: Path, nclasses: int) -> tuple[float, list[tuple[int, float]]]:
    span, per = 0.0, [(0, 0.0)] * nclasses
    for line in path.read_text().splitlines():
        f = line.split()
        if f[0] == "span_s":
            span = float(f[1])
        elif f[0] == "class":
            per[int(f[1])] = (int(f[2]), float(f[3]))
    return span, per


def simulate(p: replay_input.Plan, plat: platforms.Platform, timeout_s: float, work: Path) -> tuple[float, list]:
    """Run collkit-replay under smpirun; (span_s, [(calls, time_s)] per replay class).
    Past timeout_s smpirun is stopped with every process it started (watch.TimedOut),
    and so it is when an exception (an interrupt, watch.Interrupted) arrives meanwhile."""
    settings = plat.simgrid
    simgrid_install.ensure_programs()
    program = sim.replay_path()
    ranks = p.profile.ranks
    xml, hostfile, _ = simgrid.write_platform(settings, ranks, work)
    replay_input.write(p, work)
    cfg = simgrid.base_cfg(settings) + smpi.selector_cfg(p.profile.mpi_family) + [_blocksize(p)]
    tmp = work / "tmp"
    tmp.mkdir()
    argv = simgrid.smpirun_argv(settings.smpirun, xml, hostfile, ranks, cfg, tmp, [str(program), str(work)])
    log = work / "smpirun.log"
    # large buffers are folded (tools/replay/sim.c): libcollkit charges its local
    # work on them without doing it, as in a campaign's shared-buffer launches
    env = simgrid.smpirun_env(settings, tmp) | {simgrid.NO_DATA_ENV: "1"}
    # the watchdog of `collkit profile` and `trial` (run_watched): its own session,
    # and at timeout_s or an exception (an interrupt) every process it started stopped
    with open(log, "wb") as logf:
        code = watch.run_watched(argv, env, timeout_s, stdout=logf, stderr=subprocess.STDOUT).code
    result = work / "result.txt"
    why = simgrid.diagnose(log)
    if code != 0 or why or not result.exists():
        tail = why or watch.stderr_tail(log, lines=3, chars=400).replace("\n", " | ")
        raise ReplayFailed(f"the simulated replay failed ({watch.exit_reason(code)}): {tail}")
    return _read_result(result, len(p.classes))


def _blocksize(p: replay_input.Plan) -> str:
    """SMPI maps a folded buffer block by block (1 MiB by default): 512 buffers of
    256 MiB would pass the kernel's map count. A block as large as the largest
    buffer (at most p blocks of a class's bytes) takes one map per buffer."""
    largest = max((p.profile.classes[rc.index].bytes * p.profile.classes[rc.index].comm_size
                   for rc in p.classes), default=0)
    size = 1 << max(20, min(30, (largest - 1).bit_length()))
    return f"smpi/shared-malloc-blocksize:{size}"


class ReplayFailed(Exception):
    """smpirun or collkit-replay failed: not the user's input (exit 1)."""


def _class_cells(c: profile_file.CallClass) -> list[str]:
    return [c.collective, c.comm, str(c.comm_size), format_size(c.bytes), c.dtype or c.datatype, c.op or "-",
            "-" if c.root is None else str(c.root), "yes" if c.in_place else "no"]


_CLASS_KEYS = ("collective", "comm", "comm_size", "bytes", "dtype", "datatype", "op", "root", "in_place")


@dataclass(frozen=True)
class ClassResult:
    """One replayed class: what ran it, and its calls and time measured and simulated."""
    call: profile_file.CallClass
    choice: Choice
    calls: int                 # replayed (the busiest rank's count)
    simulated_s: float         # the busiest rank's sum over its calls
    measured_calls: int        # the same calls in the trace
    measured_s: float

    def to_json(self) -> dict:
        c = self.call
        return {"class": {k: getattr(c, k) for k in _CLASS_KEYS}, "runs": self.choice.runs,
                "rule": self.choice.rule, "fallback": self.choice.fallback, "calls": self.calls,
                "profiled_calls": c.calls, "measured_s": self.measured_s, "measured_calls": self.measured_calls,
                "profiled_time_max_s": c.time_max_s, "simulated_s": self.simulated_s}


@dataclass(frozen=True)
class LeftOut:
    call: profile_file.CallClass
    reason: str

    def to_json(self) -> dict:
        return {"class": _class_cells(self.call), "reason": self.reason,
                "profiled_time_max_s": self.call.time_max_s}


@dataclass(frozen=True)
class Replayed:
    """A replay's outcome: what `--json` prints (to_json) and the table shows."""
    profile: profile_file.Profile
    platform: str                       # --platform as given
    machine: str
    rules: str | None                   # --rules as given
    classes: tuple[ClassResult, ...]    # most simulated time first
    left_out: tuple[LeftOut, ...]
    notes: tuple[str, ...]
    simulated_span_s: float
    measured_span_s: float

    @property
    def simulated_total_s(self) -> float:
        return sum(x.simulated_s for x in self.classes)

    @property
    def measured_total_s(self) -> float:
        return sum(x.measured_s for x in self.classes)

    def to_json(self) -> dict:
        prof = self.profile
        return {
            "profile": str(prof.path), "platform": self.platform, "machine": self.machine,
            "rules": self.rules, "ranks": prof.ranks,
            "profiled_on": {"mpi": prof.mpi_name, "library_version": prof.mpi_library_version,
                            "nodes": prof.nodes, "hosts": list(prof.hosts), "wall_s": prof.wall_s,
                            "mpi_span_s": prof.mpi_span_s},
            "classes": [x.to_json() for x in self.classes],
            "simulated_total_s": self.simulated_total_s, "measured_total_s": self.measured_total_s,
            "simulated_span_s": self.simulated_span_s, "measured_span_s": self.measured_span_s,
            "left_out": [x.to_json() for x in self.left_out],
            "notes": list(self.notes), "assumes": list(ASSUMES), "leaves_out": list(LEAVES_OUT),
        }


def report(p: replay_input.Plan, platform_arg: str, plat: platforms.Platform, rules_path: str | None,
           span: float, per: list[tuple[int, float]]) -> Replayed:
    prof = p.profile
    classes = [ClassResult(call=prof.classes[rc.index], choice=rc.choice, calls=calls, simulated_s=t,
                           measured_calls=m_calls, measured_s=m_t)
               for rc, (calls, t), (m_calls, m_t) in zip(p.classes, per, p.measured)]
    classes.sort(key=lambda x: -x.simulated_s)
    return Replayed(profile=prof, platform=platform_arg, machine=plat.simgrid.machine.name, rules=rules_path,
                    classes=tuple(classes), left_out=tuple(LeftOut(prof.classes[i], why) for i, why in p.left_out),
                    notes=tuple(p.notes), simulated_span_s=span, measured_span_s=p.measured_span_s)


def _s(x: float) -> str:
    return f"{x:.6g}"


def print_report(r: Replayed) -> None:
    prof = r.profile
    version = prof.mpi_library_version.splitlines()[0][:80] if prof.mpi_library_version else "?"
    print(f"replay of {prof.path} ({prof.ranks} ranks) on {r.platform} ({r.machine}), "
          f"rules: {r.rules or 'none (the library everywhere)'}")
    print(f"profiled on: {prof.mpi_name} ({version}),"
          f" {prof.nodes} node(s) {', '.join(prof.hosts[:4])}; wall {_s(prof.wall_s)} s, "
          f"MPI_Init..Finalize {_s(prof.mpi_span_s)} s")
    rows = []
    for x in r.classes:
        runs = (f"library ({x.choice.rule}: {x.choice.fallback})" if x.choice.fallback else
                f"library (for {x.choice.rule})" if x.choice.runs == LIBRARY and x.choice.rule != LIBRARY else
                f"{x.choice.runs} (for {x.choice.rule})" if x.choice.rule.startswith(LIBRARY_ALGORITHM) else
                x.choice.runs)
        rows.append([*_class_cells(x.call), runs, str(x.calls), _s(x.measured_s), _s(x.simulated_s)])
    print(render(["collective", "comm", "p", "bytes", "datatype", "op", "root", "in place", "runs", "calls",
                  "measured s", "simulated s"], rows, right={2, 3, 9, 10, 11}))
    print(f"total in replayed collectives (busiest rank per class): measured {_s(r.measured_total_s)} s, "
          f"simulated {_s(r.simulated_total_s)} s")
    print(f"span of the replayed calls, gaps included: measured {_s(r.measured_span_s)} s, "
          f"simulated {_s(r.simulated_span_s)} s")
    if r.left_out:
        print("left out (profiled time, busiest rank):")
        for x in r.left_out:
            print(f"  {' '.join(_class_cells(x.call))}: {_s(x.call.time_max_s)} s; {x.reason}")
    for n in r.notes:
        print(f"note: {n}")
    print("assumes: " + "; ".join(ASSUMES))
    print("leaves out: " + "; ".join(LEAVES_OUT))


def run(ns: argparse.Namespace) -> int:
    prof = profile_file.load(ns.profile, need_complete=True, need_trace=True)
    plat = _platform(ns.platform)
    try:   # the machine must hold the program's ranks (the launcher's placement says how)
        simgrid.placement(plat.simgrid, prof.ranks)
    except UserError as e:
        raise UserError(f"--platform {ns.platform}: {e}, for the profile's {prof.ranks} ranks; "
                        "give a larger machine") from None
    rules = load_rules(ns.rules, prof.mpi_name) if ns.rules else None
    p = replay_input.plan(prof, rules)
    if not p.classes:
        raise UserError(f"{ns.profile}: no class of the profile can be replayed (see `collkit replay --help`); "
                        "left out: " + "; ".join(why for _, why in p.left_out[:3]))
    with watch.interrupts(), tempfile.TemporaryDirectory(prefix="collkit-replay-") as d:
        try:
            span, per = simulate(p, plat, ns.timeout, Path(d))
        except ReplayFailed as e:
            print(f"collkit replay: {e}", file=sys.stderr)
            return 1
        except watch.TimedOut as e:
            raise UserError(f"the simulated replay ran past --timeout {e.seconds:g} s and was stopped with every "
                            "process it started; replay a shorter trace or give a longer --timeout") from None
        except watch.Interrupted as e:
            raise UserError(f"{e.name} arrived: the simulated replay was stopped with every process it started; "
                            "nothing replayed. Run it again to replay (with --timeout S to bound it)") from None
    r = report(p, ns.platform, plat, ns.rules, span, per)
    if ns.json:
        print(json.dumps(r.to_json(), indent=1))
    else:
        print_report(r)
    return 0


DESCRIPTION = """\
Replay a profile's collective calls (`collkit profile --trace`) in order, with the
measured computation between them, on a SimGrid-simulated machine at the program's
rank count. Classes a --rules file gives to libcollkit run its algorithm (the
preload's fallbacks applied); the others run SMPI's own collective with the profiled
MPI's selection logic. Prints the simulated time per class and in total beside the
measured one, and the simulated span of the whole sequence."""

EPILOG = f"""\
examples:
  collkit replay app.profile.json --platform sim:lumi-like
  collkit replay app.profile.json --platform sim:fattree-2to1 --rules app.rules --json
At --timeout, or on Ctrl-C (SIGINT) or SIGTERM, every process of the simulation is
stopped, collkit says so in one line and exits with status 2.
Assumes: {'; '.join(ASSUMES)}.
Leaves out: {'; '.join(LEAVES_OUT)}. See docs/application-loop.md."""


def add_parser(sub) -> None:
    p = sub.add_parser("replay", help="replay a profile's collective calls on a simulated machine",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("profile", metavar="FILE", help="a profile written by `collkit profile --trace`")
    p.add_argument("--platform", required=True, metavar="sim:NAME",
                   help="the simulated machine: sim:NAME or a platform file with a [simgrid] table")
    p.add_argument("--rules", metavar="FILE", help="a collkit rules file (docs/preload.md)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--timeout", type=argtypes.seconds("--timeout", 0, 86400), default=DEFAULT_TIMEOUT_S,
                   metavar="S", help=f"stop the simulation after S seconds (default {DEFAULT_TIMEOUT_S:g})")
    p.set_defaults(func=run)
