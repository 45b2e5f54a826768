#!/usr/bin/env python3
"""libcollkit against the MPI library on algorithms of the same name, side by side.

For every point of SPEC where the library runs a forced algorithm whose canonical
name libcollkit also has (same collective, size, ranks, datatype, op, root), both
run in ONE launch (the library's algorithm forced per point, as campaigns force it:
MPI_T, and for Open MPI a communicator made after the setting), interleaved:
ROUNDS rounds, each round measuring every size once per side, the side that goes
first alternating A B B A so that neither always follows the other. Each round's
measurement is one collkit-bench point with the spec's [measure] settings.

Per pair, round r gives q_r = median(libcollkit) / median(library), two
measurements seconds apart in the same processes. Each launch's test is the exact
two-sided Wilcoxon signed-rank test on log q_r (pairs by round, so slow drift of the
machine cancels). The rounds of one launch are not independent replicates (a launch
keeps its placement, pages and caches: of the library-faster verdicts of two one-launch
runs on the 16-core machine, 29 and 20 of 282, only 10 were the same points), so every
group runs in LAUNCHES separate launches, all groups once before any runs again, and a
side is called faster only where every launch's test says so (p < ALPHA, same
direction); else "tie". The ratio shown is the median of all rounds' q_r, p the
largest launch's. This is issue #54's design at a finer grain: rounds inside a launch
are its blocks (a campaign's are its launches, analysis/launches.py), and a verdict
must hold in every launch.

    .venv/bin/python scripts/bench_same_name.py [SPEC] [--platform FILE] [--ranks N,...]
        [--mpi NAME,...] [--rounds 8] [--launches 2] [--out FILE.json] [--markdown FILE.md]

SPEC defaults to examples/experiments/same-name.toml (the eight collectives, 8 B to
2 MiB, 2 to 16 ranks, both libraries); --ranks and --mpi keep only those rank counts
and libraries of it (2 ranks on a 2-core machine).

Timings, not a test: run it one rank per core on an otherwise idle machine; the
numbers and the command go into docs/benchmarks.md. Exit status 2 with one line
for a bad argument or spec."""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from collkit.campaign import plan as planner  # noqa: E402
from collkit.campaign import platform as platforms  # noqa: E402
from collkit.campaign import spec as specs  # noqa: E402
from collkit.campaign.points import Point  # noqa: E402
from collkit.analysis.stats import signed_rank_p  # noqa: E402
from collkit.campaign.sizes import format_size  # noqa: E402
from collkit.common.errors import UserError  # noqa: E402
from collkit.library import registry  # noqa: E402

ALPHA = 0.05
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = ROOT / "examples" / "experiments" / "same-name.toml"
library_versions: dict[str, str] = {}
MAX_ROUNDS = 16   # the exact test enumerates 2^rounds sign patterns


@dataclass
class Pair:
    lib: Point
    ours: Point
    lib_medians: list[float] = field(default_factory=list)    # per round of every launch, µs
    our_medians: list[float] = field(default_factory=list)
    ratios: list[list[float]] = field(default_factory=list)    # per launch, per round: ours / lib
    problems: list[str] = field(default_factory=list)
    effective: dict = field(default_factory=dict)   # the library's readback of its forcing

    @property
    def key(self) -> tuple:
        p = self.lib
        return (p.mpi, p.collective, p.algorithm, p.ranks, p.bytes)

    def launch_verdicts(self) -> list[tuple[str, float, float]]:
        """Per launch with data: (verdict, median ratio, p)."""
        out = []
        for qs in self.ratios:
            if not qs:
                continue
            q = statistics.median(qs)
            p = signed_rank_p([math.log(r) for r in qs])
            out.append(("tie" if p >= ALPHA else "library" if q > 1 else "libcollkit", q, p))
        return out

    def verdict(self) -> tuple[str, float, float]:
        """('library' | 'libcollkit' | 'tie' | 'no data', median ratio, p): a side is
        faster only where every launch says so."""
        each = self.launch_verdicts()
        if not each:
            return "no data", math.nan, math.nan
        q = statistics.median(r for qs in self.ratios for r in qs)
        p = max(x[2] for x in each)
        sides = {x[0] for x in each}
        return (sides.pop() if len(sides) == 1 and len(each) == len(self.ratios) else "tie"), q, p


def same_name_pairs(plan_points: list[Point]) -> list[Pair]:
    def shape(p: Point) -> tuple:
        return (p.mpi, p.collective, p.algorithm, p.ranks, p.count, p.dtype, p.op, p.root, p.in_place)
    ours = {shape(p): p for p in plan_points if p.backend == "collkit"}
    return [Pair(p, ours[shape(p)]) for p in plan_points
            if p.backend == "mpi" and p.algorithm != "default" and shape(p) in ours]


