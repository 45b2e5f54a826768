"""Bytes per NIC on a multi-NIC node (``collkit traffic --map sim:NAME`` of a
machine with ``nics``, or ``--nics K``).

The node shape is the simulated platform's (collkit.simulation.platform_xml.
multinic_xml): block placement, ``ppn`` consecutive ranks per node, local rank
l bound to NIC l mod k. A message between two ranks of one node crosses the
intra-node link and no NIC; any other leaves through the sender's NIC and
enters through the receiver's. Per NIC index j (summed over the nodes) the
bytes out and in; the busiest single (node, NIC) each way, which bounds the
time of a bandwidth-bound collective; and the most off-node sends of one rank,
which counts a ring's inter-node steps (P - 1 for the flat ring with one rank
on the node's boundary, P/k - 1 for k parallel rings)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

import numpy as np

from collkit.common.errors import UserError
from collkit.common.table import render
from collkit.traffic.jobs import format_number
from collkit.traffic.trace import Trace


@dataclass(frozen=True)
class NicLoad:
    """One algorithm's traffic on the NICs of ``ppn``-rank nodes with ``nics`` NICs."""

    algorithm: str
    ranks: int
    ppn: int
    nics: int
    n: int                                  # vector bytes: results in multiples of it
    intra_node: int                         # bytes on intra-node links
    out_bytes: tuple[int, ...]              # per NIC index, summed over nodes
    in_bytes: tuple[int, ...]
    busiest_out: int                        # the most bytes one (node, NIC) sends
    busiest_in: int
    inter_sends: int                        # the most off-node messages one rank sends
    steps: tuple[tuple[int, ...], ...] = ()  # per step, bytes out per NIC index

    @property
    def balance(self) -> float:
        """Busiest NIC out / mean NIC out over every (node, NIC): 1.0 is even."""
        total = sum(self.out_bytes)
        nodes = -(-self.ranks // self.ppn)
        return self.busiest_out * nodes * self.nics / total if total else 0.0

    def in_n(self, b: int) -> float:
        return b / self.n if self.n else 0.0


def nic_of_rank(ranks: int, ppn: int, nics: int) -> tuple[np.ndarray, np.ndarray]:
    """(node, NIC) of every rank under block placement."""
    if nics < 1 or ppn < nics:
        raise UserError(f"{nics} NICs per node need at least {nics} ranks per node, not {ppn}")
    r = np.arange(ranks)
    return r // ppn, (r % ppn) % nics


def nic_load(trace: Trace, ppn: int, nics: int) -> NicLoad:
    if trace.step is None:
        raise ValueError("NIC loads need a trace in messages format")
    p = trace.key.ranks
    node, nic = nic_of_rank(p, ppn, nics)
    nodes = int(node[-1]) + 1
    w = trace.nbytes.astype(np.float64)
    ns, nd = node[trace.src], node[trace.dst]
    off = ns != nd
    intra = int(round(w[~off].sum()))
    src_nic, dst_nic, wo = nic[trace.src][off], nic[trace.dst][off], w[off]
    out = np.bincount(src_nic, weights=wo, minlength=nics)
    inn = np.bincount(dst_nic, weights=wo, minlength=nics)
    per_out = np.bincount(ns[off] * nics + src_nic, weights=wo, minlength=nodes * nics)
    per_in = np.bincount(nd[off] * nics + dst_nic, weights=wo, minlength=nodes * nics)
    sends = np.bincount(trace.src[off], minlength=p)
    nsteps = int(trace.step.max()) + 1 if trace.step.size else 0
    table = np.bincount(trace.step[off].astype(np.int64) * nics + src_nic, weights=wo,
                        minlength=nsteps * nics).reshape(nsteps, nics)
    as_int = lambda a: tuple(int(round(float(x))) for x in a)  # noqa: E731
    return NicLoad(trace.key.algorithm, p, ppn, nics, trace.n, intra, as_int(out), as_int(inn),
                   int(round(float(per_out.max()))) if per_out.size else 0,
                   int(round(float(per_in.max()))) if per_in.size else 0,
                   int(sends.max()) if sends.size else 0, tuple(as_int(row) for row in table))


def _rows(loads: list[NicLoad], per_step: bool) -> list[dict]:
    rows = []
    for x in loads:
        for j in range(x.nics):
            rows.append({"algorithm": x.algorithm, "step": "all", "nic": j, "out_bytes": x.out_bytes[j],
                         "in_bytes": x.in_bytes[j], "out_n": x.in_n(x.out_bytes[j]),
                         "in_n": x.in_n(x.in_bytes[j])})
        if per_step:
            for k, row in enumerate(x.steps):
                for j in range(x.nics):
                    rows.append({"algorithm": x.algorithm, "step": k, "nic": j, "out_bytes": row[j],
                                 "in_bytes": "", "out_n": x.in_n(row[j]), "in_n": ""})
    return rows


def summary(x: NicLoad) -> dict:
    return {"algorithm": x.algorithm, "ranks": x.ranks, "ppn": x.ppn, "nics": x.nics, "n_bytes": x.n,
            "intra_node_n": x.in_n(x.intra_node), "busiest_nic_out_n": x.in_n(x.busiest_out),
            "busiest_nic_in_n": x.in_n(x.busiest_in), "nic_balance": x.balance,
            "inter_node_sends_max": x.inter_sends}


def table(loads: list[NicLoad], per_step: bool) -> str:
    x0 = loads[0]
    parts = [f"\nNICs: {x0.nics} per node, {x0.ppn} ranks per node, local rank l on NIC l mod {x0.nics}; "
             "bytes summed over the nodes, in multiples of n"]
    heads = ["algorithm", "intra_node_n", *(f"nic{j}_out_n" for j in range(x0.nics)),
             *(f"nic{j}_in_n" for j in range(x0.nics)), "busiest_out_n", "balance", "inter_node_sends"]
    rows = [[x.algorithm, format_number(x.in_n(x.intra_node), 4),
             *(format_number(x.in_n(b), 4) for b in x.out_bytes), *(format_number(x.in_n(b), 4) for b in x.in_bytes),
             format_number(x.in_n(x.busiest_out), 4), f"{x.balance:.2f}", str(x.inter_sends)] for x in loads]
    parts.append(render(heads, rows, right=set(range(1, len(heads)))))
    parts.append("balance = busiest (node, NIC) out / mean over all NICs (1.00: every NIC equally busy); "
                 "inter_node_sends = the most off-node messages one rank sends")
    if per_step:
        for x in loads:
            parts.append(f"\n{x.algorithm}, bytes out per NIC and step (step k = every rank's k-th send):")
            parts.append(render(["step", *(f"nic{j}_out_n" for j in range(x.nics))],
                                [[str(k), *(format_number(x.in_n(b), 4) for b in row)]
                                 for k, row in enumerate(x.steps)], right=set(range(x.nics + 1))))
    return "\n".join(parts)


def csv_text(loads: list[NicLoad], per_step: bool) -> str:
    buf = io.StringIO()
    rows = _rows(loads, per_step)
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: format_number(v) if isinstance(v, float) else v for k, v in row.items()})
    return buf.getvalue().rstrip("\n")


def json_obj(loads: list[NicLoad], per_step: bool) -> list[dict]:
    out = []
    for x in loads:
        rec = summary(x)
        rec["nic_out_n"] = [x.in_n(b) for b in x.out_bytes]
        rec["nic_in_n"] = [x.in_n(b) for b in x.in_bytes]
        if per_step:
            rec["steps_out_n"] = [[x.in_n(b) for b in row] for row in x.steps]
        out.append(rec)
    return out


def to_json(loads: list[NicLoad], per_step: bool) -> str:
    return json.dumps(json_obj(loads, per_step), indent=2)
