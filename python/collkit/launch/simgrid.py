"""Run a campaign's launches on a simulated machine with SimGrid's smpirun.

Per launch group (MPI library, rank count, forced setting) collkit writes the
platform XML of the smallest instance of the machine that holds the ranks
(collkit.simulation.platform_xml), a hostfile (rank i on line i: block, cyclic or
the platform's allocation), and the points file, then runs

    smpirun -platform X.xml -hostfile H -np N --cfg=... collkit-bench --points F --out O

under the same watchdog as a local mpirun launch (collkit.launch.watch), so
records land in the campaign exactly as in a real run. The XML and hostfiles
stay in DIR/simgrid/.

Settings, and why (docs/architecture.md, "Simulated supercomputers"):
* smpi/simulate-computation:no — never inject the host's measured CPU time
  between MPI calls: that is what makes reruns identical. Local work is charged
  explicitly instead (libcollkit's reductions and copies, lib/core/buffer.c).
* smpi/wtime:0 — MPI_Wtime itself costs no simulated time.
* network/model:CM02 — latency + size/bandwidth per link with max-min sharing
  of contended links and no calibration factors: the alpha-beta model the
  papers reason with, and every number traces back to the platform. The
  default SMPI model multiplies latency and bandwidth by piecewise factors
  calibrated on one particular cluster; selectable per platform
  (network_model), recorded either way.
* network/crosstraffic:0 — SimGrid by default loads every flow's reverse path
  with 5% of its size (TCP acknowledgements); HPC interconnects do not.
* smpi/os, smpi/ois, smpi/or — only with [simgrid] message_costs (or
  sim:NAME+loggp): LogGP-like per-message overheads and gap at the endpoints
  (collkit.simulation.message_costs); none by default, as in CM02.
* smpirun exits 0 after a deadlock or MPI_Abort: stderr is searched for
  SimGrid's messages, and a hang (SMPI never detects busy loops) is caught by
  the per-point timeout."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from collkit.backends import smpi
from collkit.campaign.platform import Platform, PlatformMPI
from collkit.campaign.points import Point
from collkit.campaign.spec import Measure
from collkit.campaign.store import Campaign
from collkit.common import atomic, machine
from collkit.common.errors import UserError
from collkit.common.progress import Progress
from collkit.launch import watch
from collkit.launch.protocol import Groups, Launcher, Outcome
from collkit.launch.watch import Annotate
from collkit.simulation import draw, memory, message_costs
from collkit.simulation.platform_xml import multinic_xml, platform_xml, rank_host
from collkit.simulation.settings import SimSettings, node_env
from collkit.topology.synthetic import Instance, Torus, host_index

SIMDIR = "simgrid"
# libcollkit (SimGrid builds) charges copies and reductions without performing
# them when this is "1" (lib/core/buffer.c); set for launches with shared buffers.
NO_DATA_ENV = "COLLKIT_SIM_NO_DATA"
LAUNCHES = "launches.jsonl"
ALLOCATIONS = "allocations.json"   # drawn allocations: rank count -> allocation_record
CROSSTRAFFIC = "network/crosstraffic"

# SimGrid's words for failures that leave smpirun's exit status at 0.
FAILURE_MARKERS = ("Deadlock detected", "MPI_Abort was called", "Stalling SMPI instance")
# ... and for the ones that do not (an algorithm's assertion, a crash).
CRASH_MARKERS = ("Uncaught exception", "Assertion", "Access violation or Bus error", "/CRITICAL]")
# collkit-bench's line before each point (bench/main.c, SMPI builds only).
POINT_MARK = "collkit-bench: point "
# An SMPI algorithm saying it ran the default algorithm instead of itself.
FALLBACK = re.compile(r"\[smpi_colls/\w+\] (.*use default.*)")
MESSAGE = re.compile(r"\[[\w.]+/(WARNING|ERROR|CRITICAL)\] (.*)")


def base_cfg(settings: SimSettings) -> list[str]:
    cfg = ["smpi/simulate-computation:no", "smpi/wtime:0", f"network/model:{settings.network_model}",
           f"{CROSSTRAFFIC}:{1 if settings.crosstraffic else 0}"]
    return cfg + message_costs.cfg(settings.message_costs) + list(settings.cfg)


def _message(line: str) -> str:
    """A SimGrid log line without its '[where] [category/LEVEL]' prefixes."""
    return line.rsplit("] ", 1)[-1].strip()[-300:]


def diagnose(stderr: Path) -> str | None:
    """The first SimGrid failure message in a launch's output, or None."""
    try:
        lines = stderr.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for markers in (FAILURE_MARKERS, CRASH_MARKERS):
        for line in lines:
            if any(m in line for m in markers) and "Current backtrace" not in line:
                return _message(line)
    return None


