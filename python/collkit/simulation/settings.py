"""Simulated platforms: `--platform sim:NAME` or a platform file with a [simgrid] table.

    name = "my-fat-tree"

    [simgrid]
    preset = "marenostrum5-like"   # a machine of collkit.topology.synthetic.PRESETS, and/or
    # ... the machine's own parameters (kind = "fattree", link_bw, ...), read by
    #     collkit.topology.synthetic.from_table (docs/topologies.md lists them)
    ppn = 4                        # ranks per node (cores of a simulated host); the machine's, else 1
    placement = "block"            # block | cyclic: rank -> node
    allocation = "alloc.txt"       # optional: one host name per line, rank i on line i
    network_model = "CM02"         # CM02 (default) | SMPI | LV08
    crosstraffic = false           # SimGrid's 5% reverse-path load of every flow; off by default
    cfg = ["smpi/send-is-detached-thresh:0"]   # more --cfg items, passed as written
    message_costs = "loggp"        # none (default) | loggp | {o_s_us = .., o_r_us = .., g_us = ..}:
                                   # per-message endpoint costs (collkit.simulation.message_costs);
                                   # for a preset: --platform sim:NAME+loggp
    nics = 4                       # NICs per node (a machine key): one host per rank, rank l on
                                   # NIC l mod nics, loopback_bw/loopback_lat = each rank's own
                                   # intra-node link; needs a one-level fattree and block placement
    global_link_lat = "1.5us"      # dragonfly only (machine keys): the links between groups' latency
    background_load = 0.3          # dragonfly only: share of each global link's capacity other jobs
                                   # use; the job's global links keep (1 - load) of it (0 <= load < 1).
                                   # Either one writes the explicit dragonfly (platform_xml.dragonfly_xml)

On a multi-NIC machine SimGrid sees one host per rank, so libcollkit is told
the node shape through COLLKIT_RANKS_PER_NODE = ppn (k consecutive ranks per
node, :func:`node_env`).

The platform then holds the MPI library ``smpi`` (and ``openmpi``/``mpich`` as
SMPI with their selection logic, see collkit.backends.smpi) and launches
collkit-bench built with SimGrid's smpicc through ``smpirun``; both are built when
first needed (collkit.simulation.simgrid_install)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from collkit.backends import smpi
from collkit.common.errors import UserError, did_you_mean
from collkit.simulation import draw as alloc_draw
from collkit.simulation import message_costs, simgrid_install
from collkit.simulation.message_costs import MessageCosts
from collkit.topology import synthetic

SIM_PREFIX = "sim:"
# the libraries a simulated platform holds: SMPI, and the ones it stands for by their selection logic
MPI_NAMES = tuple(smpi.SELECTORS)
PLACEMENTS = ("block", "cyclic")
NETWORK_MODELS = ("CM02", "SMPI", "LV08")
OWN_KEYS = ("placement", "allocation", "network_model", "crosstraffic", "cfg", "message_costs")   # the rest is the machine
# libcollkit's virtual nodes: k consecutive ranks per node (lib/core).
NODE_ENV_VAR = "COLLKIT_RANKS_PER_NODE"
# Beyond about this many ranks SMPI cannot privatise each rank's globals (one
# memory map per rank and segment hits the kernel's map count; REFERENCE.md).
MAX_RANKS = 6500


@dataclass(frozen=True)
class SimSettings:
    machine: synthetic.Machine
    ppn: int = 1
    placement: str = "block"
    allocation: tuple[str, ...] = ()      # host per rank, from the allocation file
    allocation_file: str = ""
    draw: alloc_draw.Draw | None = None   # allocation drawn per job size instead
    network_model: str = "CM02"
    crosstraffic: bool = False
    cfg: tuple[str, ...] = ()
    message_costs: MessageCosts | None = None     # None: CM02's links only, nothing per message
    smpirun: Path = field(default_factory=simgrid_install.smpirun)

    def describe(self) -> dict:
        return {"machine": self.machine.describe(), "ppn": self.ppn, "placement": self.placement,
                "allocation_file": self.allocation_file,
                "allocation_draw": self.draw.describe() if self.draw else None, "network_model": self.network_model,
                "crosstraffic": self.crosstraffic, "extra_cfg": list(self.cfg),
                "message_costs": self.message_costs.describe() if self.message_costs else "none"}


def node_env(settings: SimSettings) -> dict[str, str]:
    """Environment for smpirun: on a multi-NIC machine every rank is a host of
    its own, so MPI_COMM_TYPE_SHARED would see one-rank nodes; the variable
    gives libcollkit the real shape (ppn consecutive ranks per node)."""
    return {NODE_ENV_VAR: str(settings.ppn)} if settings.machine.nics else {}


def bench_path() -> Path:
    return simgrid_install.programs_dir() / "bench" / "collkit-bench"


def replay_path() -> Path:
    """collkit-replay (tools/replay/), built beside collkit-bench by smpicc."""
    return simgrid_install.programs_dir() / "tools" / "replay" / "collkit-replay"


def is_sim(arg: object) -> bool:
    return str(arg).startswith(SIM_PREFIX)


def from_name(arg: str) -> SimSettings:
    name = str(arg)[len(SIM_PREFIX):]
    if not name:
        raise UserError(f"--platform {arg}: name a simulated machine after 'sim:', e.g. sim:marenostrum5-like")
    costs = None
    if name.endswith(message_costs.SUFFIX):
        # the preset with LogGP-like per-message costs (the reference values)
        name, costs = name[:-len(message_costs.SUFFIX)], message_costs.LOGGP
    machine = synthetic.preset(name)
    return SimSettings(machine=machine, ppn=machine.ppn, message_costs=costs)


def from_table(t: object, path: Path) -> SimSettings:
    if not isinstance(t, dict):
        raise UserError(f"{path}: simgrid must be a table ([simgrid])")
    allowed = OWN_KEYS + tuple(synthetic.MACHINE_KEYS)
    for key in t:
        if key not in allowed:
            extra = did_you_mean(key, allowed)
            raise UserError(f"{path}: unknown key '{key}' in [simgrid]{extra}; allowed: {', '.join(allowed)}")
    own = {k: v for k, v in t.items() if k in OWN_KEYS}
    machine_keys = {k: v for k, v in t.items() if k not in OWN_KEYS}
    if not machine_keys:
        raise UserError(f"{path}: [simgrid] needs preset = \"NAME\" or the machine's parameters (kind = ...)")
    machine = synthetic.from_table(machine_keys, source=str(path))
    ppn = machine.ppn
    placement = own.get("placement", "block")
    if placement not in PLACEMENTS:
        extra = did_you_mean(str(placement), PLACEMENTS)
        raise UserError(f"{path}: [simgrid] placement {placement!r}{extra}; choose one of {', '.join(PLACEMENTS)}")
    model = own.get("network_model", "CM02")
    if model not in NETWORK_MODELS:
        raise UserError(f"{path}: [simgrid] network_model {model!r}; choose one of {', '.join(NETWORK_MODELS)}")
    cross = own.get("crosstraffic", False)
    if not isinstance(cross, bool):
        raise UserError(f"{path}: [simgrid] crosstraffic must be true or false")
    cfg = own.get("cfg", [])
    if not isinstance(cfg, list) or not all(isinstance(c, str) and ":" in c and not c.startswith("-")
                                            for c in cfg):
        raise UserError(f"{path}: [simgrid] cfg must be a list of SimGrid settings \"item:value\"")
    # before the allocation is read: a multi-NIC machine's hosts are ranks, not node<i>
    if machine.nics and (placement != "block" or "allocation" in own):
        raise UserError(f"{path}: [simgrid] nics = {machine.nics} needs block placement and no allocation "
                        f"(libcollkit learns the nodes as {NODE_ENV_VAR} consecutive ranks)")
    alloc: tuple[str, ...] = ()
    alloc_file = ""
    drawn = None
    if isinstance(own.get("allocation"), dict):
        drawn = alloc_draw.parse(own["allocation"], str(path), machine.name)
        if isinstance(machine.shape, synthetic.Torus):
            raise UserError(f"{path}: [simgrid] allocation draws need a machine of groups (fattree or dragonfly), "
                            f"not a torus; use an allocation file or none")
    elif "allocation" in own:
        alloc, alloc_file = _allocation_file(own["allocation"], path, machine)
    return SimSettings(machine=machine, ppn=ppn, placement=placement, allocation=alloc, allocation_file=alloc_file,
                       draw=drawn,
                       network_model=model, crosstraffic=cross, cfg=tuple(cfg),
                       message_costs=message_costs.parse(own.get("message_costs", "none"), path))


def _allocation_file(value: object, path: Path, machine: synthetic.Machine) -> tuple[tuple[str, ...], str]:
    """The hosts of `allocation = "FILE"`, each checked against the machine here,
    so that a host it lacks is one line before anything runs."""
    if not isinstance(value, str):
        raise UserError(f"{path}: [simgrid] allocation must be a file name or a table "
                        f"{{ draw = \"scheduler\", seed = N }}")
    f = Path(value)
    f = f if f.is_absolute() else (path.parent / f)
    try:
        lines = f.read_text().splitlines()
    except OSError as exc:
        raise UserError(f"{path}: cannot read [simgrid] allocation {f}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: [simgrid] allocation {f} is not a text file") from None
    hosts = []
    for number, ln in enumerate(lines, 1):
        h = ln.strip()
        if not h or h.startswith("#"):
            continue
        # the machine's hosts are node0 .. node<max_nodes - 1> (synthetic.Instance)
        i = synthetic.host_index(h)
        if i is None or i >= machine.max_nodes:
            raise UserError(f"{path}: [simgrid] allocation {f} line {number}: machine {machine.name} has no host "
                            f"'{h}'; name its hosts {synthetic.HOST_PREFIX}0 .. "
                            f"{synthetic.HOST_PREFIX}{machine.max_nodes - 1}")
        hosts.append(h)
    if not hosts:
        raise UserError(f"{path}: [simgrid] allocation {f} lists no host")
    return tuple(hosts), str(f)
