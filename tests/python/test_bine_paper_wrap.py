"""scripts/bine_paper_wrap.py: Bine's cross-group bytes with the job's wrap (rank p - 1
next to rank 0) across groups and inside one (docs/experiments/bine-paper-tables.md,
item 9). Expected figures counted by hand from the p = 8 alltoall schedules that
test_traffic.py checks message by message."""

import subprocess
import sys

import needs
from cli_runner import REPO

SCRIPT = REPO / "scripts" / "bine_paper_wrap.py"


def wrap(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def row(out: str, collective: str, ranks: int) -> list[str]:
    (line,) = [ln for ln in out.splitlines() if ln.startswith(f"| {collective} |") and f"| {ranks} |" in ln]
    return [c.strip() for c in line.strip("|").split("|")]


@needs.ck_trace
def test_the_wrap_across_groups_costs_bine_what_it_saves_inside_one():
    # 8 ranks in groups of 2: [0, 0, 1, 1, 2, 2, 3, 3] (line), and [0, 0, 1, 1, 2, 2, 0, 0]
    # (ring: the last group folded into the first). Bruck (r -> r + 2^k, 4 blocks a
    # message) crosses 4 + 8 + 8 = 20 times on the line, 3 + 6 + 8 = 17 on the ring.
    # The Bine butterfly's pairs (0,1)(2,3)(4,5)(6,7) / (0,7)(2,1)(4,3)(6,5) /
    # (0,3)(2,5)(4,7)(6,1), both ways: 0 + 8 + 8 = 16 on the line, 0 + 6 + 6 = 12 on
    # the ring, where (0,7) and (6,1) stay inside. 1 - 64/80 = 20 %, 1 - 48/68 = 29.4 %.
    out = wrap("--group", "2", "--ranks", "8", "--step", "2")
    assert out.returncode == 0, out.stderr
    assert row(out.stdout, "alltoall", 8) == ["alltoall", "bine_butterfly vs bruck", "8", "–", "20.0", "29.4"]


@needs.ck_trace
def test_a_job_in_two_groups_is_shown_apart():
    # Groups of 4: Bruck 14 crossing messages, the butterfly 8, 4 blocks each
    # (test_traffic.py): 1 - 32/56 = 42.9 %; no ring layout (folding leaves one group).
    out = wrap("--group", "4", "--ranks", "8", "--step", "4")
    assert out.returncode == 0, out.stderr
    assert row(out.stdout, "alltoall", 8) == ["alltoall", "bine_butterfly vs bruck", "8", "42.9", "–", "–"]


def test_bad_numbers_are_one_line_and_status_2():
    for args, words in ((["--ranks", "0"], "--ranks: 0 is not between 1 and 4096"),
                        (["--group", "x"], "--group: 'x' is not a whole number")):
        out = wrap(*args)
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr.count("\n") == 1 and words in out.stderr and "Traceback" not in out.stderr
