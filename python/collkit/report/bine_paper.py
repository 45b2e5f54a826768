"""Bine against the binomial tree or butterfly of the same structure, as the Bine paper's
Tables 3-5 count it, from simulated campaigns (scripts/bine_paper_tables.py;
docs/experiments/bine-paper-tables.md).

Where collkit.report.bine compares the fastest Bine algorithm with the fastest of *every*
other one, the paper compares each Bine algorithm with its own binomial-tree / butterfly
counterpart (Bruck for alltoall) and leaves Bine's non-contiguous reduce-scatter and
allreduce out. libcollkit's algorithms stand for the paper's as follows; the pairs are the
"same tree or butterfly shape" ones of collkit.report.bine.PAIRS (the first listed for each
Bine algorithm there), so a difference is Bine's rank distances, not another schedule:

* bcast: ``bine`` vs ``binomial_doubling``, and ``bine_scatter_allgather`` vs
  ``scatter_allgather_rd`` (scatter down the tree, then a butterfly allgather: the
  large-vector bcast of both families). Which binomial tree the paper's is shows in its
  traffic column: Bine's tree sends 88-89 % fewer bytes across groups than its bcast
  baseline on the dragonflies, and traced by ck_trace on 256 drawn lumi-like nodes it sends
  92 % fewer than the distance-doubling tree (whose last step sends half the messages
  across half the machine) but 12.5 % fewer than the distance-halving one that PAIRS puts
  first as the same shape (docs/experiments/bine-paper-tables.md). The paper's reduce
  figure (10 %) is likewise what Bine saves against reduce/binomial_doubling (12.5 %).
* reduce: ``bine`` vs ``binomial_doubling`` (each runs its bcast tree backwards), and
  ``bine_rsag`` vs ``rabenseifner`` (reduce-scatter + gather). bine vs binomial_halving
  (another shape) is left out.
* gather, scatter: ``bine_halving`` vs ``binomial``: the broadcast's distance-halving Bine
  tree run on circular runs of ranks against MPICH's binomial tree on runs of ranks, the
  same structure (the biggest subtree the farthest away). libcollkit's other Bine gather,
  ``bine`` (the distance-doubling tree, the biggest subtree at the root's neighbour), sends
  more bytes across groups than the binomial tree on every allocation tried, where the
  paper's sends 9-12 % fewer on the dragonflies and 8 % more on MareNostrum 5: the figures
  bine_halving's tree gives (docs/experiments/bine-paper-tables.md).
* allgather: ``bine_permute`` vs ``butterfly_halving``, and reduce_scatter: ``bine_permute``
  vs ``butterfly_doubling``: the XOR butterflies in the Bine butterflies' step order
  (the allgather's distances halving, the reduce-scatter's doubling; the halves of
  Rabenseifner's allreduce), run by bine_permute's own code on XOR pairs, so a difference
  is the pairs alone. The classic recursive_doubling allgather and recursive_halving
  reduce-scatter run the opposite orders: against them Bine's biggest messages travel to
  neighbours and theirs across the machine, and Bine sends 56-90 % fewer bytes across
  groups, where the paper's figures (0-19 %) are those of the same order.
  ``bine_permute`` is Bine's contiguous variant (``bine_noncontig`` is the non-contiguous
  one the paper leaves out; ``bine_remap`` is a second contiguous layout of the same
  butterfly).
* allreduce: ``bine_latency`` vs ``recursive_doubling`` (butterflies moving the whole
  vector) and ``bine_bandwidth`` vs ``rabenseifner`` (reduce-scatter + allgather
  butterflies). ``bine_bandwidth_seg`` and the non-contiguous variants are left out.
* alltoall: ``bine_butterfly`` vs ``bruck``: Bruck's store and forward (half of the blocks
  each step) on the Bine butterfly's pairs, about 2/3 of Bruck's distances. libcollkit's
  other Bine alltoall, ``bine`` (Bruck's offsets in negabinary), exchanges between Bruck's
  own pairs of ranks and so sends exactly Bruck's bytes across groups, where the paper's
  sends 15-19 % fewer.

Rules, one home each:

* A *configuration* is (machine, collective, node count, vector size n), n as in
  collkit.report.bine (the p blocks together for block collectives). One rank per node.
* In a configuration a pair *counts* when both of its algorithms have an ``ok`` record
  with a time; t_bine and t_base are the fastest Bine and the fastest base algorithm of
  the pairs that count (bcast, reduce and allreduce have two pairs, for small and large
  vectors, as the paper's Bine implementations switch between them). A configuration
  where no pair counts is *left out* (listed, never counted as a loss or a win).
* Bine *wins* when t_bine < t_base and *loses* when t_bine > t_base, unless the two
  differ by less than 1 % of the slower (TIE_PAPER): the paper's rule, "differences under
  1 % count as neither". % win and % loss are shares of the configurations.
* gain = t_base / t_bine - 1 over the won configurations: the geometric mean of the
  ratios minus 1, and the largest; drop = t_bine / t_base - 1 over the lost ones, alike.
* Traffic reduction = 1 - (bytes Bine sends across groups) / (bytes the base sends), for
  the two algorithms whose times were compared in the configuration, counted with
  collkit's traffic analysis (libcollkit's own messages through ck_trace, mapped onto the
  machine instance's groups: fat-tree pods, dragonfly groups) with the ranks on the hosts
  the campaign ran them on (its metadata's rank-to-host map, else its allocation file,
  else its block/cyclic placement, as the SimGrid launcher places them). Averaged, and
  its maximum taken, over the configurations whose job spans more than one group. The
  bytes are counted once per (pair, node count) at ck_trace's vector size: every
  algorithm's bytes grow with n, so the ratio is the same at every n."""

