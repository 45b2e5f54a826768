#!/usr/bin/env python3
"""The whole loop of issue #30 on real programs that no one here wrote:
profile -> spec --from-profile -> run -> tune -> predict -> trial -> replay,
each step the `collkit` command a user types, its outputs kept in one directory.
The trial always runs: where the rules keep the library everywhere it forces
the campaign's fastest libcollkit algorithm of the collective the program spent
most time in (forced_choice), and the summary says so (trial_choice).

    .venv/bin/python scripts/application_loop.py --program hpcc --mpi openmpi \
        --ranks 4 --runs 8 --out build/app-loop [--replay sim:fattree-small]

Programs (PROGRAMS below): Debian's `hpcc` (linked to Open MPI), and the
collective tests of mpi4py's PyPI source distribution (`test_cco_buf.py`, run
as a program; the same buffers, datatypes and ops checked under any algorithm),
under each MPI mpi4py's wheel loads. Prints a summary and writes DIR/summary.json;
`application_loop.py --markdown DIR/*/summary.json` prints the tables of
docs/experiments/applications.md.
tests/python/test_application_loop.py runs it at 4 ranks with small settings."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MPI4PY_VERSION = "4.1.2"     # scripts/setup.sh fetches its sdist and its tests into build/
MPI4PY_SDIST = ROOT / "build" / f"mpi4py-{MPI4PY_VERSION}.tar.gz"
MPI4PY_TESTS = ROOT / "build" / f"mpi4py-{MPI4PY_VERSION}" / "test"


@dataclass(frozen=True)
class Program:
    name: str
    mpis: tuple[str, ...]                  # the MPIs the program links to
    describe: str
    compare: tuple[str, ...]               # collkit trial's output-check options
    env: dict[str, str] = field(default_factory=dict)

    def argv(self, run_dir: Path) -> list[str]:
        python = str(ROOT / ".mpich" / "bin" / "python")
        if self.name == "hpcc":
            return [shutil.which("hpcc") or "hpcc"]
        if self.name == "cp2k":
            return [shutil.which("cp2k.popt") or "cp2k.popt", "-i", str(run_dir / "H2O.inp")]
        if self.name == "mpi4py-osu-bcast":
            return [python, str(run_dir / "osu_bcast.py")]
        # `sh -c` only merges the tests' standard error (where unittest reports)
        # into standard output, which collkit trial compares; sh execs Python.
        return ["/bin/sh", "-c", 'exec "$0" "$1" 2>&1', python, str(MPI4PY_TESTS / "test_cco_buf.py")]

    def prepare(self, run_dir: Path, ranks: int) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        if self.name == "hpcc":
            (run_dir / "hpccoutf.txt").unlink(missing_ok=True)
            sys.path.insert(0, str(ROOT / "tests" / "preload"))
            import sweep  # hpcc's small input, shared with the preload's sweep
            sweep.hpcc_prepare(run_dir, ranks)
        elif self.name == "cp2k":
            # Debian's example (cp2k-data's basis sets and potentials are found by
            # name), a few more MD steps so that the run is not all start-up.
            text = CP2K_EXAMPLE.read_text()
            (run_dir / "H2O.inp").write_text(re.sub(r"STEPS\s+\d+", f"STEPS {CP2K_STEPS}", text))
        elif self.name == "mpi4py-osu-bcast":
            # The demo as mpi4py's sdist ships it (setup.sh downloads the sdist).
            with tarfile.open(MPI4PY_SDIST) as tar:
                member = tar.extractfile(f"mpi4py-{MPI4PY_VERSION}/demo/osu_bcast.py")
                (run_dir / "osu_bcast.py").write_bytes(member.read())

    def missing(self) -> str | None:
        if self.name == "hpcc":
            return None if shutil.which("hpcc") else "hpcc is not installed (apt-get install hpcc)"
        if self.name == "cp2k":
            return None if shutil.which("cp2k.popt") and CP2K_EXAMPLE.exists() else \
                "CP2K is not installed (apt-get install cp2k cp2k-data)"
        if not (ROOT / ".mpich" / "bin" / "python").exists() or not MPI4PY_SDIST.exists() \
                or not (MPI4PY_TESTS / "test_cco_buf.py").exists():
            return "mpi4py, its sdist or its tests are missing (bash scripts/setup.sh --tests)"
        return None


# hpcc appends its results to hpccoutf.txt: the check prints the verdicts of
# hpcc's own checks (HPL's residual tests passed/failed, PTRANS's and
# RandomAccess's errors found, the summary's Success flag), which must not
# change, then removes the file for the next run. Not the residuals' values:
# they are rounding noise that any other summation order moves.
HPCC_CHECK = ("--compare-command",
              "sh -c 'grep -E -e ^Success= -e ^Found -e \"tests completed and\" -e ^PTRANS_residual= "
              "hpccoutf.txt; rm -f hpccoutf.txt'")
CP2K_EXAMPLE = Path("/usr/share/doc/cp2k/examples/H2O.inp")
CP2K_STEPS = 20
PROGRAMS = {
    # One water molecule, Quickstep DFT, NVE molecular dynamics: what must not
    # change is the physics, the total energy of each step to 1e-7 relative
    # (another summation order in an allreduce moves the last digits).
    "cp2k": Program("cp2k", ("openmpi",),
                    f"CP2K 2023.1 (Debian packages cp2k, cp2k-data), cp2k.popt on its H2O.inp example "
                    f"({CP2K_STEPS} MD steps)",
                    ("--compare-regex", r"(?m)^\s*ENERGY\|\s+Total FORCE_EVAL \( QS \) energy[^:]*:\s+(\S+)",
                     "--compare-rtol", "1e-7"),
                    {"OMP_NUM_THREADS": "1"}),
    "hpcc": Program("hpcc", ("openmpi",), "HPC Challenge 1.5.0 (Debian package hpcc), N = 200, P x Q = all ranks",
                    HPCC_CHECK),
    # Four ranks' unittest reports reach the output interleaved at the grain of
    # each write, not of each line ("OKRan 72 tests" was seen in 2 of 25 MPICH
    # runs): the check counts the verdict words, in any order, and without word
    # boundaries, which another rank's text can take away.
    "mpi4py-cco": Program("mpi4py-cco", ("openmpi", "mpich"),
                          f"mpi4py {MPI4PY_VERSION}'s test_cco_buf.py (PyPI sdist): 72 tests of the buffer collectives",
                          ("--compare-regex", r"(Ran \d+ tests|OK|FAILED)", "--compare-unordered"),
                          {"MPI4PY_MPIABI": ""}),
    # A benchmark's results are its timings; what must not change is what it
    # measured: the sizes column.
    "mpi4py-osu-bcast": Program("mpi4py-osu-bcast", ("openmpi", "mpich"),
                                f"mpi4py {MPI4PY_VERSION}'s demo/osu_bcast.py (PyPI sdist): MPI_Bcast of 0 B to 1 MiB, "
                                "10,000 calls a size up to 8 KiB, 100 above",
                                ("--compare-regex", r"(?m)^\s*(\d+)\s+\d"), {"MPI4PY_MPIABI": ""}),
}


def collkit(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "collkit", *args]
    print("$ collkit " + " ".join(args), file=sys.stderr, flush=True)
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, text=True)
    print(f"  ({time.monotonic() - t0:.1f} s, exit {proc.returncode})", file=sys.stderr, flush=True)
    if check and proc.returncode != 0:
        sys.stdout.write(proc.stdout)
        raise SystemExit(f"application_loop: `collkit {args[0]}` failed with exit {proc.returncode}")
    return proc


def forced_choice(records: Path, classes: list[dict]) -> tuple[str, str, str]:
    """When the rules keep the library everywhere, the trial still tries something:
    (collective, algorithm, why). The collective is the one the profiled classes
    spent most time in among those the campaign measured libcollkit on; the
    algorithm, of those measured ok at every size the campaign measured that
    collective at (so every class of it can run it), the one with the smallest
    sum of medians. Calls it cannot run still go to the library (the preload's
    fallback)."""
    last: dict[str, dict] = {}
    for line in records.read_text().splitlines():
        rec = json.loads(line)
        last[rec["id"]] = rec       # a re-measured point's last record stands for it
    ok = [r for r in last.values() if r["backend"] == "collkit" and r["status"] == "ok"]
    spent: dict[str, float] = {}
    for c in classes:
        spent[c["collective"]] = spent.get(c["collective"], 0.0) + c["time_max_s"]
    measured = {r["collective"] for r in ok}
    if not measured:
        raise SystemExit("application_loop: the campaign measured no libcollkit algorithm ok: nothing to try")
    coll = max(sorted(measured), key=lambda c: spent.get(c, 0.0))
    sizes = {r["bytes"] for r in ok if r["collective"] == coll}
    medians: dict[str, dict[int, list[float]]] = {}
    for r in ok:
        if r["collective"] == coll:
            medians.setdefault(r["algorithm"], {}).setdefault(r["bytes"], []).append(r["stats_us"]["median"])
    # the most sizes covered first, then the smallest sum of each size's mean median
    alg = min(sorted(medians), key=lambda a: (-len(medians[a]),
                                              sum(sum(v) / len(v) for v in medians[a].values())))
    covered = "every size" if set(medians[alg]) == sizes else f"{len(medians[alg])} of {len(sizes)} sizes"
    why = (f"the rules keep the library everywhere, so the trial forces {coll}={alg}: {coll} took the most "
           f"profiled time, and {alg} was the campaign's fastest libcollkit {coll} measured at {covered}")
    return coll, alg, why


def launcher(mpi: str, ranks: int, prog: Program, run_dir: Path) -> list[str]:
    sys.path.insert(0, str(ROOT / "python"))
    from collkit.mpis import known
    install = known.find_install(mpi)
    argv = prog.argv(run_dir)
    cmd = install.launch(ranks, Path(argv[0]), argv[1:])
    # mpi4py's wheel picks its MPI's ABI by the library it finds; say which.
    env = {k: (mpi if k == "MPI4PY_MPIABI" else v) for k, v in prog.env.items()}
    if not env:
        return cmd
    flags: list[str] = []
    for k, v in env.items():
        flags += ["-x", f"{k}={v}"] if install.family == "openmpi" else ["-genv", k, v]
    return [cmd[0], *flags, *cmd[1:]]


def loop(prog: Program, mpi: str, ranks: int, runs: int, out: Path, min_share: float,
         replay: str | None, quick: bool, autotune: bool = False) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    run_dir = out / "run"
    prog.prepare(run_dir, ranks)
    cmd = launcher(mpi, ranks, prog, run_dir)
    profile, spec, campaign, rules = out / "profile.json", out / "spec.toml", out / "campaign", out / "tuned.rules"
    for stale in (profile, spec, rules, out / "tuned.rules.provenance.json"):
        stale.unlink(missing_ok=True)
    shutil.rmtree(campaign, ignore_errors=True)
    summary: dict = {"program": prog.name, "describe": prog.describe, "mpi": mpi, "ranks": ranks,
                     "command": cmd}

    collkit("profile", "--mpi", mpi, "--trace", "--out", str(profile), "--", *cmd, cwd=run_dir)
    prof = json.loads(profile.read_text())
    summary["profile"] = {k: prof[k] for k in ("wall_s", "mpi_span_s", "complete")}
    summary["profile"]["classes"] = prof["classes"][:8]
    summary["profile"]["collective_time_s"] = prof["collectives_busiest_rank_s"]
    summary["profile"]["class_time_sum_s"] = sum(c["time_max_s"] for c in prof["classes"])
    summary["profile"]["clock"] = prof.get("clock")
    summary["profile"]["path"] = str(profile.resolve())

    # make test (quick): two launches a group, the fewest that still compare across launches
    collkit("spec", "--from-profile", str(profile), "--min-share", str(min_share), "--out", str(spec),
            "--launches", "2" if quick else "3")
    if quick:   # make test: the shortest measurement that still gives every point a median
        text = spec.read_text().replace("time_budget_s = 0.02", "time_budget_s = 0.005")
        spec.write_text(text)
    collkit("run", str(spec), "--out", str(campaign))
    collkit("tune", str(campaign), "--format", "collkit", "--mpi", mpi, "--out", str(rules))
    summary["rules"] = [ln for ln in rules.read_text().splitlines() if ln and not ln.startswith("#")]

    pred = collkit("predict", str(profile), "--campaign", str(campaign), "--rules", str(rules), "--json")
    summary["predict"] = json.loads(pred.stdout)

    from collkit.tune.writers import collkit as rules_format     # python/ is on sys.path (launcher)
    if any(ln.choice != "library" for ln in rules_format.parse(rules.read_text())):
        choice = ["--rules", str(rules)]
        summary["trial_choice"] = {"kind": "rules", "forced": None, "why": "the rules tune wrote"}
    else:
        coll, alg, why = forced_choice(campaign / "records.jsonl", prof["classes"])
        choice = ["--algorithm", f"{coll}={alg}"]
        summary["trial_choice"] = {"kind": "forced", "forced": f"{coll}={alg}", "why": why}
    prog.prepare(run_dir, ranks)     # the trial's first run starts from the same state as the profile's
    trial_json = out / "trial.json"
    # no --profile: the trial predicts from the profile the campaign's spec was written from
    collkit("trial", "--runs", str(runs), "--mpi", mpi, *choice, *prog.compare, "--campaign", str(campaign),
            "--json", str(trial_json), "--", *cmd, cwd=run_dir)
    summary["trial"] = json.loads(trial_json.read_text())

    if autotune:
        # Issue #42: the autotuner against the default (every choice run explores), then the rules
        # it learned (the last run's) against the default: the second run's time in collectives.
        learned = out / "learned.rules"
        learned.unlink(missing_ok=True)
        prog.prepare(run_dir, ranks)
        tuned_json = out / "trial-autotune.json"
        collkit("trial", "--runs", str(runs), "--mpi", mpi, "--autotune", "--autotune-out", str(learned),
                *prog.compare, "--json", str(tuned_json), "--", *cmd, cwd=run_dir)
        summary["trial_autotune"] = json.loads(tuned_json.read_text())
        summary["learned_rules"] = [ln for ln in learned.read_text().splitlines()
                                    if ln and not ln.startswith(("#", "mpi_library", "allow_fp_rank_variant"))]
        if any(ln.choice != "library" for ln in rules_format.parse(learned.read_text())):
            prog.prepare(run_dir, ranks)
            learned_json = out / "trial-learned.json"
            collkit("trial", "--runs", str(runs), "--mpi", mpi, "--rules", str(learned), *prog.compare,
                    "--json", str(learned_json), "--", *cmd, cwd=run_dir)
            summary["trial_learned"] = json.loads(learned_json.read_text())
        else:
            summary["trial_learned"] = None      # the library everywhere: the default itself

    if replay:
        rep = collkit("replay", str(profile), "--platform", replay, "--rules", str(rules), "--json")
        summary["replay"] = json.loads(rep.stdout)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e6:.1f}"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.1f}"


def markdown(paths: list[Path]) -> str:
    """The tables of docs/experiments/applications.md from summary.json files."""
    out = []
    for path in paths:
        s = json.loads(path.read_text())
        prof, pred, trial = s["profile"], s["predict"], s.get("trial")
        out.append(f"### {s['program']} on {s['mpi']}, {s['ranks']} ranks\n")
        out.append(f"Wall {prof['wall_s']:.3f} s; MPI_Init..Finalize {prof['mpi_span_s']:.3f} s; in collectives "
                   f"{_ms(prof['collective_time_s'])} ms on the busiest rank (classes' maxima add up to "
                   f"{_ms(prof['class_time_sum_s'])} ms).\n")
        out.append("| class | calls | profiled ms | per call µs | campaign default µs [95 %] | ratio | "
                   "rules' choice | choice µs |")
        out.append("| --- | ---: | ---: | ---: | --- | ---: | --- | ---: |")
        for c in pred["classes"][:8]:
            k = c["class"]
            where = f"{k['collective']} {k['bytes']} B" + (f" {k['dtype']} {k['op']}" if k["op"] else "") + \
                (f" root {k['root']}" if k["root"] is not None else "") + ("" if k["comm"] == "world" else f" ({k['comm']})")
            per = k["time_max_s"] / k["calls"] if k["calls"] else None
            if not c["covered"]:
                out.append(f"| {where} | {k['calls']} | {_ms(k['time_max_s'])} | {_us(per)} | not measured: "
                           f"{c['note']} | - | - | - |")
                continue
            ci = c["default_ci"]
            cis = f" [{_us(ci[0])}, {_us(ci[1])}]" if ci else ""
            ratio = f"{per / c['default_s']:.2f}" if per and c["default_s"] else "-"
            out.append(f"| {where} | {k['calls']} | {_ms(k['time_max_s'])} | {_us(per)} | {_us(c['default_s'])}{cis} "
                       f"| {ratio} | {c['choice']} | {_us(c['rules_s'])} |")
        dci, rci = pred.get("default_total_ci"), pred.get("rules_total_ci")
        out.append("")
        out.append(f"Predicted time in collectives: default {_ms(pred['default_total_s'])} ms"
                   + (f" [{_ms(dci[0])}, {_ms(dci[1])}]" if dci else "")
                   + f", rules {_ms(pred['rules_total_s'])} ms" + (f" [{_ms(rci[0])}, {_ms(rci[1])}]" if rci else "")
                   + f" (profiled classes: {_ms(pred['measured_total_s'])} ms, of which {_ms(pred['uncovered_s'])} ms "
                   f"not covered); implied wall change {pred['wall_change_pct']:+.2f} %.\n")
        if not trial:    # a summary from before the trial was always run
            out.append("Trial: not run, the rules keep the library's default everywhere.\n")
            continue
        choice = s.get("trial_choice") or {}
        forced = f"; {choice['why']}" if choice.get("kind") == "forced" else ""
        out.append(f"Trial ({trial['runs_per_variant']} runs a variant after {trial['warmup']} warm-up each, "
                   f"output check: {trial['output_check']}{forced}): {trial['status']}.\n")
        out.append("| measure | default median [95 %] | choice median [95 %] | ratio | p | verdict |")
        out.append("| --- | --- | --- | ---: | ---: | --- |")
        for c in trial["comparisons"]:
            def med(m, ci):
                return f"{m:.4g} s" + (f" [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else "")
            out.append(f"| {c['measure']} | {med(c['default_median_s'], c.get('default_ci_s'))} | "
                       f"{med(c['choice_median_s'], c.get('choice_ci_s'))} | {c['ratio']:.3f} | {c['p']:.3g} | "
                       f"{c['verdict']} |")
        rep = s.get("replay")
        if rep:
            out.append("")
            out.append(f"Replay on {rep.get('platform', 'the simulated machine')}: replayed classes measured "
                       f"{_ms(rep.get('measured_total_s'))} ms, simulated {_ms(rep['simulated_total_s'])} ms; span "
                       f"measured {rep.get('measured_span_s', 0):.3f} s, simulated {rep['simulated_span_s']:.3f} s.")
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    if len(sys.argv) > 1 and sys.argv[1] == "--markdown":
        print(markdown([Path(p) for p in sys.argv[2:]]))
        return 0
    ap.add_argument("--program", choices=sorted(PROGRAMS), required=True)
    ap.add_argument("--mpi", required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--runs", type=int, default=8, help="trial runs per variant")
    ap.add_argument("--min-share", type=float, default=1.0)
    ap.add_argument("--replay", metavar="sim:NAME", help="also replay the trace on this simulated machine")
    ap.add_argument("--quick", action="store_true", help="shorter campaign budgets (the test)")
    ap.add_argument("--autotune", action="store_true",
                    help="then trial the autotuner against the default, and the rules it learned (issue #42)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    prog = PROGRAMS[a.program]
    if a.mpi not in prog.mpis:
        print(f"application_loop: {prog.name} runs on {', '.join(prog.mpis)}, not {a.mpi}", file=sys.stderr)
        return 2
    why = prog.missing()
    if why:
        print(f"application_loop: {why}", file=sys.stderr)
        return 2
    out = a.out / f"{prog.name}-{a.mpi}-p{a.ranks}"
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    s = loop(prog, a.mpi, a.ranks, a.runs, out, a.min_share, a.replay, a.quick, a.autotune)
    p = s["predict"]
    t, choice = s["trial"], s["trial_choice"]
    verdicts = ", ".join(f"{c['measure']} {c['verdict']}" for c in t["comparisons"])
    print(f"{prog.name} on {a.mpi}, {a.ranks} ranks: wall {s['profile']['wall_s']:.3f} s, in collectives "
          f"{s['profile']['collective_time_s']:.4f} s; predicted default {p['default_total_s']:.4f} s, "
          f"rules {p['rules_total_s']:.4f} s; trial of {choice['forced'] or 'the rules'}: {t['status']} "
          f"({verdicts}); summary in {out / 'summary.json'}")
    if choice["kind"] == "forced":
        print(f"  {choice['why']}")
    if a.autotune:
        print("  " + autotune_line(s))
    return 0


def _coll_median(trial: dict, variant: str) -> float:
    c = next(c for c in trial["comparisons"] if c["measure"] == "time in collectives")
    return c["default_median_s"] if variant == "default" else c["choice_median_s"]


def autotune_line(s: dict) -> str:
    """The autotuner's trial and the learned rules' against the best fixed choice
    the campaign found (its tuned rules where the trial kept them, else the default),
    each as its trial's ratio to that trial's default runs."""
    t = s["trial_autotune"]
    verdicts = ", ".join(f"{c['measure']} {c['verdict']} ({c['ratio']:.3f})" for c in t["comparisons"])
    learned = s.get("trial_learned")
    tuned_is_rules = s["trial_choice"]["kind"] == "rules"
    best = _coll_median(s["trial"], "choice") / _coll_median(s["trial"], "default") if tuned_is_rules else 1.0
    got = _coll_median(learned, "choice") / _coll_median(learned, "default") if learned else 1.0
    return (f"autotune against the default: {t['status']}, {verdicts}; learned rules "
            f"{'library everywhere' if not learned else ', '.join(s['learned_rules'][:4])}: time in collectives "
            f"{got:.3f} of the default's, the campaign's best fixed choice {best:.3f} "
            f"({'its rules' if tuned_is_rules else 'the library'}): {got / best - 1:+.1%}")


if __name__ == "__main__":
    raise SystemExit(main())
