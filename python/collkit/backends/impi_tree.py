"""Intel MPI's own JSON tuning file, which the library reads itself through
``I_MPI_TUNING=FILE`` (`collkit tune --format impi-json`): the tree mpitune writes,

    {"coll=Allreduce": {"ppn=-1": {"comm_size=4": {"comm_id=-1":
        {"msg_size=4095": {"ALLREDUCE=8": {}}, "msg_size=2147483647": {"ALLREDUCE=2": {}}}}}}}

What Intel MPI 2021.19 does with it, found here by experiment (shm, the logging op of
tests/python/test_impi_tuning.py, which shows each preset's reductions; every command
was ``I_MPI_TUNING=/abs/j.json mpirun -n N ./op_log allreduce COUNT`` with the tree in
j.json, set against ``I_MPI_ADJUST_ALLREDUCE=<preset> mpirun ...`` and a plain run):

* shape: the leaf is an object, ``{"ALLREDUCE=8": {}}``; a string leaf
  (``"msg_size=...": "ALLREDUCE=8"``) kills every rank with SIGSEGV. The collective's
  name after ``coll=`` is read without regard to case (``Reduce_scatter_block``,
  ``Reduce_Scatter_Block`` and ``reduce_scatter_block`` all ran
  REDUCE_SCATTER_BLOCK=3's schedule). A leaf that names another collective's variable
  (``BCAST=8`` under ``coll=Allreduce``) is ignored without a word.
* msg_size: an inclusive upper bound in bytes of count*typesize (the message size of
  I_MPI_ADJUST_<COLL>, backends/impi.py): at 4 ranks ``msg_size=4095 -> 8,
  msg_size=2147483647 -> 2`` ran 8 for 1023 ints (4092 B) and 2 for 1024 ints;
  ``msg_size=4096 -> 8, msg_size=8192 -> 2`` ran 8 at 1024 ints (4096 B) and 2 at 4096
  ints (16 KiB, above every bound: the last entry). The entries are taken in file order,
  the first whose bound holds: ``2147483647 -> 8`` written before ``4095 -> 2`` ran 8 at
  1023 ints. Preset 0 is the library's own choice (``4095 -> 0`` ran the plain run's
  schedule at 1023 ints).
* comm_size: an upper bound on the communicator's size, the same way: with
  ``comm_size=3 -> 8, comm_size=5 -> 2``, 2 and 3 ranks ran 8, 4 and 5 ran 2, and 6
  ranks (above every bound) ran 2, the last. ppn=-1 and comm_id=-1 are mpitune's "any";
  collkit writes and accepts only those. A bound of -1 holds for every size or count
  (``comm_size=2 -> 10, comm_size=-1 -> {msg_size=4095 -> 2, msg_size=-1 -> 8}`` ran 10 at
  2 ranks, 2 up to 4092 B and 8 from 4096 B at 4 ranks): accepted as the last bound,
  collkit writes 2147483647.
* what the tree does not mention keeps the library's default: with a tree of
  ``coll=Bcast`` alone, allreduce at 3, 4 and 5 ranks and 4, 1024 and 65536 ints made the
  plain run's reductions on every rank (those differ with size and rank count: the
  library's .dat still selects). ``I_MPI_DEBUG=5`` names the .dat loaded
  (tuning_<cpu>_<fabric>.dat) with or without I_MPI_TUNING: the tree overlays it, per
  collective; a collective it names is decided by the tree at every size and count.
* I_MPI_ADJUST_<COLL> in the environment wins over the tree (ADJUST=2 with a tree of 8
  ran 2).
* a preset past the collective's range (999, 33) makes MPI_Init print "Incorrect
  algorithm: ALLREDUCE=999, will be ignored" and run the default, as from the
  environment; a file that is not JSON is ignored without a word (the default ran).

So the broken copy of tune/proof.py sets every preset to 999: Intel's warning, which
names the collective of a leaf, shows that it parsed the tree (the copy differs from the
file in its preset ids only), and the file's own run must pass without it. collkit
refuses, in one line, anything it cannot show Intel reads as written: another shape, a
string leaf, bounds out of order, names it does not know."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from collkit.backends.impi_adjust import MAX_BOUND, STEMS, VARIABLE_PREFIX
from collkit.common.errors import UserError

FORMAT = "impi-json"     # `collkit tune --format`, TuningFile.library
VARIABLE = "I_MPI_TUNING"
ANY = -1                 # ppn and comm_id: mpitune's "any"

_KEY = re.compile(r"(coll|ppn|comm_size|comm_id|msg_size)=(-?(?:0|[1-9][0-9]{0,9}))")
_COLL = re.compile(r"coll=([A-Za-z_]{1,40})")
_LEAF = re.compile(r"([A-Z_]{1,40})=(0|[1-9][0-9]{0,9})")
# the name mpitune writes for each I_MPI_ADJUST stem: Allreduce, Reduce_scatter_block
_NAMES = {s: s.capitalize() for s in STEMS if not s.startswith("I")}


@dataclass(frozen=True)
class Branch:
    """One comm_size node: its bound and its (msg_size bound, preset) entries in file order."""
    comm_size: int
    sizes: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Tree:
    colls: tuple[tuple[str, tuple[Branch, ...]], ...]    # (I_MPI_ADJUST stem, branches)

    def collectives(self) -> tuple[str, ...]:
        return tuple(stem.lower() for stem, _ in self.colls)

    def presets(self) -> list[tuple[str, int]]:
        """(variable, preset) of every leaf."""
        return [(VARIABLE_PREFIX + stem, p) for stem, bs in self.colls for b in bs for _, p in b.sizes]

    def chosen(self, stem: str, ranks: int, nbytes: int) -> int | None:
        """The preset 2021.19 runs (the module's findings); None: the tree leaves it to the library."""
        branches = dict(self.colls).get(stem)
        if branches is None:
            return None
        b = next((b for b in branches if _holds(ranks, b.comm_size)), branches[-1])
        return next((p for hi, p in b.sizes if _holds(nbytes, hi)), b.sizes[-1][1])

    def to_json(self) -> dict:
        return {f"coll={_NAMES[stem]}": {f"ppn={ANY}": {
            f"comm_size={b.comm_size}": {f"comm_id={ANY}": {
                f"msg_size={hi}": {f"{stem}={p}": {}} for hi, p in b.sizes}} for b in branches}}
            for stem, branches in self.colls}

    def text(self) -> str:
        return json.dumps(self.to_json(), indent=1) + "\n"


def _holds(n: int, bound: int) -> bool:
    return bound == ANY or n <= bound


def is_tree(doc: object) -> bool:
    """Whether a parsed JSON document claims to be Intel's tree: an object whose keys
    are coll=NAME (MPICH's are collective=NAME)."""
    return isinstance(doc, dict) and bool(doc) and all(isinstance(k, str) and k.startswith("coll=") for k in doc)


def _one(node: object, key: str, where: str) -> object:
    if not isinstance(node, dict) or list(node) != [key]:
        got = list(node)[:3] if isinstance(node, dict) else type(node).__name__
        raise UserError(f"{where}: expected one key \"{key}\" here, got {got}; collkit writes and reads mpitune's "
                        f"\"{key}\" only (any)")
    return node[key]


def _bounds(node: object, kind: str, where: str, low: int) -> list[tuple[int, object]]:
    if not isinstance(node, dict) or not node:
        raise UserError(f"{where}: expected an object of \"{kind}=N\" keys, got {type(node).__name__}")
    out: list[tuple[int, object]] = []
    for key, value in node.items():
        m = _KEY.fullmatch(key)
        if m is None or m.group(1) != kind:
            raise UserError(f"{where}: key \"{key[:40]}\" is not \"{kind}=N\"")
        n = int(m.group(2))
        if out and out[-1][0] == ANY:
            raise UserError(f"{where}: \"{kind}={ANY}\" (any) must be the last {kind} key: Intel MPI takes the "
                            "first bound that holds, in file order")
        if n != ANY and (not low <= n <= MAX_BOUND or (out and n <= out[-1][0])):
            raise UserError(f"{where}: \"{key}\": {kind} bounds must ascend in file order, from {low} to {MAX_BOUND} "
                            "(Intel MPI takes the first bound that holds, in file order)")
        out.append((n, value))
    return out


def read(text: str, where: str) -> Tree:
    """The tree, checked; UserError in one line naming the fault."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise UserError(f"{where}: not valid JSON ({exc}); Intel MPI would ignore the file without a word") from None
    if not is_tree(doc):
        raise UserError(f"{where}: not Intel MPI's tuning tree (an object of \"coll=NAME\" keys)")
    colls: list[tuple[str, tuple[Branch, ...]]] = []
    for key, node in doc.items():
        m = _COLL.fullmatch(key)
        stem = m.group(1).upper() if m else ""
        if stem not in _NAMES:
            raise UserError(f"{where}: \"{key[:40]}\" names no collective Intel MPI tunes "
                            f"({', '.join(sorted(_NAMES.values()))})")
        if any(s == stem for s, _ in colls):
            raise UserError(f"{where}: \"{key}\" appears twice")
        w = f"{where}: {key}"
        branches = []
        for size, sub in _bounds(_one(node, f"ppn={ANY}", w), "comm_size", w, 1):
            entries = []
            ws = f"{w} comm_size={size}"
            for hi, leaf in _bounds(_one(sub, f"comm_id={ANY}", ws), "msg_size", ws, 0):
                wl = f"{ws} msg_size={hi}"
                if not isinstance(leaf, dict) or len(leaf) != 1:
                    raise UserError(f"{wl}: the leaf must be an object of one key, {{\"{stem}=<preset>\": {{}}}} "
                                    "(a string leaf crashes Intel MPI 2021.19)")
                (name, rest), = leaf.items()
                lm = _LEAF.fullmatch(name)
                if lm is None or lm.group(1) != stem or rest != {}:
                    raise UserError(f"{wl}: leaf \"{name[:40]}\" is not {{\"{stem}=<preset>\": {{}}}}; Intel MPI "
                                    "ignores a leaf of another collective's name")
                entries.append((hi, int(lm.group(2))))
            branches.append(Branch(size, tuple(entries)))
        colls.append((stem, tuple(branches)))
    return Tree(tuple(colls))


def broken(text: str, preset: int) -> str:
    """The tree with every preset id set to `preset` (tune/proof.py's broken copy)."""
    tree = read(text, "the file")
    return Tree(tuple((stem, tuple(Branch(b.comm_size, tuple((hi, preset) for hi, _ in b.sizes)) for b in bs))
                      for stem, bs in tree.colls)).text()


def environment(path: str) -> dict[str, str]:
    return {VARIABLE: path}