from __future__ import annotations

import csv
import json
import lzma
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from collkit.common.errors import UserError
from collkit.report.bine import ORDER, SystemRecords, read_campaign, timed_collkit

# collective -> its (Bine algorithm, base algorithm) pairs; why each, in the module docstring
COMPARISON: dict[str, tuple[tuple[str, str], ...]] = {
    "bcast": (("bine", "binomial_doubling"), ("bine_scatter_allgather", "scatter_allgather_rd")),
    "reduce": (("bine", "binomial_doubling"), ("bine_rsag", "rabenseifner")),
    "gather": (("bine_halving", "binomial"),),
    "scatter": (("bine_halving", "binomial"),),
    "allgather": (("bine_permute", "butterfly_halving"),),
    "reduce_scatter": (("bine_permute", "butterfly_doubling"),),
    "allreduce": (("bine_latency", "recursive_doubling"), ("bine_bandwidth", "rabenseifner")),
    "alltoall": (("bine_butterfly", "bruck"),),
}

TIE_PAPER = 0.01     # the paper: differences under 1 % count as neither a win nor a loss

# simulated preset -> the paper's machine it models (docs/topologies.md)
PRESET_MACHINES = {"lumi-like": "lumi", "leonardo-like": "leonardo", "marenostrum5-like": "marenostrum5"}

PAPER_COLUMNS = ("machine", "collective", "win_pct", "gain_avg_pct", "gain_max_pct", "loss_pct",
                 "drop_avg_pct", "drop_max_pct", "traffic_red_avg_pct", "traffic_red_max_pct")
CSV_COLUMNS = ("machine", "collective", "paper_win", "sim_win", "paper_loss", "sim_loss", "paper_gain_avg",
               "sim_gain_avg", "paper_traffic_red_avg", "sim_traffic_red_avg")


# ----------------------------------------------------------------------------- the paper's figures