def points_file(pairs: list[Pair], rounds: int, measure) -> str:
    """Round r, pair after pair in size order; A B B A: the library first in rounds
    0 and 3 of every four, libcollkit first in rounds 1 and 2. Round -1 goes first
    and is not counted: it warms the launch up (connections, pages, caches), whose
    first points would otherwise measure start-up costs."""
    lines = []
    for r in range(-1, rounds):
        lib_first = r % 4 in (0, 3)
        for pair in pairs:
            for side, p in ((("lib", pair.lib), ("ours", pair.ours)) if lib_first
                            else (("ours", pair.ours), ("lib", pair.lib))):
                line = p.to_line(measure)
                assert line.startswith(f"id={p.id} ")
                lines.append(f"id={side}:{r}:{p.id}" + line[len(f"id={p.id}"):])
    return "\n".join(lines) + "\n"


def run_group(pairs: list[Pair], rounds: int, spec, platform, timeout: float, workdir: Path) -> None:
    first = pairs[0].lib
    pm = platform.mpi(first.mpi)
    pts = workdir / "points.txt"
    out = workdir / "out.jsonl"
    pts.write_text(points_file(pairs, rounds, spec.measure))
    out.unlink(missing_ok=True)
    env = pm.install.environment()
    env.update(dict(first.env))
    cmd = pm.install.launch(first.ranks, pm.bench, ["--points", str(pts), "--out", str(out)])
    try:
        proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, timeout=timeout)
        rc, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired:
        rc, err = -1, f"timed out after {timeout:g} s"
    by_id = {(pair.lib.id, "lib"): pair for pair in pairs} | {(pair.ours.id, "ours"): pair for pair in pairs}
    got: dict[tuple, dict[int, float]] = {}
    for line in out.read_text().splitlines() if out.exists() else []:
        rec = json.loads(line)
        if rec.get("type") == "launch":
            library_versions[first.mpi] = rec.get("library_version", "")
            continue
        if rec.get("type") != "point":
            continue
        side, r, pid = rec["id"].split(":", 2)
        pair = by_id.get((pid, side))
        if pair is None:
            continue
        if rec.get("status") != "ok" or not rec.get("times_us"):
            # a warm-up point that failed says as much as a counted one
            pair.problems.append(f"{side} round {r}: {rec.get('status')} {rec.get('reason', '')}".strip())
            continue
        if side == "lib" and rec.get("effective"):
            pair.effective = rec["effective"]
        if int(r) < 0:
            continue
        got.setdefault((id(pair), side), {})[int(r)] = statistics.median(rec["times_us"])
    for pair in pairs:
        lib, ours = got.get((id(pair), "lib"), {}), got.get((id(pair), "ours"), {})
        qs = []
        for r in sorted(set(lib) & set(ours)):
            pair.lib_medians.append(lib[r])
            pair.our_medians.append(ours[r])
            if lib[r] > 0 and ours[r] > 0:
                qs.append(ours[r] / lib[r])
        pair.ratios.append(qs)
        if rc != 0:
            pair.problems.append(f"launch exit {rc}: {err.strip().splitlines()[-1] if err.strip() else ''}")


