"""Intel MPI's own JSON tuning tree (backends/impi_tree.py), which the library reads
through I_MPI_TUNING=FILE: the same decisions as the I_MPI_ADJUST writer (impi.py),
per collective one comm_size branch per tuned rank count p,

    {"coll=Allreduce": {"ppn=-1": {
        "comm_size=3": {"comm_id=-1": {"msg_size=2147483647": {"ALLREDUCE=0": {}}}},
        "comm_size=4": {"comm_id=-1": {"msg_size=1023": {"ALLREDUCE=0": {}}, ...,
                                       "msg_size=2147483647": {"ALLREDUCE=5": {}}}},
        "comm_size=2147483647": {"comm_id=-1": {"msg_size=2147483647": {"ALLREDUCE=0": {}}}}}}}

Intel MPI 2021.19 reads both comm_size and msg_size as upper bounds, first in file order
that holds, the last beyond every bound; so a branch of preset 0 covers the counts below
each tuned one and above the last. Preset 0 is Intel's built-in choice, which is not
always what its .dat tuning file runs (docs/tuning-files.md), and a collective the tree
mentions is the tree's at every count: unlike the other formats, a launch at an untuned
count of such a collective does not keep the library's default. No tree leaf can say
"the .dat's choice", so `collkit tune` says so (caveats); `tune --validate` at 3 and 6
ranks found such counts slower than the default (docs/tuning-files.md), where
--format impi, which sets nothing at an untuned count, was not. A collective of no
chosen preset is not in the tree: the .dat decides it. JSON has no comments: the rules'
provenance is in the sidecar (FILE.provenance.json).
"""

from __future__ import annotations

from collkit.backends import impi_tree
from collkit.backends.impi_adjust import MAX_BOUND, VARIABLE_PREFIX
from collkit.common.errors import UserError
from collkit.tune.decide import Candidate, Rule
from collkit.tune.writers import impi as adjust_writer

FORMAT = impi_tree.FORMAT

# the same presets are expressible, for the same reasons
library_state = adjust_writer.library_state
expressible = adjust_writer.expressible
variant_fits = adjust_writer.variant_fits
ownership = adjust_writer.ownership

_DEFAULT = ((MAX_BOUND, 0),)


def tree(rules: list[Rule], candidates: dict[str, list[Candidate]]) -> impi_tree.Tree:
    by_stem: dict[str, list[impi_tree.Branch]] = {}
    for setting, _ in adjust_writer.settings(rules, candidates):   # sorted by collective, then rank count
        stem = setting.variable[len(VARIABLE_PREFIX):]
        p = setting.procs[0]
        branches = by_stem.setdefault(stem, [])
        below = branches[-1].comm_size if branches else 0
        if p - 1 > below:
            branches.append(impi_tree.Branch(p - 1, _DEFAULT))
        branches.append(impi_tree.Branch(p, tuple((i.bytes_hi, i.preset) for i in setting.items)))
    for branches in by_stem.values():
        if branches[-1].comm_size < MAX_BOUND:
            branches.append(impi_tree.Branch(MAX_BOUND, _DEFAULT))
    return impi_tree.Tree(tuple((stem, tuple(b)) for stem, b in by_stem.items()))


def write(rules: list[Rule], candidates: dict[str, list[Candidate]], state: None, header: list[str]) -> str:
    t = tree(rules, candidates)
    if not t.colls:
        raise UserError("no preset was chosen over Intel MPI's default at any tuned size and rank count: the tree "
                        "would set nothing; measure more presets or sizes")
    text = t.text()
    impi_tree.read(text, "the tree written")     # what collkit would refuse is never written
    return text


# the writers' shared entry point (tune/writers/__init__.py)
write_file = write


def caveats(rules: list[Rule], candidates: dict[str, list[Candidate]]) -> list[str]:
    """The collectives whose untuned rank counts run Intel's built-in choice (module docstring)."""
    settings = [s for s, _ in adjust_writer.settings(rules, candidates)]
    if not settings:
        return []
    counts = sorted({s.procs[0] for s in settings})
    colls = sorted({s.variable[len(VARIABLE_PREFIX):].lower() for s in settings})
    return [f"note: under this tree, {_and(colls)} run Intel MPI's built-in choice (preset 0), not its .dat "
            f"file's default, at every rank count but {_and(map(str, counts))}; --format impi leaves those counts "
            "to the .dat"]


def _and(items) -> str:
    items = list(items)
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]