def read_paper(path: Path) -> dict[tuple[str, str], dict[str, float]]:
    """(machine, collective) -> the paper's figures (percent), from its CSV ('#' lines are comments)."""
    try:
        lines = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    except OSError as exc:
        raise UserError(f"cannot read the paper's figures {path}: {exc.strerror or exc}") from None
    rows = list(csv.DictReader(lines))
    if not rows or tuple(rows[0].keys()) != PAPER_COLUMNS:
        raise UserError(f"{path}: not the paper's table; its header must be {','.join(PAPER_COLUMNS)}")
    try:
        return {(r["machine"], r["collective"]): {k: float(r[k]) for k in PAPER_COLUMNS[2:]} for r in rows}
    except (TypeError, ValueError):
        raise UserError(f"{path}: every figure must be a number") from None


# ----------------------------------------------------------------------------- campaigns

@dataclass(frozen=True)
class SimCampaign:
    """One simulated campaign: its records, the paper machine it stands for, and how its
    ranks were placed (for the traffic count)."""
    path: Path
    machine: str                       # the paper's name: lumi, leonardo, marenostrum5
    preset: str                        # the simulated machine's name (lumi-like, ...)
    model: str                         # network model and per-message costs, to keep models apart
    settings: dict = field(repr=False)          # metadata simgrid.settings
    rank_hosts: dict = field(repr=False)        # ranks -> host of each rank, as recorded
    records: list = field(repr=False)


def parse_machine_names(items: list[str], known: set[str]) -> dict[str, str]:
    """--machine-name NAME=sim:PRESET ... -> {PRESET: NAME}; NAME must be one of the paper's."""
    out = {}
    for item in items:
        name, sep, preset = item.partition("=")
        preset = preset.strip()
        preset = preset[len("sim:"):] if preset.startswith("sim:") else preset
        if not sep or not name.strip() or not preset:
            raise UserError(f"--machine-name {item}: write NAME=sim:PRESET, e.g. lumi=sim:lumi-like")
        if name.strip() not in known:
            raise UserError(f"--machine-name {item}: '{name.strip()}' is not a machine of the paper's table; "
                            f"choose one of {', '.join(sorted(known))}")
        out[preset] = name.strip()
    return out


def _packed_placement(d: Path, rel: str) -> list:
    """A placement that scripts/pack_experiment_data.py moved out of the metadata:
    rel is relative to the data root, an ancestor of the campaign."""
    for root in d.resolve().parents:
        f = root / rel
        if f.is_file():
            return json.loads(lzma.decompress(f.read_bytes()))
    return []


def open_campaign(d: Path, names: dict[str, str]) -> SimCampaign:
    """A simulated campaign directory; names maps a simulated machine to the paper's name
    (PRESET_MACHINES, overridden by --machine-name)."""
    if not d.is_dir() or not ((d / "results.csv").is_file() or (d / "records.jsonl").is_file()):
        raise UserError(f"{d}: not a campaign directory (no results.csv or records.jsonl); "
                        "pass the directory `collkit run --out` wrote")
    try:
        meta = json.loads((d / "metadata.json").read_text())
        settings = meta["simgrid"]["settings"]
        machine_desc = settings["machine"]
        preset = machine_desc["name"]
    except OSError:
        raise UserError(f"{d}: no metadata.json; pass a campaign directory as `collkit run` wrote it") from None
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{d}: its metadata.json names no simulated machine (simgrid.settings.machine); "
                        "this table compares campaigns run with --platform sim:PRESET") from None
    # a platform file's machine built on a preset says so in its source ("lumi-like as changed by FILE")
    base = str(machine_desc.get("source", "")).split(" as changed by ")[0]
    machine = names.get(preset) or names.get(base) or PRESET_MACHINES.get(preset) or PRESET_MACHINES.get(base)
    if machine is None:
        raise UserError(f"{d}: simulated machine '{preset}' stands for none of the paper's machines; "
                        f"pass --machine-name NAME=sim:{preset} (NAME: {', '.join(sorted(set(PRESET_MACHINES.values())))})")
    costs = settings.get("message_costs", "none")
    # compared whole (custom per-message costs differ in their values), shown by name
    model = f"{settings.get('network_model', 'CM02')}, message costs " + (
        f"{costs.get('model', 'custom')} {json.dumps(costs, sort_keys=True)}" if isinstance(costs, dict) else str(costs))
    placement = meta.get("placement") or []
    if isinstance(placement, dict) and "packed" in placement:
        placement = _packed_placement(d, placement["packed"])
    rank_hosts = {int(p["ranks"]): tuple(p["rank_to_host"]) for p in placement
                  if isinstance(p, dict) and p.get("ranks") and p.get("rank_to_host")}
    return SimCampaign(d, machine, preset, model, settings, rank_hosts, read_campaign(d))