def segments(text: str) -> dict[str, list[str]]:
    """Point id -> the SimGrid lines printed while that point ran."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(POINT_MARK):
            current = line[len(POINT_MARK):].strip()
            out.setdefault(current, [])
        elif current is not None:
            out[current].append(line)
    return out


def point_notes(lines: list[str]) -> dict:
    """What SimGrid said during one point: a fallback to its default algorithm
    (the point then did not measure what it names) and its warnings/errors."""
    fallback = next((m.group(1) for m in map(FALLBACK.search, lines) if m), None)
    seen: dict[str, int] = {}
    for line in lines:
        m = MESSAGE.search(line)
        if m and "Current backtrace" not in line:
            seen[m.group(2).strip()[:300]] = seen.get(m.group(2).strip()[:300], 0) + 1
    notes: dict = {}
    if seen:
        notes["smpi_messages"] = [f"{n}x {text}" for text, n in list(seen.items())[:5]]
    if fallback:
        notes["smpi_fallback"] = fallback
    return notes


def placement(settings: SimSettings, ranks: int):
    """(instance of the machine, host of each rank)."""
    ppn = settings.ppn
    if settings.draw is not None:
        return drawn_placement(settings, ranks)
    if settings.allocation:
        if len(settings.allocation) < ranks:
            raise UserError(f"the allocation {settings.allocation_file} lists {len(settings.allocation)} hosts, "
                            f"fewer than the {ranks} ranks")
        hosts = list(settings.allocation[:ranks])
        per = {h: hosts.count(h) for h in dict.fromkeys(hosts)}
        over = [h for h, n in per.items() if n > ppn]
        if over:
            raise UserError(f"the allocation puts {per[over[0]]} ranks on {over[0]}, more than ppn = {ppn}")
        inst = _instance_with(settings, set(per))
        return inst, hosts
    nodes = -(-ranks // ppn)
    inst = settings.machine.instance(nodes)
    if settings.machine.nics:   # one host per rank; settings allow only block placement here
        return inst, [rank_host(r // ppn, r % ppn) for r in range(ranks)]
    if settings.placement == "block":
        hosts = [inst.hosts[r // ppn] for r in range(ranks)]
    else:  # cyclic: consecutive ranks on consecutive nodes
        hosts = [inst.hosts[r % nodes] for r in range(ranks)]
    return inst, hosts


def drawn_placement(settings: SimSettings, ranks: int):
    """The job's nodes drawn from the whole machine (collkit.simulation.draw),
    ranks on them block or cyclic; the instance is the machine's whole groups
    up to the last drawn node (group numbering is the same in every instance
    of a fat tree or dragonfly), so it grows with the spread, not the job."""
    m = settings.machine
    nodes = -(-ranks // settings.ppn)
    chosen = settings.draw.nodes(m.name, m.max_nodes, nodes)
    inst = m.instance(chosen[-1] + 1)
    if settings.placement == "block":
        hosts = [inst.hosts[chosen[r // settings.ppn]] for r in range(ranks)]
    else:
        hosts = [inst.hosts[chosen[r % nodes]] for r in range(ranks)]
    return inst, hosts


def allocation_record(settings: SimSettings, inst: Instance, hosts: list[str]) -> dict:
    """What DIR/simgrid/allocations.json keeps per rank count: the hosts per rank
    and their spread, so the traffic analysis can use the same nodes."""
    index = {h: i for i, h in enumerate(inst.hosts)}
    nodes = [index[h] for h in dict.fromkeys(hosts)]
    spread = draw.stats(nodes, inst.group_of)
    return {"draw": settings.draw.describe() if settings.draw else None, "nodes": len(nodes),
            "groups": spread["groups"], "largest_group_share": spread["largest_group_share"],
            "mean_run": spread["mean_run"], "instance_nodes": inst.nodes, "hosts": hosts}


def _instance_with(settings: SimSettings, names: set[str]):
    """The instance that holds every allocated host. Fat tree and dragonfly:
    whole groups up to the highest-numbered one (node i is host node<i> in every
    instance of them, docs/topologies.md). A torus renumbers its nodes per box:
    the smallest box (doubling) whose hosts include them."""
    m = settings.machine
    index = [host_index(h) for h in names]
    if any(i is None or i >= m.max_nodes for i in index):
        missing = sorted(h for h, i in zip(names, index) if i is None or i >= m.max_nodes)
        raise UserError(f"the allocation {settings.allocation_file} names hosts that machine {m.name} does not "
                        f"have: {', '.join(missing[:3])}; name its hosts node0 .. node{m.max_nodes - 1}")
    if not isinstance(m.shape, Torus):
        return m.instance(max(index) + 1)
    n = len(names)
    while True:
        inst = m.instance(min(n, m.max_nodes))
        if names <= set(inst.hosts) or inst.nodes >= m.max_nodes:
            return inst
        n = max(inst.nodes + 1, n * 2)


def write_platform(settings: SimSettings, ranks: int, simdir: Path) -> tuple[Path, Path, Instance]:
    """The platform XML of the smallest instance of the machine that holds
    `ranks` and the hostfile (rank i on line i), written into simdir; a
    machine too small for the ranks is a UserError (placement)."""
    inst, hosts = placement(settings, ranks)
    nics = settings.machine.nics
    if nics:   # only the nodes used: the explicit routes grow with the square of the nodes
        used = -(-ranks // settings.ppn)
        xml = simdir / f"platform-{used}nodes-ppn{settings.ppn}-nics{nics}.xml"
        text = lambda: multinic_xml(inst, used, settings.ppn)  # noqa: E731
    else:
        xml = simdir / f"platform-{inst.nodes}nodes-ppn{settings.ppn}.xml"
        text = lambda: platform_xml(inst, settings.ppn)  # noqa: E731
    if not xml.exists():
        atomic.write_text(xml, text())
    hostfile = simdir / f"hostfile-p{ranks}.txt"
    atomic.write_text(hostfile, "".join(h + "\n" for h in hosts))
    if settings.draw is not None:
        record_allocation(simdir, ranks, allocation_record(settings, inst, hosts))
    return xml, hostfile, inst


def record_allocation(simdir: Path, ranks: int, record: dict) -> None:
    """Add one rank count's drawn allocation to DIR/simgrid/allocations.json
    (a rerun or resume draws the same hosts, so rewriting one is harmless)."""
    path = simdir / ALLOCATIONS
    try:
        table = json.loads(path.read_text())
    except (OSError, ValueError):
        table = {}
    table[str(ranks)] = record
    atomic.write_text(path, json.dumps(dict(sorted(table.items(), key=lambda kv: int(kv[0]))), indent=1) + "\n")


def smpirun_argv(smpirun: Path, xml: Path, hostfile: Path, ranks: int, cfg: list[str], tmp: Path,
                 program: list[str]) -> list[str]:
    """One smpirun command line: every simulated program collkit runs starts here."""
    return [str(smpirun), "-platform", str(xml), "-hostfile", str(hostfile), "-np", str(ranks),
            *(f"--cfg={c}" for c in cfg), f"--cfg=smpi/tmpdir:{tmp}",
            # the configuration echo and the advice to calibrate the host
            # speed (irrelevant with simulate-computation:no) are noise;
            # warnings and errors stay
            "--log=xbt_cfg.thresh:warning", "--log=smpi_config.thresh:warning", *program]


def smpirun_env(settings: SimSettings, tmp: Path) -> dict[str, str]:
    """smpirun appends --cfg=smpi/tmpdir:$(dirname $(mktemp -u)) after ours
    (its -tmpdir option is broken in 3.32): TMPDIR makes both agree."""
    return dict(os.environ, TMPDIR=str(tmp), **node_env(settings))


class SimLauncher(Launcher):
    """smpirun here, per launch group, under the watchdog of collkit.launch.watch;
    remembers the platform XML and hostfiles it wrote. Simulated times are the same
    in every launch: one round (launch/schedule.py)."""

    deterministic = True

    def __init__(self, platform: Platform):
        super().__init__(platform)
        if platform.simgrid is None:
            raise ValueError("not a simulated platform")
        self.settings: SimSettings = platform.simgrid
        self._prepared: dict[tuple[Path, int], tuple[Path, Path, Instance]] = {}

    @classmethod
    def serves(cls, platform: Platform) -> bool:
        return platform.simgrid is not None

    @classmethod
    def ran(cls, campaign: Campaign) -> bool:
        return (campaign.path / SIMDIR).is_dir()

    def ingest_fields(self, campaign: Campaign) -> Annotate:
        return resume_fields(campaign, self.settings)

    def metadata(self, campaign: Campaign) -> dict:
        return {"simgrid": metadata(campaign, self.settings)}

    def prepare(self, campaign: Campaign, ranks: int) -> tuple[Path, Path, Instance]:
        """Platform XML and hostfile for `ranks` (written once per campaign run)."""
        key = (campaign.path, ranks)
        if key not in self._prepared:
            simdir = campaign.path / SIMDIR
            simdir.mkdir(exist_ok=True)
            self._prepared[key] = write_platform(self.settings, ranks, simdir)
        return self._prepared[key]

    def run(self, campaign: Campaign, groups: Groups, measure: Measure, progress: Progress,
            dry_run: bool = False) -> Outcome:
        (campaign.path / SIMDIR).mkdir(exist_ok=True)
        return super().run(campaign, groups, measure, progress, dry_run)

    def run_group(self, campaign: Campaign, pm: PlatformMPI, points: list[Point], measure: Measure,
                  progress: Progress, repeat: int = 0) -> None:
        simdir = campaign.path / SIMDIR
        ranks = points[0].ranks
        xml, hostfile, inst = self.prepare(campaign, ranks)
        shared = _shared(points, measure)
        cfg = launch_cfg(self.settings, pm.name, points, measure, shared)
        machine = self.settings.machine.name

        def start(remaining: list[Point]) -> watch.Launch:
            files = watch.launch_files(campaign, remaining, measure, repeat)
            tmp = simdir / f"tmp-{files.number:04d}"
            tmp.mkdir(exist_ok=True)
            argv = smpirun_argv(pm.install.mpirun, xml, hostfile, ranks, cfg, tmp,
                                [str(pm.bench), "--points", str(files.points), "--out", str(files.out)])
            env = smpirun_env(self.settings, tmp)
            if shared:   # contents are garbage: libcollkit charges local work without doing it
                env[NO_DATA_ENV] = "1"
            proc = watch.start(argv, env, log=files.err)
            atomic.append_line(simdir / LAUNCHES, json.dumps(
                {"launch": files.number, "mpi": pm.name, "ranks": ranks, "nodes": inst.nodes,
                 "platform_xml": xml.name, "hostfile": hostfile.name, "cfg": cfg, "shared_buffers": shared,
                 "argv": argv}))
            return watch.Launch(files.number, proc, files.out, files.err)

        def annotate(p: Point, launch: int) -> dict:
            return record_fields(campaign, p, launch, machine, shared)

        try:
            watch.run_group(campaign, pm.name, points, measure, progress, start, diagnose=diagnose,
                            annotate=annotate, repeat=repeat)
        finally:
            for tmp in simdir.glob("tmp-*"):
                shutil.rmtree(tmp, ignore_errors=True)


def _shared(points: list[Point], measure: Measure) -> bool:
    return any(memory.shared_for(p.collective, p.ranks, p.count, p.dtype, p.in_place, measure.validate)
               for p in points)


def launch_cfg(settings: SimSettings, mpi: str, points: list[Point], measure: Measure, shared: bool) -> list[str]:
    """The --cfg items of one launch: base settings, the library's selector, a
    forced SMPI algorithm, shared buffers where the memory needs them."""
    cfg = base_cfg(settings) + smpi.selector_cfg(mpi)
    cfg += [f"{k}:{v}" for k, v in points[0].env]      # a forced SMPI algorithm
    if shared:
        thresh = memory.shared_threshold(points[0].ranks, measure.max_iterations)
        cfg.append(f"smpi/auto-shared-malloc-thresh:{thresh}")
        block = max(memory.shared_blocksize(p.collective, p.ranks, p.count, p.dtype, p.in_place) for p in points)
        if block > memory.SHARED_BLOCK:     # SMPI's default otherwise, as before
            cfg.append(f"smpi/shared-malloc-blocksize:{block}")
    return cfg


def record_fields(campaign: Campaign, p: Point, launch: int, machine: str, shared: bool) -> dict:
    """What a simulated point's record adds to collkit-bench's: the machine, shared
    buffers, the reduction caveat, SimGrid's messages during the point; a forced
    SMPI algorithm that fell back to SMPI's default is turned into a skip."""
    rec: dict = {"simulated": machine, "shared_buffers": shared}
    if p.backend == "mpi":
        rec["sim_note"] = smpi.REDUCTION_NOTE
    try:
        text = (campaign.raw / f"launch-{launch:04d}.stderr").read_text(errors="replace")
    except OSError:
        text = ""
    notes = point_notes(segments(text).get(p.id, []))
    rec.update(notes)
    if "smpi_fallback" in notes and p.backend == "mpi" and p.algorithm != "default":
        # like a library that silently substitutes: the times are not those of
        # the named algorithm, so the point is not compared
        rec.update(status="skipped", reason=f"SMPI ran its default instead of {p.native} for some calls "
                                            f"(it said: {notes['smpi_fallback']})")
    return rec


