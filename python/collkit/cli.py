"""The collkit command line."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Callable

from collkit.common.argtypes import int_at_least, nonempty_path, seconds
from collkit.common.errors import UserError

# What a command runs is imported when it runs, and its parser only when it is
# the command named (build_parser): `collkit run` need not import the profile,
# trial, tuning and traffic modules to parse its line. The tests start collkit
# ~400 times; importing every command's modules was 0.23 s of a 0.33 s start.


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors on one line with exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"{message} (see `{self.prog} --help`)")


# `collkit --help` lists the commands in the order of README.md's loop ("The loop:
# measure, decide, apply, check again", then "At your program"), so that a newcomer
# reads them in the order they are used; what serves every step (the MPIs, the
# platform's algorithms, the machine's traffic) comes last. Each command is in
# exactly one group: build_parser refuses a command placed nowhere or twice.
#   measure   README's Measure: `new` writes the spec `run` runs (`status`, `cancel`
#             follow a Slurm campaign), and `check` tells first whether an
#             algorithm is right at all.
#   decide    what the measurements say: `report`, `export`, `compare` read
#             campaigns (compare is also README's "check again"), `model` and
#             `tune` turn them into cost models and tuning files.
#   apply     README's Apply: the library reads its own tuning file; `preload`
#             applies collkit's rules (or forced algorithms) to any program.
#   your program  README's "At your program", in its order: profile, spec
#             --from-profile, predict, trial, replay.
#   machines  what this platform has and offers, used at every step: the MPIs
#             (`mpis`, `build`), the algorithms to choose from (`list`,
#             `algorithms`), and the bytes an algorithm sends where (`traffic`).
COMMAND_GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("measure", "a spec, its campaign, and whether an algorithm is right at all",
     ("new", "run", "status", "cancel", "check")),
    ("decide", "what the campaigns say: summaries, comparisons, cost models, tuning files",
     ("report", "export", "compare", "model", "tune")),
    ("apply", "the decision in an unmodified program (a library reads its own tuning file)",
     ("preload",)),
    ("your program", "from the program's own calls to the program, faster, with the same output",
     ("profile", "spec", "predict", "trial", "replay")),
    ("machines", "what this platform has and offers, at every step",
     ("mpis", "build", "list", "algorithms", "traffic")),
)


def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands registered on `parser` (build_parser's): name -> its parser."""
    for action in parser._actions:    # argparse keeps its subparsers action only there
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _check_groups(parser: argparse.ArgumentParser) -> None:
    """Every registered command in exactly one group of COMMAND_GROUPS, and no
    group naming a command that is not registered: a programming error, raised
    by every invocation, so that no test or user sees an incomplete --help."""
    placed = [name for _, _, names in COMMAND_GROUPS for name in names]
    registered = set(commands(parser))
    twice = sorted({n for n in placed if placed.count(n) > 1})
    nowhere = sorted(registered - set(placed))
    unknown = sorted(set(placed) - registered)
    if twice or nowhere or unknown:
        raise RuntimeError(f"cli.COMMAND_GROUPS: commands in no group {nowhere}, in several {twice}, "
                           f"not registered {unknown}")


class _TopParser(_Parser):
    """`collkit` itself: its --help lists the commands by COMMAND_GROUPS, one
    section per group, each command with its one-line help."""

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        subactions = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
        # one row per command as argparse draws them (name, then its help), in groups
        rows = {row.dest: row for a in subactions for row in a._get_subactions()}
        for title, what, names in COMMAND_GROUPS:
            formatter.start_section(title)
            formatter.add_text(what)
            formatter.add_arguments([rows[n] for n in names])
            formatter.end_section()
        for group in self._action_groups:
            shown = [a for a in group._group_actions if a not in subactions]
            if shown:
                formatter.start_section(group.title)
                formatter.add_text(group.description)
                formatter.add_arguments(shown)
                formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()