# ----------------------------------------------------------------------------- analysis

@dataclass(frozen=True)
class Config:
    machine: str
    collective: str
    nodes: int
    n: int
    bine: str
    t_bine: float
    base: str
    t_base: float

    @property
    def outcome(self) -> str:
        """'win', 'loss' or 'neither' (under 1 % apart) for Bine."""
        if abs(self.t_base - self.t_bine) < TIE_PAPER * max(self.t_base, self.t_bine):
            return "neither"
        return "win" if self.t_bine < self.t_base else "loss"


@dataclass(frozen=True)
class LeftOut:
    machine: str
    collective: str
    nodes: int
    n: int
    ran: tuple[str, ...]      # the compared algorithms that did run


def placement_key(c: SimCampaign, ranks: int) -> tuple:
    """Where a campaign's ranks ran: its recorded hosts; else, without an allocation file,
    the hosts the launcher's block/cyclic rule gives (the same as recorded ones would be);
    else the allocation file's name (read only to count traffic)."""
    s = c.settings
    if ranks in c.rank_hosts or not s.get("allocation_file"):
        return tuple(job_hosts(c, ranks)[1])
    return ("allocation", s["allocation_file"])


def campaign_for(campaigns: list[SimCampaign], machine: str, ranks: int) -> SimCampaign:
    """A campaign of that machine with points at that rank count (check_consistent: all
    such campaigns placed them alike)."""
    return next(c for c in campaigns if c.machine == machine and any(r.ranks == ranks for r in c.records))


def short(model: str) -> str:
    """A model's name without its per-message cost values."""
    return model.split(" {")[0]


def check_consistent(campaigns: list[SimCampaign]) -> None:
    """Campaigns merged into one machine's table must share the simulation model and, at
    every rank count they share, the hosts of the ranks: otherwise one configuration would
    compare times (and count traffic) of different machines."""
    first: dict[str, SimCampaign] = {}
    placed: dict[tuple[str, int], tuple[SimCampaign, tuple]] = {}
    for c in campaigns:
        f = first.setdefault(c.machine, c)
        if f.model != c.model or f.settings.get("machine", {}).get("kind") != c.settings.get("machine", {}).get("kind"):
            raise UserError(f"{f.path} and {c.path} simulate {c.machine} on different machines or models "
                            f"({f.preset}, {short(f.model)}; {c.preset}, {short(c.model)}); "
                            "make one table per model")
        for ranks in sorted({r.ranks for r in c.records}):
            other, key = placed.setdefault((c.machine, ranks), (c, placement_key(c, ranks)))
            if key != placement_key(c, ranks):
                raise UserError(f"{other.path} and {c.path} placed their {ranks} ranks on different hosts; "
                                "make one table per placement")


def with_pairs(items: list[str]) -> dict[str, tuple[tuple[str, str], ...]]:
    """COMPARISON with the collectives named in COLLECTIVE=BINE:BASE items compared by those
    pairs instead (an item per pair; the experiments that swap a baseline)."""
    swapped: dict[str, list[tuple[str, str]]] = {}
    for item in items:
        coll, _, pair = item.partition("=")
        bine, _, base = pair.partition(":")
        if coll not in COMPARISON or not _is_name(bine) or not _is_name(base):
            raise UserError(f"--pair {item!r}: give COLLECTIVE=BINE:BASE, a collective of "
                            f"{', '.join(COMPARISON)} and two algorithm names, e.g. gather=bine:binomial")
        swapped.setdefault(coll, []).append((bine, base))
    return {c: tuple(swapped.get(c, pairs)) for c, pairs in COMPARISON.items()}


