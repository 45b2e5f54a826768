"""The Open MPI classic dynamic rules file, version 1 (what Open MPI 4.1.4's
coll/tuned parser reads; ../shared/REFERENCE.md, "Tuning files, in detail"). Open MPI
5.0.11 reads it too, the same way: 5.0's ompi_coll_tuned_read_rules_config_file only adds
an optional `rule-file-version-2` first line and a fifth column, which 4.1.4 would not
read, and no JSON (that is 6.0); docs/tuning-files.md, "Open MPI 5.0".

Layout: number of collectives; per collective its id and number of comm sizes; per
comm size the size and number of message rules; per rule MSGSIZE ALG FANINOUT SEGSIZE.
* message size as Open MPI defines it: dtsize*count for allreduce and bcast (collkit's
  bytes), dtsize*count*comm_size for allgather and alltoall (collkit's block bytes x p);
* algorithm 0 leaves the call to tuned's fixed rules (the library default); other ids
  only as ompi_info lists them (backends/openmpi.py);
* the first rule of every comm size is at 0, numbers never have leading zeros (the
  parser reads %li: 010 would be 8), comments start with '#';
* a comm size 1 entry (default) first and a comm size max+1 entry (default) last: the
  parser applies the last entry not above the communicator's size to every larger one,
  so without it rank counts beyond those tuned would inherit the largest one's rules.
"""

from __future__ import annotations

from collkit.backends import openmpi as ompi
from collkit.backends.parameters import rules_column
from collkit.mpis.install import MPIInstall
from collkit.tune.decide import DEFAULT, Candidate, Rule

# The format this module writes: Open MPI's backend names it (`collkit tune --format`).
FORMAT = ompi.OpenMPIBackend.tuning_format

COLL_IDS = {"allgather": 0, "allreduce": 2, "alltoall": 3, "barrier": 6, "bcast": 7, "gather": 9,
            "reduce": 11, "reduce_scatter": 13, "scatter": 15}
TOTAL_SIZE = {"allgather", "alltoall"}   # Open MPI's message size is the total over ranks


def message_size(collective: str, nbytes: int, ranks: int) -> int:
    return nbytes * ranks if collective in TOTAL_SIZE else nbytes


def fanout(info: ompi.OmpiInfo, collective: str, native: str) -> int:
    """The fan-in/out forced runs use (tuned's own parameter) for chains and trees, else 0."""
    stem = ompi.tuned_param(collective)
    if "chain" in native:
        key = f"coll_tuned_{stem}_algorithm_chain_fanout"
    elif "tree" in native or native == "knomial":
        key = f"coll_tuned_{stem}_algorithm_tree_fanout"
    else:
        return 0
    try:
        return int(info.values.get(key, "0"))
    except ValueError:
        return 0


def segsize(collective: str, native: str) -> int:
    return ompi.SEGMENT_BYTES.get((collective, native), 0)


def library_state(install: MPIInstall) -> ompi.OmpiInfo:
    """What writing a file for this Open MPI needs from it: ompi_info's parameters (the
    fanouts forced runs use)."""
    return ompi.parse(ompi.OpenMPIBackend().listing(install))


def expressible(collective: str, cand: Candidate, info: ompi.OmpiInfo) -> bool:
    """Whether a rules file can name the candidate: any id ompi_info lists but 0 (the
    fixed rules), for a collective the file has an id for."""
    return collective in COLL_IDS and cand.native_id.isdigit() and int(cand.native_id) > 0


def variant_fits(collective: str, params: tuple[tuple[str, str], ...]) -> bool:
    """Whether a measured parameter setting of a candidate can be written as a rule of its
    own: every parameter fills one of the rule's columns (segment size, fanout;
    backends/parameters.rules_column) and is the collective's own."""
    stem = f"coll_tuned_{ompi.tuned_param(collective)}_"
    return bool(params) and all(k.startswith(stem) and rules_column(k) for k, _ in params)


def ownership(points, candidates: dict[str, list[Candidate]]) -> dict:
    """Open MPI's coll/tuned decides every collective the file names: nothing to share."""
    return {}


def write(rules: list[Rule], candidates: dict[str, list[Candidate]], info: ompi.OmpiInfo,
          header: list[str]) -> str:
    by_coll: dict[str, dict[int, list[Rule]]] = {}
    for r in rules:
        by_coll.setdefault(r.collective, {}).setdefault(r.ranks, []).append(r)
    out = [f"# {h}" for h in header]
    out.append(f"{len(by_coll)} # collectives")
    for coll in sorted(by_coll, key=lambda c: COLL_IDS[c]):
        per = by_coll[coll]
        names = {c.name: c for c in candidates.get(coll, [])}
        sizes = sorted(per)
        out.append(f"{COLL_IDS[coll]} # {coll}")
        out.append(f"{len(sizes) + 2} # comm sizes")
        out.append("1 1 # comm size 1 and below the smallest tuned: the library's own rules")
        out.append("0 0 0 0")
        for p in sizes:
            out.append(f"{p} {len(per[p])} # comm size {p}")
            for r in per[p]:
                lo = message_size(coll, r.bytes_lo, p) if r.bytes_lo else 0
                if r.choice == DEFAULT:
                    alg, fan, seg, what = 0, 0, 0, "default"
                else:
                    c = names[r.choice]
                    alg, fan, seg = int(c.native_id), fanout(info, coll, c.native), segsize(coll, c.native)
                    # a variant's own segment size / fanout ([parameters.openmpi]) fills its column
                    for name, value in c.params:
                        column = rules_column(name)
                        if column == "segsize":
                            seg = int(value)
                        elif column == "fanout":
                            fan = int(value)
                    what = f"{r.choice} ({c.native})"
                speed = f", expected {r.speedup:.2f}x" if r.speedup and r.choice != DEFAULT else ""
                cut = f", cutoff: {r.cutoff}" if r.cutoff else ""
                out.append(f"{lo} {alg} {fan} {seg} # {what}, {r.source}{cut}{speed}")
        beyond = sizes[-1] + 1
        out.append(f"{beyond} 1 # comm size {beyond} and above: the library's own rules")
        out.append("0 0 0 0")
    return "\n".join(out) + "\n"


# the writers' shared entry point (tune/writers/__init__.py): write() already takes
# library_state's answer
write_file = write


def caveats(rules: list[Rule], candidates: dict[str, list[Candidate]]) -> list[str]:
    """Nothing beyond the table `collkit tune` prints: untuned rank counts keep the
    library's default in this format."""
    return []
