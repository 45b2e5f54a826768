"""Intel MPI's I_MPI_ADJUST_<COLL> settings (backends/impi_adjust.py), one line per
collective and tuned process count:

    @4 I_MPI_ADJUST_ALLREDUCE=0:0-4095;8:4096-65535;2:65536-2147483647

* per process count, because Intel MPI 2021.19 ignores the message sizes of a value
  with ``@<p>-<q>`` conditions (backends/impi_adjust.py); a launch of p ranks gets the
  lines of p (backends/impi.py). Counts beyond the tuned ones have no line: the
  library's own choice, as in the other formats;
* size ranges in Intel's message size, which is collkit-bench's bytes for the
  collectives a file may name (backends/impi.py, MESSAGE_SIZE_IS_COLLKIT_BYTES),
  ascending without a gap from 0 to 2^31-1 (Intel reads only the upper bounds);
* preset 0 (the library's own choice) where the decision keeps the default; a process
  count whose rules all keep it has no line.
"""

from __future__ import annotations

from collkit.backends import impi as backend
from collkit.backends.impi_adjust import MAX_BOUND, Item, Setting
from collkit.common.errors import UserError
from collkit.mpis.install import MPIInstall
from collkit.tune.decide import DEFAULT, Candidate, Rule

# The format this module writes: Intel MPI's backend names it (`collkit tune --format`).
FORMAT = backend.IntelMPIBackend.tuning_format


def library_state(install: MPIInstall) -> None:
    """Nothing beyond the offer: a preset is its id."""
    return None


def expressible(collective: str, cand: Candidate, state: None) -> bool:
    """A preset of a collective whose message size collkit knows as Intel counts it."""
    return (collective in backend.MESSAGE_SIZE_IS_COLLKIT_BYTES and cand.native_id.isdigit()
            and int(cand.native_id) > 0)


def variant_fits(collective: str, params: tuple[tuple[str, str], ...]) -> bool:
    """A preset takes no parameters the file could carry."""
    return False


def ownership(points, candidates: dict[str, list[Candidate]]) -> dict:
    """Every variable decides its own collective: nothing to share."""
    return {}


def settings(rules: list[Rule], candidates: dict[str, list[Candidate]]) -> list[tuple[Setting, list[Rule]]]:
    """The file's lines, each with the rules it carries."""
    by_key: dict[tuple[str, int], list[Rule]] = {}
    for r in rules:
        by_key.setdefault((r.collective, r.ranks), []).append(r)
    out = []
    for (coll, p), mine in sorted(by_key.items()):
        if all(r.choice == DEFAULT for r in mine):
            continue
        ids = {c.name: int(c.native_id) for c in candidates.get(coll, [])}
        mine = sorted(mine, key=lambda r: r.bytes_lo)
        items: list[Item] = []
        for k, r in enumerate(mine):
            lo = 0 if k == 0 else r.bytes_lo
            hi = mine[k + 1].bytes_lo - 1 if k + 1 < len(mine) else MAX_BOUND
            preset = 0 if r.choice == DEFAULT else ids[r.choice]
            if items and items[-1].preset == preset:
                items[-1] = Item(preset, items[-1].bytes_lo, min(hi, MAX_BOUND))
            elif lo <= MAX_BOUND:
                items.append(Item(preset, lo, min(hi, MAX_BOUND)))
        out.append((Setting(backend.variable(coll), (p, p), tuple(items)), mine))
    return out


def write(rules: list[Rule], candidates: dict[str, list[Candidate]], state: None, header: list[str]) -> str:
    lines = settings(rules, candidates)
    if not lines:
        raise UserError("no preset was chosen over Intel MPI's default at any tuned size and rank count: the file "
                        "would set nothing; measure more presets or sizes")
    out = [f"# {h}" for h in header]
    out.append("# a launch of p ranks sets the lines of @p (Intel MPI 2021.19 ignores message sizes given with "
               "@p in the value); sizes in bytes, 0: the library's own choice")
    for setting, mine in lines:
        names = ", ".join(f"{'default' if r.choice == DEFAULT else r.choice} from {r.bytes_lo} B ({r.source}"
                          f"{', ' + r.cutoff if r.cutoff else ''})" for r in mine)
        out.append(f"# {names}")
        out.append(setting.line())
    return "\n".join(out) + "\n"


# the writers' shared entry point (tune/writers/__init__.py)
write_file = write


def caveats(rules: list[Rule], candidates: dict[str, list[Candidate]]) -> list[str]:
    """Nothing beyond the table `collkit tune` prints: untuned rank counts keep the
    library's default in this format."""
    return []