def _is_name(s: str) -> bool:
    return bool(s) and all(ch.isalnum() or ch == "_" for ch in s) and s.isascii()


def configurations(campaigns: list[SimCampaign],
                   comparison: dict[str, tuple[tuple[str, str], ...]] | None = None
                   ) -> tuple[list[Config], list[LeftOut]]:
    """The configurations of these campaigns, and those left out because no pair ran whole
    (pairs: COMPARISON unless given)."""
    comparison = comparison or COMPARISON
    check_consistent(campaigns)
    runs = [SystemRecords(c.machine, c.records) for c in campaigns]
    times: dict[tuple, dict[str, float]] = {}
    for machine, r, n in timed_collkit(runs):
        if r.collective in comparison:
            algs = times.setdefault((machine, r.collective, r.ranks, n), {})
            # the same point in two campaigns: the faster, as collkit.report.bine.cells does
            algs[r.algorithm] = min(r.time_median_us, algs.get(r.algorithm, math.inf))
    out, left = [], []
    for key, algs in sorted(times.items()):
        pairs = [(b, o) for b, o in comparison[key[1]] if b in algs and o in algs]
        if not pairs:
            ran = tuple(sorted(a for pair in comparison[key[1]] for a in pair if a in algs))
            if ran:
                left.append(LeftOut(*key, ran))
            continue
        bine = min((b for b, _ in pairs), key=lambda a: (algs[a], a))
        base = min((o for _, o in pairs), key=lambda a: (algs[a], a))
        out.append(Config(*key, bine, algs[bine], base, algs[base]))
    return out, left


def no_pair_error(paths: list[Path], comparison: dict[str, tuple[tuple[str, str], ...]] | None = None
                  ) -> UserError:
    """The refusal when no configuration counts: which campaigns, and which pairs it looks for."""
    pairs = "; ".join(f"{c}: " + ", ".join(f"{b} vs {o}" for b, o in p) for c, p in (comparison or COMPARISON).items())
    return UserError(f"no Bine pair ran whole in {', '.join(str(d) for d in paths)}: a configuration needs an "
                     f"ok point of a Bine algorithm and of its counterpart at the same nodes and size ({pairs})")


@dataclass(frozen=True)
class Row:
    """One (machine, collective) of the table, percentages (None: no configuration)."""
    machine: str
    collective: str
    configs: int
    left_out: int
    win: float | None
    loss: float | None
    gain_avg: float | None
    gain_max: float | None
    drop_avg: float | None
    drop_max: float | None
    traffic_avg: float | None = None
    traffic_max: float | None = None
    traffic_configs: int = 0


def gmean_minus_one(ratios: list[float]) -> float:
    """100 x (geometric mean of the ratios - 1), the paper's average gain or drop."""
    return 100.0 * (math.exp(sum(math.log(r) for r in ratios) / len(ratios)) - 1.0)


def summarise(configs: list[Config], left: list[LeftOut],
              reductions: dict[Config, float] | None = None) -> list[Row]:
    """One row per (machine, collective); reductions: configuration -> traffic reduction
    (percent) for those whose job spans groups."""
    keys = sorted({(c.machine, c.collective) for c in configs} | {(x.machine, x.collective) for x in left},
                  key=lambda k: (k[0], ORDER.index(k[1])))
    rows = []
    for machine, coll in keys:
        cs = [c for c in configs if (c.machine, c.collective) == (machine, coll)]
        n_left = sum((x.machine, x.collective) == (machine, coll) for x in left)
        gains = [c.t_base / c.t_bine for c in cs if c.outcome == "win"]
        drops = [c.t_bine / c.t_base for c in cs if c.outcome == "loss"]
        red = [reductions[c] for c in cs if reductions and c in reductions]
        if not cs:      # only left-out configurations: nothing to say
            rows.append(Row(machine, coll, 0, n_left, None, None, None, None, None, None))
            continue
        # no win (loss): gain (drop) 0, as the paper writes it where Bine never loses
        rows.append(Row(machine, coll, len(cs), n_left,
                        100.0 * len(gains) / len(cs), 100.0 * len(drops) / len(cs),
                        gmean_minus_one(gains) if gains else 0.0, 100.0 * (max(gains) - 1) if gains else 0.0,
                        gmean_minus_one(drops) if drops else 0.0, 100.0 * (max(drops) - 1) if drops else 0.0,
                        sum(red) / len(red) if red else None, max(red) if red else None, len(red)))
    return rows