def table(pairs: list[Pair]) -> str:
    out = ["| library | collective | algorithm | ranks | size | libcollkit µs | library µs | ratio | p | verdict |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for pair in sorted(pairs, key=lambda x: x.key):
        v, q, p = pair.verdict()
        mpi, coll, alg, ranks, size = pair.key
        ours = f"{statistics.median(pair.our_medians):.1f}" if pair.our_medians else "–"
        lib = f"{statistics.median(pair.lib_medians):.1f}" if pair.lib_medians else "–"
        out.append(f"| {mpi} | {coll} | {alg} | {ranks} | {format_size(size)} | {ours} | {lib} | "
                   f"{q:.3f} | {p:.3f} | {v}{' (' + '; '.join(pair.problems[:2]) + ')' if pair.problems else ''} |")
    return "\n".join(out)


def summary(pairs: list[Pair]) -> str:
    lines = ["| library | collective | algorithm | points | library faster | libcollkit faster | tie | no data | median ratio |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    groups: dict[tuple, list[Pair]] = {}
    for pair in pairs:
        groups.setdefault(pair.key[:3], []).append(pair)
    total: dict[str, int] = {}
    for key in sorted(groups):
        verdicts = [pair.verdict() for pair in groups[key]]
        counts = {v: sum(1 for x in verdicts if x[0] == v) for v in ("library", "libcollkit", "tie", "no data")}
        for v, n in counts.items():
            total[v] = total.get(v, 0) + n
        qs = [q for _, q, _ in verdicts if not math.isnan(q)]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {len(verdicts)} | {counts['library']} | "
                     f"{counts['libcollkit']} | {counts['tie']} | {counts['no data']} | "
                     f"{statistics.median(qs) if qs else math.nan:.3f} |")
    n = len(pairs)
    qs = [q for pair in pairs for _, q, _ in [pair.verdict()] if not math.isnan(q)]
    lines.append(f"| all | | | {n} | {total.get('library', 0)} ({100 * total.get('library', 0) / max(n, 1):.1f} %) | "
                 f"{total.get('libcollkit', 0)} | {total.get('tie', 0)} | {total.get('no data', 0)} | "
                 f"{statistics.median(qs) if qs else math.nan:.3f} |")
    return "\n".join(lines)


def write(a, done: list[Pair], planned: int, seconds: float) -> str:
    text = (f"{len(done)} of {planned} same-name points, {a.launches} launches x {a.rounds} rounds, {seconds:.0f} s, "
            f"alpha {ALPHA}\n\n{summary(done)}\n\n{table(done)}\n")
    if a.markdown:
        a.markdown.write_text(text)
    if a.out:
        a.out.write_text(json.dumps({
            "spec": str(a.spec), "rounds": a.rounds, "launches": a.launches, "alpha": ALPHA,
            "host": os.uname().nodename, "cpus": os.cpu_count(), "library_versions": library_versions,
            "pairs": [{"library": pair.lib.describe(), "libcollkit": pair.ours.describe(),
                       "library_medians_us": pair.lib_medians, "libcollkit_medians_us": pair.our_medians,
                       "ratios_by_launch": pair.ratios, "launch_verdicts": pair.launch_verdicts(),
                       "verdict": pair.verdict()[0], "ratio": pair.verdict()[1], "p": pair.verdict()[2],
                       "effective": pair.effective, "problems": pair.problems} for pair in done]}, indent=1))
    return text


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec", type=Path, nargs="?", default=DEFAULT_SPEC,
                    help=f"experiment spec (default {DEFAULT_SPEC.relative_to(ROOT)})")
    ap.add_argument("--ranks", default=None, help="only these rank counts of the spec (comma-separated)")
    ap.add_argument("--mpi", default=None, help="only these libraries of the spec (comma-separated)")
    ap.add_argument("--platform", type=Path, default=None, help="platform file (default: this machine)")
    ap.add_argument("--rounds", type=int, default=8, help=f"rounds per pair, 2..{MAX_ROUNDS} (default 8)")
    ap.add_argument("--launches", type=int, default=2,
                    help="separate launches per pair; a side is faster only if faster in all (default 2)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per launch (default 600)")
    ap.add_argument("--out", type=Path, default=None, help="write every round's medians here (JSON)")
    ap.add_argument("--markdown", type=Path, default=None, help="write the tables here")
    a = ap.parse_args(argv)
    if not 2 <= a.rounds <= MAX_ROUNDS:
        print(f"bench_same_name: --rounds must be 2..{MAX_ROUNDS}", file=sys.stderr)
        return 2
    if not 1 <= a.launches <= 10:
        print("bench_same_name: --launches must be 1..10", file=sys.stderr)
        return 2
    if not (math.isfinite(a.timeout) and a.timeout > 0):
        print("bench_same_name: --timeout must be a positive number of seconds", file=sys.stderr)
        return 2
    try:
        spec = specs.load(a.spec)
        platform = platforms.for_campaign(a.platform, "")
        plan = planner.build(spec, platform, registry.load())
    except UserError as exc:
        print(f"bench_same_name: {exc}", file=sys.stderr)
        return 2
    pairs = same_name_pairs(plan.points)
    if a.ranks:
        try:
            keep = {int(x) for x in a.ranks.split(",")}
        except ValueError:
            print(f"bench_same_name: --ranks {a.ranks}: give rank counts, e.g. 2,4", file=sys.stderr)
            return 2
        pairs = [x for x in pairs if x.lib.ranks in keep]
    if a.mpi:
        pairs = [x for x in pairs if x.lib.mpi in set(a.mpi.split(","))]
    if not pairs:
        print(f"bench_same_name: {a.spec} selects no algorithm that both the library and libcollkit run"
              + (" (at --ranks / --mpi)" if a.ranks or a.mpi else ""), file=sys.stderr)
        return 2
    groups: dict[tuple, list[Pair]] = {}
    for pair in pairs:
        groups.setdefault(pair.lib.launch_key() + (pair.lib.algorithm,), []).append(pair)
    started = time.monotonic()
    done: set[int] = set()
    with tempfile.TemporaryDirectory(prefix="collkit-same-name-") as tmp:
        for launch in range(1, a.launches + 1):
            for i, (key, members) in enumerate(groups.items(), 1):
                members.sort(key=lambda x: (x.lib.collective, x.lib.bytes))
                t0 = time.monotonic()
                run_group(members, a.rounds, spec, platform, a.timeout, Path(tmp))
                done |= {id(m) for m in members}
                print(f"[launch {launch}/{a.launches}, {i}/{len(groups)}] {key[0]} {members[0].lib.collective} "
                      f"{key[-1]} p={key[1]}: {len(members)} pairs x {a.rounds} rounds in "
                      f"{time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
                # after every launch, so that a run cut short keeps what it measured
                write(a, [x for x in pairs if id(x) in done], len(pairs), time.monotonic() - started)
    print(write(a, [x for x in pairs if id(x) in done], len(pairs), time.monotonic() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