class _Version(argparse.Action):
    """--version on one line (argparse's own wraps it at the terminal width)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from collkit.common.version import describe
        print(describe())
        parser.exit(0)


def _cmd_algorithms(ns: argparse.Namespace) -> int:
    from collkit.common.table import render
    from collkit.library import registry
    reg = registry.load_registry()
    algs, colls = list(reg.algorithms), list(reg.collectives)
    if ns.collective:
        coll = registry.check_collective(ns.collective)
        algs = [a for a in algs if a.collective == coll]
        colls = [c for c in colls if c.name == coll]
    if ns.json:
        # The registry as libcollkit exports it (registry.json's format),
        # filtered like the table.
        print(json.dumps({"collectives": [c.to_json() for c in colls],
                          "datatypes": [d.to_json() for d in reg.datatypes],
                          "ops": [o.to_json() for o in reg.ops], "skew_quantiles": reg.skew_quantiles,
                          "algorithms": [a.to_json() for a in algs]}, indent=2))
        return 0
    rows = [[a.collective, a.name, a.constraints.describe(), a.traits.describe(), a.origin, a.description]
            for a in algs]
    print(render(["collective", "algorithm", "constraints", "traits", "origin", "description"], rows))
    return 0


_positive_ranks = int_at_least("rank count", 1)


def _cmd_check(ns: argparse.Namespace) -> int:
    from collkit.analysis import check
    from collkit.campaign import resources
    from collkit.library import registry
    from collkit.mpis import known
    mpi = known.find_install(ns.mpi or known.default_name())
    coll = registry.check_collective(ns.collective) if ns.collective else None
    algs = registry.resolve(registry.load(), ns.algorithm or [], coll)
    if not algs:
        raise UserError("no algorithm selected")
    ranks = ns.ranks or [8]
    for p in ranks:
        why = resources.process_refusal(p)
        if why:
            raise UserError(f"-n {p}: {why}")
    return check.run(mpi, ranks, algs, ns.level, ns.timeout)


def _cmd_list(ns: argparse.Namespace) -> int:
    from collkit.analysis import listing
    if ns.parameters is not None:
        if ns.backend or ns.collective:
            raise UserError("--parameters lists each library's parameters: give it alone (with --mpi, --json)")
        return listing.parameters(ns.mpi, ns.parameters, ns.json)
    return listing.run(ns.backend, ns.collective, ns.mpi, ns.json)


def _cmd_run(ns: argparse.Namespace) -> int:
    from collkit.launch import runner
    return runner.run(ns.spec, ns.out, ns.resume, ns.platform, sys.argv, ns.dry_run, ns.instrument, ns.verbose)


def _cmd_status(ns: argparse.Namespace) -> int:
    from collkit.launch import runner
    return runner.status(ns.dir)


def _cmd_cancel(ns: argparse.Namespace) -> int:
    from collkit.launch import runner
    return runner.cancel(ns.dir)


def _cmd_report(ns: argparse.Namespace) -> int:
    from collkit.launch import runner
    if ns.html or ns.figures is not None or ns.out is not None:
        if ns.breakdown or ns.out_dir is not None:
            raise UserError("--breakdown/--out-dir print and draw the breakdowns alone; the --html report "
                            "includes them: give one or the other")
        return runner.report_html(ns.dir, ns.html, ns.out, ns.figures)
    if len(ns.dir) > 1:
        raise UserError("several campaign directories make one --html report; give --html")
    if ns.breakdown:
        from collkit.analysis import breakdown
        return breakdown.report(ns.dir[0], ns.out_dir)
    if ns.out_dir is not None:
        raise UserError("--out-dir is where --breakdown writes its charts; give --breakdown too")
    return runner.report(ns.dir[0])


def _cmd_export(ns: argparse.Namespace) -> int:
    from collkit.launch import runner
    return runner.export(ns.dir, ns.format)


def _cmd_compare(ns: argparse.Namespace) -> int:
    from collkit.analysis import compare
    return compare.run(ns.base, ns.new, ns.format, ns.match_keys, ns.ignore_keys, ns.fail_on_regression)


def _collective_help() -> str:
    """The valid collectives, from the registry when a build is there."""
    from collkit.library import registry
    try:
        return f"only this collective: {', '.join(registry.collective_names())}"
    except UserError:
        return "only this collective (`collkit algorithms` lists them once built)"


_DIR_HELP = "a campaign directory, as `collkit run` made it (results/<name>-<date>-<time>, or --out)"


def _add_campaign_commands(sub) -> None:
    r = sub.add_parser("run", help="run a benchmark campaign from a spec",
                       description="Validate SPEC, launch collkit-bench for every test point, record "
                                   "each result as it finishes, and print which algorithm is fastest "
                                   "where and how far the library default is from it.")
    r.add_argument("spec", nargs="?", type=Path, metavar="SPEC.toml",
                   help="experiment spec (optional with --resume)")
    r.add_argument("--out", type=nonempty_path("--out"), metavar="DIR",
                   help="campaign directory (default results/<name>-<date>-<time>)")
    r.add_argument("--resume", type=Path, metavar="DIR",
                   help="continue an interrupted campaign: run only the points it lacks")
    r.add_argument("--platform", type=Path, metavar="FILE",
                   help="platform descriptor (default: this machine's Open MPI and MPICH); "
                        "one with a [slurm] table submits batch jobs; sim:NAME simulates a preset "
                        "machine under SimGrid (e.g. sim:fattree-2to1, sim:lumi-like)")
    r.add_argument("--dry-run", action="store_true",
                   help="Slurm platforms: write the campaign, its points and batch scripts, submit nothing")
    r.add_argument("--instrument", action="store_true",
                   help="launch collkit-bench-instr (as `instrument = true` in the spec): records carry "
                        "comm/reduce/copy time breakdowns for `collkit report --breakdown`")
    r.add_argument("-v", "--verbose", action="store_true",
                   help="print each unstable or failed point as it happens (they are always counted on "
                        "the progress line), and list every one of them at the end, not the first 20")
    r.set_defaults(func=_cmd_run)

    st = sub.add_parser("status", help="a campaign's point counts and its Slurm jobs' states",
                        description="Print how many points of the campaign are ok, invalid, failed, "
                                    "skipped and still to run, and, for Slurm campaigns, the state of "
                                    "each batch job.")
    st.add_argument("dir", type=Path, metavar="DIR", help=_DIR_HELP)
    st.set_defaults(func=_cmd_status)

    ca = sub.add_parser("cancel", help="scancel a campaign's queued and running Slurm jobs",
                        description="Cancel the queued and running Slurm jobs of a campaign submitted "
                                    "to a Slurm platform; `collkit run --resume DIR` runs what is left.")
    ca.add_argument("dir", type=Path, metavar="DIR", help=_DIR_HELP)
    ca.set_defaults(func=_cmd_cancel)

    rep = sub.add_parser("report", help="print a campaign's summary again, or write it as an HTML report",
                         description="Per collective, library, rank count and size: the fastest "
                                     "algorithm, its median time, the default's, and their ratio. "
                                     "--html: the same and more as one self-contained HTML file.")
    rep.add_argument("dir", type=Path, nargs="+", metavar="DIR",
                     help=_DIR_HELP + "; with --html, several: the first is the base of their comparison")
    rep.add_argument("--html", action="store_true",
                     help="write one self-contained HTML report (heatmaps, curves, breakdowns, every point; "
                          "with several DIRs their comparison)")
    rep.add_argument("--out", type=nonempty_path("--out"), metavar="FILE",
                     help="where --html writes (default DIR/report.html; an existing file is replaced)")
    rep.add_argument("--figures", type=nonempty_path("--figures"), metavar="D",
                     help="also write the report's figures as PNG and SVG files to D, for papers")
    rep.add_argument("--breakdown", action="store_true",
                     help="instrumented campaigns: per algorithm, time in comm / reduce / copy / other "
                          "against message size, as a table and as stacked-bar charts (PNG and SVG)")
    rep.add_argument("--out-dir", type=Path, metavar="D",
                     help="where --breakdown writes its charts (default DIR/breakdown)")
    rep.set_defaults(func=_cmd_report)

    e = sub.add_parser("export", help="print a campaign's results, one row per point",
                       description="One row per point with its identity, status, timing statistics "
                                   "and bandwidths, as CSV or JSON.")
    e.add_argument("dir", type=Path, metavar="DIR", help=_DIR_HELP)
    e.add_argument("--format", choices=("csv", "json", "ranks"), default="csv",
                   help="csv (default) or json; ranks: one CSV row per rank of the points measured with "
                        "[measure] granularity = \"ranks\" (its median, arrival and exit, late or not)")
    e.set_defaults(func=_cmd_export)


def _add_compare_command(sub) -> None:
    from collkit.analysis.compare import percent
    cp = sub.add_parser("compare", help="what changed between campaigns, point by point, with significance",
                        description="Match the points of BASE and each NEW campaign; per point: the ratio of "
                                    "medians NEW/BASE with a 95%% bootstrap interval, the Mann-Whitney U "
                                    "p-value (Holm-adjusted over all comparisons) and a verdict, faster, "
                                    "slower or same at alpha 0.01; points on one side only or not ok are "
                                    "listed; geometric means per collective and backend.")
    cp.add_argument("base", type=Path, metavar="BASE", help="the reference campaign directory")
    cp.add_argument("new", type=Path, nargs="+", metavar="NEW", help="campaign directories to compare with BASE")
    cp.add_argument("--format", choices=("table", "csv", "json"), default="table",
                    help="table (default), csv or json")
    cp.add_argument("--match-keys", metavar="K,K,...",
                    help="match points on these keys only (e.g. collective,algorithm,ranks,bytes to "
                         "compare two libraries or machines); default: the whole identity")
    cp.add_argument("--ignore-keys", metavar="K,K,...",
                    help="match on the identity less these keys (e.g. mpi)")
    cp.add_argument("--fail-on-regression", type=percent, metavar="PCT",
                    help="exit 1 when a point is significantly slower by more than PCT %%")
    cp.set_defaults(func=_cmd_compare)


def _add_algorithms_command(sub) -> None:
    a = sub.add_parser("algorithms", help="list libcollkit's algorithms and their constraints",
                       description="libcollkit's registry: per collective, every algorithm with its "
                                   "origin, description and constraints (commutative op, power-of-two "
                                   "ranks, minimum count); --json adds the collective descriptors.")
    a.add_argument("--collective", metavar="C", help=_collective_help())
    a.add_argument("--json", action="store_true", help="print the registry as JSON")
    a.set_defaults(func=_cmd_algorithms)


def _add_check_command(sub) -> None:
    from collkit.analysis.check import LEVELS
    c = sub.add_parser("check", help="run the correctness matrix under a real MPI",
                       description="Run every selected algorithm over roots, counts, datatypes, ops, "
                                   "in place and out of place, on two communicators, against an "
                                   "independent reference.")
    c.add_argument("--mpi", metavar="NAME", help="a known MPI (collkit mpis; default: the only one, or openmpi)")
    c.add_argument("-n", dest="ranks", type=_positive_ranks, action="append", metavar="P",
                   help="number of ranks; repeat for several (default 8)")
    c.add_argument("--algorithm", action="append", metavar="NAME",
                   help="NAME or COLLECTIVE/NAME; repeat for several (default: all)")
    c.add_argument("--collective", metavar="C", help=_collective_help())
    c.add_argument("--level", choices=LEVELS, default="standard",
                   help="matrix size: quick, standard (default) or full")
    c.add_argument("--timeout", type=seconds("--timeout", 0.0, 7 * 86400.0), default=1800.0, metavar="S",
                   help="seconds before one launch counts as hung (default 1800)")
    c.set_defaults(func=_cmd_check)


def _add_list_command(sub) -> None:
    ls = sub.add_parser("list", help="show what this platform offers: MPI library algorithms, libcollkit's",
                        description="For backend mpi: per MPI library and collective, every algorithm it "
                                    "can be forced to run (canonical name, native name and id) and its "
                                    "default. For backend collkit: libcollkit's registry.")
    ls.add_argument("--backend", choices=("mpi", "collkit"), help="only this backend (default: both)")
    ls.add_argument("--collective", metavar="C", help=_collective_help())
    ls.add_argument("--mpi", metavar="NAME", help="only this known MPI (an error if it is missing)")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.add_argument("--parameters", nargs="?", const="", metavar="TEXT",
                    help="instead: the parameters a spec's [parameters.NAME] may sweep (names containing TEXT)")
    ls.set_defaults(func=_cmd_list)


def _cmd_model(ns: argparse.Namespace) -> int:
    from collkit.library import registry
    from collkit.tune import command as tune_command
    coll = registry.check_collective(ns.collective) if ns.collective else None
    return tune_command.model(ns.dir, coll, ns.points)


def _cmd_tune(ns: argparse.Namespace) -> int:
    from collkit.tune import command as tune_command
    # the command as parsed (main() may be called with an argv other than sys.argv)
    argv = ["tune", *map(str, ns.dir), "--format", ns.format, "--out", str(ns.out)]
    argv += (["--mpi", ns.mpi] if ns.mpi else []) + (["--validate"] if ns.validate else [])
    argv += ["--repeats", str(ns.repeats)] if ns.repeats is not None else []
    argv += ["--resume"] if ns.resume else []
    argv += ["--allow-fp-rank-variant"] if ns.allow_fp_rank_variant else []
    return tune_command.tune(ns.dir, ns.format, ns.out, ns.validate, ns.mpi, argv, ns.repeats, ns.resume,
                             ns.allow_fp_rank_variant)


def _add_tune_commands(sub) -> None:
    """`collkit model` and `collkit tune` (python/collkit/tune/, docs/tuning.md)."""
    m = sub.add_parser("model", help="fit each algorithm's alpha-beta-gamma cost model to a campaign",
                       description="Per library, collective and algorithm: alpha, beta, gamma of its schedule's "
                                   "cost terms fitted to the measured medians (robust, weighted by each point's "
                                   "confidence interval), the fit error, and predicted against measured times.")
    m.add_argument("dir", type=Path, nargs="+", metavar="DIR", help=_DIR_HELP)
    m.add_argument("--collective", metavar="C", help=_collective_help())
    m.add_argument("--points", action="store_true", help="predicted against measured at every point "
                   "(default: per algorithm and rank count, the smallest and largest size and the worst fit)")
    m.set_defaults(func=_cmd_model)
    t = sub.add_parser("tune", help="write a tuning file (Open MPI rules, MPICH JSON, collkit rules) from campaigns",
                       description="Per collective, rank count and size range: the fastest algorithm where it "
                                   "beats the library default significantly, else the default; cutoffs where the "
                                   "fitted models cross; unmeasured rank counts from the models. --validate runs "
                                   "the file in the library at held-out rank counts and sizes and reports regret.")
    t.add_argument("dir", type=Path, nargs="+", metavar="DIR", help=_DIR_HELP)
    t.add_argument("--format", required=True, metavar="F", help="openmpi, mpich, impi, impi-json or collkit")
    t.add_argument("--out", required=True, type=nonempty_path("--out"), metavar="FILE",
                   help="the tuning file to write (never overwritten); FILE.provenance.json beside it")
    t.add_argument("--mpi", metavar="NAME", help="the known MPI whose default is the baseline and (openmpi, mpich) "
                   "that runs --validate, e.g. openmpi5 (default: the one named like the format's family)")
    t.add_argument("--validate", action="store_true",
                   help="then run a validation campaign with the file loaded and report regret per point")
    t.add_argument("--repeats", type=int, metavar="N",
                   help="--validate: launch every variant N times, interleaved (4 to 20, default 6)")
    t.add_argument("--resume", action="store_true",
                   help="--validate: go on with FILE's interrupted validation (FILE.validation/) up to --repeats, "
                        "instead of writing FILE")
    t.add_argument("--allow-fp-rank-variant", action="store_true",
                   help="--format collkit: also choose algorithms whose floating-point results may differ "
                        "across ranks in the last bits (`collkit list`, traits), and let the preload run them "
                        "on floating-point reductions (docs/tuning.md)")
    t.set_defaults(func=_cmd_tune)


def _module_parsers(module: str, function: str = "add_parser") -> Callable[[object], None]:
    """A registrar that imports MODULE only when called, then calls its FUNCTION(sub)."""
    return lambda sub: getattr(importlib.import_module(module), function)(sub)


# Who registers each command: a registrar adds the parsers of the commands it
# names (some add several), each command is named by exactly one.
REGISTRARS: tuple[tuple[tuple[str, ...], Callable[[object], None]], ...] = (
    (("algorithms",), _add_algorithms_command),
    (("check",), _add_check_command),
    (("list",), _add_list_command),
    (("run", "status", "cancel", "report", "export"), _add_campaign_commands),
    (("compare",), _add_compare_command),
    (("traffic",), _module_parsers("collkit.traffic.command")),
    (("preload",), _module_parsers("collkit.apply.preload")),
    (("trial",), _module_parsers("collkit.program.trial")),
    (("spec",), _module_parsers("collkit.program.spec_from_profile")),
    (("predict",), _module_parsers("collkit.program.predict")),
    (("replay",), _module_parsers("collkit.program.replay")),
    (("profile",), _module_parsers("collkit.program.profile")),
    (("new",), _module_parsers("collkit.specbuild.command")),
    (("model", "tune"), _add_tune_commands),
    (("mpis", "build"), _module_parsers("collkit.mpis.command", "add_parsers")),
)


def named_command(argv: list[str]) -> str | None:
    """The command ARGV names (its first word not an option), or None where the
    top-level help is asked for first (-h, --help) or no command is named."""
    for arg in argv:
        if arg in ("-h", "--help"):
            return None
        if not arg.startswith("-"):
            return arg
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with COMMAND, only that command's parser in full
    (and its registrar's others), the rest by name alone: enough to parse a
    line that names COMMAND, or to refuse an unknown one. --help needs all."""
    p = _TopParser(prog="collkit", description="Design, verify, benchmark and tune MPI collective algorithms.")
    p.add_argument("--version", action=_Version, nargs=0, help="print the version and the source it was built from")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    named = [name for names, _ in REGISTRARS for name in names]
    full = command not in named
    for names, register in REGISTRARS:
        if full or command in names:
            register(sub)
    if not full:
        built = set(commands(p))
        for name in (n for _, _, names in COMMAND_GROUPS for n in names if n not in built):
            sub.add_parser(name)        # never shown: `collkit NAME --help` builds NAME in full
    _check_groups(p)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(named_command(argv))
    try:
        ns = parser.parse_args(argv)
        if not getattr(ns, "command", None):
            parser.print_help()
            return 2
        return ns.func(ns)
    except UserError as exc:
        print(f"collkit: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("collkit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`collkit export DIR | head`): not an error of ours.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 141
    except OSError as exc:
        # A file collkit was told to read or write: say which, not a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"collkit: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