# ----------------------------------------------------------------------------- traffic

def machine_of(settings: dict):
    """The simulated machine a campaign recorded (its describe()), rebuilt."""
    from collkit.topology import synthetic
    desc = settings["machine"]
    kind = desc["kind"]
    rename = {"routers_per_group": "routers"}
    table = {rename.get(k, k): desc[k] for k in ("groups", "routers_per_group", "nodes_per_router", "global_links",
                                                 "local_links", "down", "up", "parallel", "dims", "unit") if k in desc}
    table |= {"name": desc["name"], "kind": kind, "link_bw": desc["link_bw_Bps"], "link_lat": desc["link_lat_s"],
              "ppn": int(desc.get("ppn", 1)), "max_nodes": int(desc["max_nodes"])}
    return synthetic.from_table(table, source=f"the metadata of machine {desc['name']}")


def job_hosts(c: SimCampaign, ranks: int):
    """(machine instance, host of each rank) as this campaign ran its ranks."""
    from collkit.launch.simgrid import placement as sim_placement
    from collkit.simulation.settings import SimSettings

    s = c.settings
    hosts: tuple[str, ...] = c.rank_hosts.get(ranks, ())
    alloc_file = s.get("allocation_file") or ""
    if not hosts and alloc_file:
        try:
            hosts = tuple(ln.strip() for ln in Path(alloc_file).read_text().splitlines()
                          if ln.strip() and not ln.lstrip().startswith("#"))
        except OSError as exc:
            raise UserError(f"{c.path}: the campaign ran on the allocation {alloc_file}, which cannot be read "
                            f"({exc.strerror}) and its metadata records no rank-to-host map; put the file "
                            "back there to count its traffic, or pass --no-traffic") from None
    ppn = int(s.get("ppn", 1))
    settings = SimSettings(machine=machine_of(s), ppn=ppn, placement=s.get("placement", "block"),
                           allocation=hosts, allocation_file=alloc_file or "the recorded rank-to-host map",
                           smpirun=Path("smpirun"))
    # the launcher's own rule: the smallest instance holding the hosts, each rank's host
    return sim_placement(settings, ranks)


def job_placement(c: SimCampaign, ranks: int):
    """(topology, placement) of the ranks on the hosts this campaign ran them on."""
    from collkit.traffic.placement import place

    inst, rank_host = job_hosts(c, ranks)
    topo = inst.topology()
    return topo, place(topo.lookup(list(rank_host)), "explicit")


def traffic_reductions(campaigns: list[SimCampaign], configs: list[Config], tracer=None) -> dict[Config, float]:
    """Traffic reduction (percent) of every configuration whose job spans more than one group."""
    from collkit.traffic.analysis import analyse
    from collkit.traffic.tracer import Tracer

    tracer = tracer or Tracer()
    cache: dict[tuple, float | None] = {}
    out = {}
    for cfg in configs:
        key = (cfg.machine, cfg.collective, cfg.bine, cfg.base, cfg.nodes)
        if key not in cache:
            topo, pl = job_placement(campaign_for(campaigns, cfg.machine, cfg.nodes), cfg.nodes)
            if np.unique(topo.node_group[pl.rank_node]).size < 2:
                cache[key] = None      # the job sits in one group: nothing crosses
            else:
                t_base, t_bine = analyse(tracer, cfg.collective, [cfg.base, cfg.bine], pl, topo)
                base_bytes, bine_bytes = t_base.volume.inter_group, t_bine.volume.inter_group
                cache[key] = None if base_bytes <= 0 else 100.0 * (1.0 - bine_bytes / base_bytes)
        if cache[key] is not None:
            out[cfg] = cache[key]
    return out


