#!/usr/bin/env python3
"""Issue #54's experiment: the same campaign run N times; does every run reach the
same verdict for the library's default against the best algorithm?

The campaign is the one that, before launches were repeated, said 2.67x, tie, 1.08x,
2.90x, 1.00x, 1.00x, 1.00x in seven identical runs: Open MPI's allreduce at 2 ranks
bound to cores, 1 MiB, the default and four forced algorithms. Each run is an
ordinary `collkit run` (its [measure] launches as the spec says); per run the script
reads the summary's row (analysis/results.py) and the ratio of the default to the
fastest other algorithm with its 95 % interval at the verdict's level
(analysis/launches.ratios), then says whether the runs agree: the same call
(significant or tie) in every run, and every run's ratio inside every other run's
interval.

    .venv/bin/python scripts/launch_verdicts.py [--runs 10] [--mpi openmpi] [--ranks 2]
        [--size 1MiB] [--launches 3] [--out DIR] [--markdown FILE] [--json FILE]

Timings, not a test: run it on an otherwise idle machine, one rank per core; the
table and the command go into docs/benchmarks.md. Exit status 0 when the runs agree,
1 when they do not, 2 with one line for a bad argument."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from collkit.analysis import launches, results  # noqa: E402
from collkit.campaign.sizes import format_size, parse_sizes  # noqa: E402
from collkit.campaign.store import Campaign  # noqa: E402
from collkit.common.errors import UserError  # noqa: E402

FORCED = {"openmpi": ["recursive_doubling", "ring", "segmented_ring", "redscat_allgather"],
          "mpich": ["recursive_doubling", "mpich_ring", "rabenseifner", "tree"]}


def spec(mpi: str, ranks: int, size: str, launches_: int) -> str:
    algs = ", ".join(f'"{a}"' for a in ["default", *FORCED[mpi]])
    return f"""name = "launch-verdicts"
description = "issue #54: {mpi} allreduce at {ranks} ranks bound to cores, {size}, the default and four forced algorithms"
collectives = ["allreduce"]
sizes = ["{size}"]
ranks = [{ranks}]
mpi = ["{mpi}"]
[backends]
mpi = [{algs}]
[measure]
launches = {launches_}
"""


def platform(mpi: str) -> str:
    bind = '["--bind-to", "core"]' if mpi == "openmpi" else '["-bind-to", "core"]'
    return f'name = "local-bound"\n[mpi.{mpi}]\nargs = {bind}\n'


def row(campaign: Path):
    """The campaign's one summary row, and the default over the fastest other
    algorithm (the best, or the runner-up where the default is the best) with its
    95 % interval at the level the verdict was reached (analysis/launches.ratios,
    the row's comparisons pooled as the summary pools them)."""
    recs = [r for r in Campaign.open(campaign).records() if r.status == "ok" and not r.unstable]
    lines = results.summarise(recs)
    if len(lines) != 1:
        raise UserError(f"{campaign}: expected one summary row, found {len(lines)}")
    s = lines[0]
    default = next(r for r in recs if r.library_default)
    others = sorted((r for r in recs if r is not default), key=lambda r: r.time_median_us)
    pairs = [(launches.Timing.of(default), launches.Timing.of(r)) for r in others]
    ratio, ci = launches.ratios(pairs, groups=[0] * len(pairs))[0]
    return s, others[0].label, ratio, ci


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--mpi", choices=sorted(FORCED), default="openmpi")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--size", default="1MiB")
    ap.add_argument("--launches", type=int, default=3)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    try:
        if not 2 <= a.runs <= 100 or not 1 <= a.ranks <= 1024 or not 1 <= a.launches <= 100:
            raise UserError("--runs 2..100, --ranks 1..1024, --launches 1..100")
        parse_sizes([a.size])
        out = a.out or Path(tempfile.mkdtemp(prefix="launch-verdicts-"))
        out.mkdir(parents=True, exist_ok=True)
        (out / "spec.toml").write_text(spec(a.mpi, a.ranks, a.size, a.launches))
        (out / "platform.toml").write_text(platform(a.mpi))
        rows = []
        for k in range(a.runs):
            camp = out / f"run-{k + 1:02d}"
            if not (camp / "records.jsonl").exists():
                res = subprocess.run([str(ROOT / ".venv" / "bin" / "collkit"), "run", str(out / "spec.toml"),
                                      "--platform", str(out / "platform.toml"), "--out", str(camp)],
                                     capture_output=True, text=True)
                if res.returncode != 0:
                    raise UserError(f"run {k + 1} failed: {(res.stderr.strip().splitlines() or ['?'])[-1]}")
            s, other, ratio, ci = row(camp)
            rows.append({"run": k + 1, "best": s.best, "best_us": s.best_us, "default_us": s.default_us,
                         "other": other, "ratio": ratio, "ci": list(ci) if ci else None,
                         "significant": bool(s.significant), "p": s.p_value, "level": s.level,
                         "launches": list(s.launches), "spread": s.spread, "states": s.states})
            print(f"run {k + 1}: best {s.best} {s.best_us:.1f} us, default {s.default_us:.1f} us; "
                  f"default/{other} {ratio:.3f} {_ci(ci)}, {'significant' if s.significant else 'tie'}",
                  flush=True)
    except UserError as exc:
        print(f"launch_verdicts: {exc}", file=sys.stderr)
        return 2
    calls = {r["significant"] for r in rows}
    cis = [r["ci"] for r in rows if r["ci"]]
    common = (max(c[0] for c in cis), min(c[1] for c in cis)) if cis else None
    overlap = common is not None and common[0] <= common[1] and len(cis) == len(rows)
    pairs = [(r, o) for r in rows for o in rows if r is not o and r["ci"]]
    inside = sum(r["ci"][0] <= o["ratio"] <= r["ci"][1] for r, o in pairs)
    agree = len(calls) == 1 and overlap
    verdict = (f"{len(rows)} runs: {'the same call' if len(calls) == 1 else 'different calls'} "
               f"({sum(r['significant'] for r in rows)} significant, {sum(not r['significant'] for r in rows)} tie); "
               f"the intervals {'share' if overlap else 'do not share'} a value"
               + (f" ({common[0]:.3f} to {common[1]:.3f})" if overlap else "")
               + f"; {inside} of {len(pairs)} ratios inside another run's interval")
    print(verdict)
    if a.json:
        a.json.write_text(json.dumps({"command": sys.argv, "spec": spec(a.mpi, a.ranks, a.size, a.launches),
                                      "rows": rows, "agree": agree, "verdict": verdict}, indent=1) + "\n")
    if a.markdown:
        md = ["| run | best | best µs | default µs | default / fastest other | 95 % interval | call | spread |",
              "|---|---|---|---|---|---|---|---|"]
        md += [f"| {r['run']} | {r['best']} | {r['best_us']:.1f} | {r['default_us']:.1f} | "
               f"{r['ratio']:.3f} ({r['other'].split(':')[1]}) | "
               f"{_ci(r['ci'])} | {'significant' if r['significant'] else 'tie'} | "
               + (f"{r['spread']:.2f}x |" if r["spread"] else "- |") for r in rows]
        md += ["", verdict, ""]
        a.markdown.write_text("\n".join(md))
    return 0 if agree else 1


def _ci(ci) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"


if __name__ == "__main__":
    sys.exit(main())