def resume_fields(campaign: Campaign, settings: SimSettings) -> Annotate:
    """record_fields for records a killed run left in raw/ (Campaign.ingest_raw)."""
    shared = {l["launch"]: l.get("shared_buffers", False)
              for l in atomic.read_jsonl(campaign.path / SIMDIR / LAUNCHES)}

    def fields(p: Point, launch: int) -> dict:
        return record_fields(campaign, p, launch, settings.machine.name, shared.get(launch, False))
    return fields


def _allocations(campaign: Campaign) -> dict:
    try:
        return json.loads((campaign.path / SIMDIR / ALLOCATIONS).read_text())
    except (OSError, ValueError):
        return {}


def simgrid_version(smpirun: Path) -> str:
    try:
        proc = subprocess.run([str(smpirun), "--version"], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
        return (proc.stdout or proc.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def metadata(campaign: Campaign, settings: SimSettings) -> dict:
    """The simulated platform for metadata.json: machine, settings, launches."""
    launches = atomic.read_jsonl(campaign.path / SIMDIR / LAUNCHES)
    instances = {}
    for xml in sorted((campaign.path / SIMDIR).glob("platform-*nodes-*.xml")):
        nodes = int(xml.name.split("-")[1].removesuffix("nodes"))
        try:
            instances[xml.name] = settings.machine.instance(nodes).describe()
        except UserError:
            instances[xml.name] = {"nodes": nodes}
    return {
        "simgrid_version": simgrid_version(settings.smpirun),
        "settings": settings.describe(),
        "cfg": base_cfg(settings),
        "instances": instances,
        "launches": [{k: v for k, v in l.items() if k != "argv"} for l in launches],
        # drawn allocations without their host lists (those are in simgrid/allocations.json)
        "allocations": {r: {k: v for k, v in a.items() if k != "hosts"} for r, a in _allocations(campaign).items()},
        "reductions": ("libcollkit charges its local reductions (1 flop per byte) and copies (0.5 flop per byte) "
                       "at the simulated host's speed; " + smpi.REDUCTION_NOTE),
        "memory": {"available_bytes": machine.available_memory(), "margin": memory.MARGIN,
                   "shared_above_bytes": memory.SHARED_ABOVE},
    }