def traffic_by_nodes(reductions: dict[Config, float]) -> dict[tuple[str, str], dict[int, float]]:
    """(machine, collective) -> node count -> traffic reduction (percent): one figure per job,
    the same at every vector size (the bytes grow with n alike)."""
    out: dict[tuple[str, str], dict[int, float]] = {}
    for c, v in reductions.items():
        out.setdefault((c.machine, c.collective), {})[c.nodes] = v
    return out


def traffic_by_nodes_markdown(by: dict[tuple[str, str], dict[int, float]]) -> str:
    """Per machine, a row per collective and a column per node count whose job spans groups."""
    parts = []
    for machine in sorted({m for m, _ in by}):
        nodes = sorted({n for (m, _), row in by.items() if m == machine for n in row})
        lines = [f"### {machine}: traffic reduction by node count, percent", "",
                 "| collective | " + " | ".join(str(n) for n in nodes) + " |", "|" + " --- |" * (len(nodes) + 1)]
        for coll in sorted({c for m, c in by if m == machine}, key=ORDER.index):
            row = by[machine, coll]
            lines.append(f"| {coll} | " + " | ".join(_num(row.get(n)) if n in row else "–" for n in nodes) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


# ----------------------------------------------------------------------------- output

def _num(x: float | None, digits: int = 1) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def csv_rows(rows: list[Row], paper: dict) -> list[dict[str, str]]:
    """The side-by-side CSV (CSV_COLUMNS): every collective of each machine simulated."""
    have = {(r.machine, r.collective): r for r in rows}
    out = []
    for machine in sorted({r.machine for r in rows}):
        for coll in ORDER:
            p, r = paper.get((machine, coll), {}), have.get((machine, coll))
            def sim(attr: str) -> str:
                return _num(getattr(r, attr)) if r is not None and r.configs else ""
            out.append({"machine": machine, "collective": coll,
                        "paper_win": _num(p.get("win_pct"), 0), "sim_win": sim("win"),
                        "paper_loss": _num(p.get("loss_pct"), 0), "sim_loss": sim("loss"),
                        "paper_gain_avg": _num(p.get("gain_avg_pct"), 0), "sim_gain_avg": sim("gain_avg"),
                        "paper_traffic_red_avg": _num(p.get("traffic_red_avg_pct"), 0),
                        "sim_traffic_red_avg": sim("traffic_avg")})
    return out


def write_csv(path: Path, rows: list[Row], paper: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        w.writeheader()
        w.writerows(csv_rows(rows, paper))


def markdown(rows: list[Row], paper: dict, traffic: bool,
             comparison: dict[str, tuple[tuple[str, str], ...]] | None = None) -> str:
    """Per machine, the paper's figures beside collkit's ('paper / sim', percent; '–': none)."""
    comparison = comparison or COMPARISON
    def both(p: float | None, s: float | None) -> str:
        return f"{'–' if p is None else f'{p:.0f}'} / {'–' if s is None else f'{s:.1f}'}"

    parts = []
    for machine in sorted({r.machine for r in rows}):
        lines = [f"### {machine}", "",
                 "paper / simulated, percent; configurations = (node count, vector size) where a pair ran whole",
                 "",
                 "| collective | pairs (Bine vs base) | configurations | left out | % win | gain gmean | gain max "
                 "| % loss | drop gmean | drop max | traffic reduction avg | traffic reduction max |",
                 "|" + " --- |" * 12]
        for r in (x for x in rows if x.machine == machine):
            p = paper.get((machine, r.collective), {})
            pairs = "<br>".join(f"{b} vs {o}" for b, o in comparison[r.collective])
            t_avg = both(p.get("traffic_red_avg_pct"), r.traffic_avg) if traffic else "not counted"
            t_max = both(p.get("traffic_red_max_pct"), r.traffic_max) if traffic else "not counted"
            lines.append(f"| {r.collective} | {pairs} | {r.configs} | {r.left_out} | "
                         f"{both(p.get('win_pct'), r.win)} | {both(p.get('gain_avg_pct'), r.gain_avg)} | "
                         f"{both(p.get('gain_max_pct'), r.gain_max)} | {both(p.get('loss_pct'), r.loss)} | "
                         f"{both(p.get('drop_avg_pct'), r.drop_avg)} | {both(p.get('drop_max_pct'), r.drop_max)} | "
                         f"{t_avg} | {t_max} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


# ----------------------------------------------------------------------------- settings, one at a time

WITHIN = 15.0     # issue #53's test of a simulated % win against the paper's: within 15 points


def read_side_by_side(path: Path) -> list[dict[str, str]]:
    """A CSV write_csv wrote (CSV_COLUMNS)."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not rows or tuple(rows[0].keys()) != CSV_COLUMNS:
        raise UserError(f"{path}: not a table bine_paper_tables.py wrote; its header must be {','.join(CSV_COLUMNS)}")
    return rows


SIM_FIGURES = ("sim_win", "sim_loss", "sim_gain_avg", "sim_traffic_red_avg")


def median_rows(steps: list[tuple[str, list[dict[str, str]]]]) -> list[dict[str, str]]:
    """Per machine and collective, the median over the steps of each simulated figure
    (the paper's columns kept): the shares of several draws of the allocations (issue
    #53: one draw moved lumi's shares by up to 20 points). A figure some step lacks is
    taken over the steps that have it; one no step has stays empty."""
    by_key: dict[tuple[str, str], list[dict[str, str]]] = {}
    for _, rows in steps:
        for r in rows:
            by_key.setdefault((r["machine"], r["collective"]), []).append(r)
    out = []
    for rows in by_key.values():
        row = dict(rows[0])
        for fig in SIM_FIGURES:
            values = [float(r[fig]) for r in rows if r[fig]]
            row[fig] = _num(statistics.median(values)) if values else ""
        out.append(row)
    return out


def steps_markdown(steps: list[tuple[str, list[dict[str, str]]]]) -> str:
    """Per machine and collective, the paper's % win, % loss and traffic reduction beside
    each step's (a platform setting added at a time, in the order given), and per step
    how many collectives' % win is within WITHIN points of the paper's."""
    machines = sorted({r["machine"] for _, rows in steps for r in rows})
    labels = [label for label, _ in steps]
    parts = []
    for machine in machines:
        got = {label: {r["collective"]: r for r in rows if r["machine"] == machine} for label, rows in steps}
        colls = [c for c in ORDER if any(c in g for g in got.values())]
        lines = [f"### {machine}", "",
                 "| collective | figure | paper | " + " | ".join(labels) + " |",
                 "|" + " --- |" * (3 + len(labels))]
        for coll in colls:
            first = next(g[coll] for g in got.values() if coll in g)
            for fig, paper_key, sim_key in (("% win", "paper_win", "sim_win"), ("% loss", "paper_loss", "sim_loss"),
                                            ("traffic red.", "paper_traffic_red_avg", "sim_traffic_red_avg")):
                cells = [got[label].get(coll, {}).get(sim_key) or "–" for label in labels]
                lines.append(f"| {coll} | {fig} | {first[paper_key] or '–'} | " + " | ".join(cells) + " |")
        close = []
        for label in labels:
            n = sum(1 for coll, r in got[label].items() if r["sim_win"] and r["paper_win"]
                    and abs(float(r["sim_win"]) - float(r["paper_win"])) <= WITHIN)
            close.append(f"{n} of {sum(1 for r in got[label].values() if r['sim_win'])}")
        lines.append(f"| **% win within {WITHIN:.0f} points** | | | " + " | ".join(close) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
