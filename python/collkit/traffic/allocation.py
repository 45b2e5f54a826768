"""Job allocations: which host each entry of a job's node list is.

Three sources, one result (:class:`Allocation`, host names in order):

* PICO CSV: a header ``MPI_Rank,allocation`` then ``rank,host`` rows, one per
  rank (any order; ranks 0..P-1 each exactly once; the header may be left out). The rows *are* a rank
  placement, so a host listed several times holds several ranks.
* hostfile: one entry per line, rank i = line i. Each line is a host name or
  a Slurm hostlist expression (``lrdn[0063-0065]`` stands for three lines).
  Blank lines and ``#`` comments are skipped.
* a Slurm hostlist expression given on the command line (``--nodelist``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from collkit.common import hostlist
from collkit.common.errors import UserError


@dataclass(frozen=True)
class Allocation:
    hosts: tuple[str, ...]          # in rank order, as written (domain and case kept)
    source: str                     # where it came from, for messages
    lines: Sequence[int] | None     # the source line of each host (files only)

    def where(self, position: int) -> str:
        if self.lines is None:
            return self.source
        return f"{self.source} line {self.lines[position]}"


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        raise UserError(f"allocation file {path} does not exist") from None
    except IsADirectoryError:
        raise UserError(f"allocation file {path} is a directory") from None
    except UnicodeDecodeError:
        raise UserError(f"allocation file {path} is not a text file") from None
    except OSError as exc:
        raise UserError(f"cannot read allocation file {path}: {exc.strerror or exc}") from None


def _is_pico_header(line: str) -> bool:
    cells = [c.strip().lower() for c in line.split(",")]
    return len(cells) == 2 and cells[0] == "mpi_rank"


def _is_pico_row(line: str) -> bool:
    cells = [c.strip() for c in line.split(",")]
    return len(cells) == 2 and cells[0].isdigit() and bool(cells[1]) and not cells[1].isdigit()


_RANKS: list[str] = []


def _rank_strings(p: int) -> list[str]:
    while len(_RANKS) < p:
        _RANKS.append(str(len(_RANKS)))
    return _RANKS[:p]


def _parse_pico_fast(path: Path, lines: list[str], first: int) -> Allocation | None:
    """The common case, rows in rank order without blanks or comments; None
    sends anything else to the careful parser, which also words the errors."""
    end = len(lines)
    while end > first + 1 and not lines[end - 1].strip():
        end -= 1
    rows = lines[first + 1:end]
    if not rows:
        return None
    body = ",".join(rows)
    if " " in body or "\t" in body or "\r" in body:
        return None
    flat = body.split(",")
    if len(flat) != 2 * len(rows) or flat[0::2] != _rank_strings(len(rows)):
        return None
    hosts = flat[1::2]
    if "" in hosts:
        return None
    return Allocation(tuple(hosts), str(path), range(first + 2, first + 2 + len(rows)))


def _parse_pico(path: Path, lines: list[str], first: int) -> Allocation:
    fast = _parse_pico_fast(path, lines, first)
    if fast is not None:
        return fast
    by_rank: dict[int, tuple[str, int]] = {}
    for number in range(first + 1, len(lines)):
        line = lines[number].strip()
        if not line or line.startswith("#"):
            continue
        rank_text, sep, host = line.partition(",")
        host = host.strip()
        try:
            rank = int(rank_text)
        except ValueError:
            rank = -1
        if not sep or rank < 0 or not host or "," in host:
            raise UserError(f"allocation file {path} line {number + 1}: expected 'rank,host', got '{line}'")
        if rank in by_rank:
            raise UserError(f"allocation file {path} line {number + 1}: rank {rank} already placed "
                            f"on line {by_rank[rank][1]}")
        by_rank[rank] = (host, number + 1)
    if not by_rank:
        raise UserError(f"allocation file {path} places no ranks")
    p = len(by_rank)
    if max(by_rank) != p - 1:
        missing = next(r for r in range(p) if r not in by_rank)
        raise UserError(f"allocation file {path}: rank {missing} is missing (ranks must be 0..P-1)")
    ordered = [by_rank[r] for r in range(p)]
    return Allocation(tuple(h for h, _ in ordered), str(path), tuple(n for _, n in ordered))


def _parse_hostfile(path: Path, lines: list[str]) -> Allocation:
    hosts: list[str] = []
    where: list[int] = []
    for number, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(line.split()) != 1:
            raise UserError(f"allocation file {path} line {number}: expected one host name or "
                            f"hostlist per line, got '{line}'")
        if "[" in line or "," in line:
            try:
                names = hostlist.expand(line)
            except UserError as exc:
                raise UserError(f"allocation file {path} line {number}: {exc}") from None
        else:
            names = [line]
        hosts.extend(names)
        where.extend([number] * len(names))
    if not hosts:
        raise UserError(f"allocation file {path} lists no hosts")
    return Allocation(tuple(hosts), str(path), tuple(where))


def read_allocation(path: Path | str) -> Allocation:
    """A PICO CSV or a hostfile, told apart by the first line that is not blank."""
    path = Path(path)
    lines = _read_text(path).splitlines()
    for i, line in enumerate(lines):
        if line.strip() and not line.lstrip().startswith("#"):
            if _is_pico_header(line):
                return _parse_pico(path, lines, i)
            if _is_pico_row(line):  # a PICO CSV without its header
                return _parse_pico(path, lines, i - 1)
            return _parse_hostfile(path, lines)
    raise UserError(f"allocation file {path} is empty")


def from_hostlist(expr: str) -> Allocation:
    return Allocation(tuple(hostlist.expand(expr)), f"--nodelist '{expr}'", None)
