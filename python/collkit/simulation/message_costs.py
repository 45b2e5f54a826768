"""Per-message costs for simulated machines: a LogGP-like endpoint model.

SimGrid's CM02 flow model charges a message its route's latency and its bytes
over the links' bandwidth, shared max-min; nothing per message at the
endpoints. Real MPI stacks spend CPU time on each message (LogGP's send and
receive overheads o_s and o_r) and a NIC injects messages no faster than one
per gap g, which is what makes a root that posts p small messages at once
slow. SMPI 3.32 has three settings for such costs, piecewise linear in the
message size ("size:seconds:seconds-per-byte;..."), each a simulated sleep of
the calling rank (so they hold with smpi/simulate-computation:no; checked with
a two-rank ping, docs/architecture.md "Simulated supercomputers"):

* smpi/os  -- in a blocking send that completes without the receiver
  (eager, below smpi/send-is-detached-thresh = 64 KiB);
* smpi/ois -- in every MPI_Isend (and issend), before the message is posted;
* smpi/or  -- in every receive, when it completes.

collkit maps LogGP onto them: os = ois = max(o_s, g) per message (a rank
cannot post messages faster than its NIC injects them, and the overhead
serialises the posts, which is how the gap shows), or = o_r per message;
LogGP's G stays with the links' bandwidth. No per-byte overhead: above the
eager limit messages go zero-copy (rendezvous), and the per-byte eager copy
costs of the measurements below are a host's memory speed, not the NIC's.

Reference values (REFERENCE_US), the order of magnitude of MPI over a modern
HPC NIC; none was measured on the machines the presets model:
* o_s = 0.27 us, o_r = 0.55 us: Netgauge's LogGP benchmark, the 1-byte line
  of the example run on its documentation page (Hoefler et al., "Low-Overhead
  LogGP Parameter Assessment for Modern Interconnection Networks", IPDPS
  2007; https://htor.inf.ethz.ch/research/netgauge/loggp/: o_s=0.266,
  o_r=0.547 us).
* g = 0.33 us: one pair's small-message rate with OSU's osu_mbw_mr (window
  64) over Intel Omni-Path with Open MPI 1.10, 2.9-3.3 million messages/s up
  to 64 B (https://gist.github.com/hppritcha/8da4436a216c9d96bf10ad9d403da03f),
  i.e. 0.30-0.35 us per message."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from collkit.common.errors import UserError, did_you_mean

NAMES = ("none", "loggp")
KEYS = ("o_s_us", "o_r_us", "g_us")
REFERENCE_US = {"o_s_us": 0.27, "o_r_us": 0.55, "g_us": 0.33}
MAX_US = 1000.0          # a per-message cost of a millisecond is a typo, not a network
SUFFIX = "+loggp"        # sim:NAME+loggp: a preset with the reference costs


@dataclass(frozen=True)
class MessageCosts:
    o_s_us: float
    o_r_us: float
    g_us: float

    def describe(self) -> dict:
        return {"model": "loggp", "o_s_us": self.o_s_us, "o_r_us": self.o_r_us, "g_us": self.g_us,
                "smpi_cfg": cfg(self)}


LOGGP = MessageCosts(**REFERENCE_US)


def cfg(costs: MessageCosts | None) -> list[str]:
    """The --cfg items of these costs (none without)."""
    if costs is None:
        return []
    post = max(costs.o_s_us, costs.g_us) * 1e-6
    return [f"smpi/os:0:{post:.6g}:0", f"smpi/ois:0:{post:.6g}:0", f"smpi/or:0:{costs.o_r_us * 1e-6:.6g}:0"]


def parse(value: object, path: Path | str) -> MessageCosts | None:
    """[simgrid] message_costs: "none", "loggp" (the reference values) or a
    table of o_s_us, o_r_us, g_us (microseconds; missing ones take the
    reference values)."""
    where = f"{path}: [simgrid] message_costs"
    if isinstance(value, str):
        if value not in NAMES:
            raise UserError(f"{where} {value!r}{did_you_mean(value, NAMES)}; choose one of {', '.join(NAMES)} "
                            f"or a table of {', '.join(KEYS)}")
        return None if value == "none" else LOGGP
    if not isinstance(value, dict):
        raise UserError(f"{where} must be \"none\", \"loggp\" or a table of {', '.join(KEYS)}")
    vals = dict(REFERENCE_US)
    for key, v in value.items():
        if key not in KEYS:
            raise UserError(f"{where}: unknown key '{key}'{did_you_mean(key, KEYS)}; allowed: {', '.join(KEYS)}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_US:
            raise UserError(f"{where}: {key} must be a number of microseconds from 0 to {MAX_US:g}, not {v!r}")
        vals[key] = float(v)
    return MessageCosts(**vals)
