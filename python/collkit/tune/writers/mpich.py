"""The MPICH JSON selection file (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE).

A user file replaces MPICH's whole built-in tree, so the file starts from the
built-in tree itself, read from the installed libmpi (MPICH compiles its MPIR-level
JSON into the library as a string): every collective MPICH may call stays as the
library would run it, and only the tuned collectives' intra-communicator branch is
replaced by

    comm_size<=P1 -> avg_msg_size<=N1 -> algorithm=..., ..., avg_msg_size=any -> ...
    comm_size<=P2 -> ...
    comm_size=any -> the built-in intra branch (rank counts beyond the tuned ones)

A range the decision leaves to the default holds a copy of the built-in intra branch,
so "default" is exactly what MPICH's MPIR level would have chosen; a collective left
wholly to the default keeps the built-in branch untouched. Which collectives the file
takes from the ch4 device, and the settings that go with it, are tune/mpich_device.py's. Sizes: avg_msg_size is
typesize*count (collkit's bytes) for allreduce, bcast and reduce; allgather has no
avg_msg_size key and uses total_msg_size, typesize*count*comm_size (collkit's block
bytes x p). Algorithm names are checked against the strings of the installed libmpi
(an unknown name makes MPICH assert); algorithms that take parameters (k-ary trees,
k-nomial variants) are not chosen, since a leaf without them is not what was measured.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from collkit.backends import mpich as backend
from collkit.common.errors import UserError
from collkit.mpis.install import MPIInstall
from collkit.tune import mpich_device
from collkit.tune.decide import DEFAULT, Candidate, Rule

# The format this module writes: MPICH's backend names it (`collkit tune --format`).
FORMAT = backend.MPICHBackend.tuning_format

REDUCTIONS = {"allreduce", "reduce"}
AVG_KEY = {"allreduce", "bcast", "reduce", "alltoall"}     # collectives whose csel key is avg_msg_size
COLL_FN = {"allreduce": "Allreduce", "bcast": "Bcast", "reduce": "Reduce", "allgather": "Allgather",
           "alltoall": "Alltoall", "gather": "Gather", "scatter": "Scatter"}
# Their csel leaves need parameter children (k=..., tree_type=...), or run another path.
PARAMETERISED = {"tree", "pipelined_tree", "k_brucks", "recexch_doubling", "recexch_halving", "recexch",
                 "recursive_multiplying", "k_reduce_scatter_allgather", "nb", "smp", "ccl"}


def libmpi(mpirun: Path) -> Path:
    run = Path(mpirun).resolve()
    for folder in (run.parent.parent / "lib", run.parent.parent / "lib64"):
        for name in ("libmpi.so.12", "libmpi.so"):
            if (folder / name).is_file():
                return folder / name
    raise UserError(f"cannot find libmpi next to {mpirun} (looked in ../lib and ../lib64); "
                    "run collkit where this MPICH is installed")


def builtin_tree(lib: Path) -> tuple[dict, set[str]]:
    """(MPICH's compiled-in MPIR-level selection tree, every MPIR_* name in the library)."""
    data = lib.read_bytes()
    tree = None
    start = data.find(b'{"collective=')
    while start >= 0:
        end = data.find(b"\0", start)
        text = data[start:end].decode("ascii", "replace")
        if "algorithm=MPIR_" in text:
            try:
                tree = json.loads(text)
                break
            except ValueError:
                pass
        start = data.find(b'{"collective=', end)
    if tree is None:
        raise UserError(f"{lib} holds no MPIR-level selection JSON; this MPICH is not one collkit knows "
                        "(MPICH 4.x/5.x embed it); use --format collkit instead")
    names = set()
    i = data.find(b"MPIR_")
    while i >= 0:
        j = i
        while j < len(data) and (chr(data[j]).isalnum() or data[j] == ord("_")):
            j += 1
        names.add(data[i:j].decode())
        i = data.find(b"MPIR_", j)
    return tree, names


def algorithm_name(collective: str, native: str) -> str:
    return f"MPIR_{COLL_FN[collective]}_intra_{native}"


def library_state(install: MPIInstall) -> tuple[dict, set[str]]:
    """What writing a file for this MPICH needs from it: (its built-in tree, the MPIR_*
    names its libmpi has)."""
    return builtin_tree(libmpi(install.mpirun))


def expressible(collective: str, cand: Candidate, state: tuple[dict, set[str]]) -> bool:
    """Whether a selection file can name the candidate in this MPICH (library_state's answer)."""
    names = state[1]
    return collective in COLL_FN and cand.native not in PARAMETERISED \
        and algorithm_name(collective, cand.native) in names


def variant_fits(collective: str, params: tuple[tuple[str, str], ...]) -> bool:
    """A leaf names an algorithm and nothing else: no parameter setting is a rule of its own."""
    return False


def ownership(points, candidates: dict[str, list[Candidate]]) -> dict:
    """Which collectives the file takes from the ch4 device (tune/mpich_device.py)."""
    return mpich_device.ownership(points, candidates)


def write_file(rules: list[Rule], candidates: dict[str, list[Candidate]], state: tuple[dict, set[str]],
               header: list[str]) -> str:
    """The file for `collkit tune` (library_state's answer as `state`)."""
    return write(rules, candidates, state[0], header)


def _intra(tree: dict, collective: str) -> dict:
    branch = tree.get(f"collective={collective}", {})
    return branch.get("comm_type=intra", branch)


def write(rules: list[Rule], candidates: dict[str, list[Candidate]], tree: dict, header: list[str]) -> str:
    out = copy.deepcopy(tree)
    by_coll: dict[str, dict[int, list[Rule]]] = {}
    for r in rules:
        by_coll.setdefault(r.collective, {}).setdefault(r.ranks, []).append(r)
    for coll, per in by_coll.items():
        if all(r.choice == DEFAULT for rs in per.values() for r in rs):
            continue   # left to MPICH (and its device, tune/mpich_device.py): the built-in branch stays
        names = {c.name: c for c in candidates.get(coll, [])}
        builtin = _intra(tree, coll)
        key = "avg_msg_size" if coll in AVG_KEY else "total_msg_size"
        branch: dict = {}
        for p in sorted(per):
            sizes: dict = {}
            for r in per[p]:
                leaf = copy.deepcopy(builtin) if r.choice == DEFAULT else \
                    {f"algorithm={algorithm_name(coll, names[r.choice].native)}": {}}
                if r.choice != DEFAULT and coll in REDUCTIONS:
                    # measured with a built-in commutative op; anything else as MPICH would run it
                    leaf = {"is_commutative=yes": leaf, "is_commutative=no": copy.deepcopy(builtin)}
                if r.bytes_hi is None:
                    sizes[f"{key}=any"] = leaf
                else:
                    hi = r.bytes_hi if key == "avg_msg_size" else r.bytes_hi * p
                    sizes[f"{key}<={hi}"] = leaf
            branch[f"comm_size<={p}"] = sizes
        branch["comm_size=any"] = copy.deepcopy(builtin)
        whole = out.setdefault(f"collective={coll}", {})
        if "comm_type=intra" in whole:
            # keep the key order: intra first, inter after, as the built-in tree has them
            whole["comm_type=intra"] = branch
        else:
            out[f"collective={coll}"] = branch
    # JSON has no comments: the provenance is in the sidecar; one key MPICH ignores
    # would be an unknown key (it asserts), so the header goes nowhere here.
    _ = header
    return json.dumps(out, indent=1) + "\n"


def caveats(rules: list[Rule], candidates: dict[str, list[Candidate]]) -> list[str]:
    """Nothing beyond the table `collkit tune` prints: untuned rank counts keep the
    library's default in this format."""
    return []
