"""`collkit new`: the subcommand, its two front-ends and the one way a spec is written."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from datetime import date
from pathlib import Path

from collkit.common.argtypes import nonempty_path
from collkit.campaign import spec as specs
from collkit.common.errors import UserError, did_you_mean
from collkit.mpis import known
from collkit.specbuild import MIN_COLUMNS, MIN_LINES
from collkit.specbuild import choices as ch
from collkit.specbuild import evaluate as ev
from collkit.specbuild import offer as offers



def _platform_entry(label: str, out: Path) -> str:
    """The spec's `platforms` entry for --platform: sim:NAME as is, a file relative to
    the spec's directory (the loader reads it from there, campaign/platform.spec_entry)."""
    if not label or label.startswith("sim:"):
        return label
    return os.path.relpath(Path(label).resolve(), out.resolve().parent)


def _judged(c: ch.Choices, offer: offers.PlatformOffer, out: Path) -> tuple[str, ev.Evaluation]:
    """The spec text of these choices as the file `out`, and its evaluation."""
    text = ch.body(replace(c, platform=_platform_entry(offer.label, out)))
    return text, ev.evaluate(text, offer.platform, out)


def _header(e: ev.Evaluation, offer: offers.PlatformOffer, out: Path) -> str:
    where = offer.label or "this machine"
    return (f"# Experiment spec written by `collkit new` on {date.today().isoformat()} for {where}.\n"
            f"# Run it with: collkit run {out.name}\n"
            f"# When written: {e.summary()}\n"
            "# (the estimate: points x (time_budget_s + settle_s) + launches x launch_warmup_s;\n"
            "# MPI start-up and validation not counted; docs/campaigns.md, `collkit new`)\n\n")


def write_spec(c: ch.Choices, out_text: str, offer: offers.PlatformOffer) -> tuple[str, bool]:
    """Write the spec of `c` to out_text if the loader and the planner accept it and no
    file is there: (what happened, whether it was written)."""
    if not out_text.strip():
        return "give the spec file a name", False
    out = Path(out_text.strip())
    if out.exists():
        return f"{out} exists: collkit new never overwrites a file; choose another name", False
    body, e = _judged(c, offer, out)
    if not e.ok:
        return f"not written: {e.error}", False
    text = _header(e, offer, out) + body
    final = ev.evaluate(text, offer.platform, out)   # the very text written, judged once more
    if not final.ok:
        return f"not written: {final.error}", False
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.link(tmp, out)   # fails if the file appeared meanwhile: never overwrite
    except FileExistsError:
        return f"{out} exists: collkit new never overwrites a file; choose another name", False
    except OSError as exc:
        return f"cannot write {out}: {exc.strerror}", False
    finally:
        tmp.unlink(missing_ok=True)
    return f"wrote {out}: {final.summary()}; run it with: collkit run {out}", True


def _split(text: str | None) -> list[str]:
    return [i.strip() for i in (text or "").split(",") if i.strip()]


def _from_flags(ns: argparse.Namespace, offer: offers.PlatformOffer) -> ch.Choices:
    c = ch.Choices()
    if ns.name is not None:
        c.name = ns.name
    c.collectives = _split(ns.collectives)
    c.sizes = ns.sizes or ""
    c.ranks = ns.ranks or ""
    c.mpis = _split(ns.mpi)
    c.backend_mpi = _split(ns.backend_mpi)
    c.backend_collkit = _split(ns.backend_collkit)
    c.dtype = ns.dtype or c.dtype
    c.op = ns.op or c.op
    if ns.root is not None:
        c.root = ns.root
    c.in_place = ns.in_place
    for item in ns.measure or []:
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--measure {item!r}: write KEY=VALUE, e.g. --measure time_budget_s=0.01")
        c.measure[key.strip()] = val
    c.platform = offer.label
    return c


def _interactive_start(c: ch.Choices, offer: offers.PlatformOffer) -> ch.Choices:
    """Flags given to the interactive builder are its starting choices; what they leave
    open starts from the platform's default MPI and libcollkit's algorithms."""
    # Radio lists hold only what they offer: a flag outside them would be dropped
    # silently, so it is refused here (without the interface, the loader refuses it).
    for flag, val, offered in (("--dtype", c.dtype, offer.datatypes), ("--op", c.op, specs.OPS),
                               ("--measure sync", c.measure.get("sync", ""), specs.SYNCS),
                               ("--measure validate", c.measure.get("validate", ""), specs.VALIDATIONS)):
        if val not in offered:
            raise UserError(f"{flag} {val!r} is not one of {', '.join(offered)}{did_you_mean(val, offered)}")
    usable = offer.usable_mpis()
    if not c.mpis and usable:
        try:
            default = known.default_name()
        except UserError:
            default = ""
        c.mpis = [default if default in usable else usable[0]]
    c.backend_mpi = c.backend_mpi or ["default"]
    c.backend_collkit = c.backend_collkit or ["all"]
    c.sizes = c.sizes or "8B..1MiB x8"
    c.ranks = c.ranks or "2, 4"
    return c


def _check_terminal() -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError("collkit new is interactive and needs a terminal (stdin and stdout are not both one); "
                        "in a script give --non-interactive with --collectives, --sizes, --ranks, ...")
    size = os.get_terminal_size(sys.stdout.fileno())
    if size.columns < MIN_COLUMNS or size.lines < MIN_LINES:
        raise UserError(f"the terminal is {size.columns}x{size.lines}; collkit new needs at least "
                        f"{MIN_COLUMNS}x{MIN_LINES}: enlarge it, or use --non-interactive")


def cmd_new(ns: argparse.Namespace) -> int:
    if ns.out is not None and ns.out.exists():
        raise UserError(f"--out {ns.out} exists: collkit new never overwrites a file; choose another name")
    if not ns.non_interactive:
        _check_terminal()   # before discovery: a wrong terminal is said at once
    offer = offers.load(ns.platform)
    c = _from_flags(ns, offer)
    out = ns.out or Path(f"{c.name.strip() or 'campaign'}.toml")
    if ns.non_interactive:
        message, done = write_spec(c, str(out), offer)
        if not done:
            raise UserError(message.removeprefix("not written: "))
        print(message)
        return 0
    if not offer.mpis:
        raise UserError(f"platform {offer.platform.name} has no MPI: {known.BUILD_HINT}")
    try:
        from collkit.specbuild.tui import Builder
    except ImportError as exc:
        raise UserError(f"the interactive builder needs prompt_toolkit ({exc}): pip install prompt_toolkit, "
                        "or use --non-interactive") from None
    builder = Builder(offer, _interactive_start(c, offer), out,
                      evaluate=lambda choice, path: _judged(choice, offer, Path(path.strip() or out))[1],
                      write=lambda choice, path: write_spec(choice, path, offer))
    message = builder.run()
    if message is None:
        print("collkit new: quit; nothing written", file=sys.stderr)
        return 1
    print(message)
    return 0


def add_parser(sub) -> None:
    n = sub.add_parser("new", help="build an experiment spec interactively from what the platform offers",
                       description="A terminal interface (80x24, keyboard only) that lists what the platform "
                                   "offers (MPIs and versions, collectives, each library's forcible algorithms, "
                                   "libcollkit's with their constraints), shows the plan's point count and a time "
                                   "estimate as choices change, refuses what `collkit run` would refuse, and "
                                   "writes a commented spec. --non-interactive: the same from flags, for scripts; "
                                   "without it the flags are the starting choices.")
    n.add_argument("--platform", type=Path, metavar="P",
                   help="a platform file or sim:NAME (default: this machine), written as the spec's platforms")
    n.add_argument("--out", type=nonempty_path("--out"), metavar="SPEC.toml",
                   help="the spec to write (default NAME.toml; an existing file is never overwritten)")
    n.add_argument("--non-interactive", action="store_true", help="no terminal interface: write from the flags")
    n.add_argument("--name", metavar="NAME", help="the campaign's name (default campaign)")
    n.add_argument("--collectives", metavar="C,C", help="collectives, comma-separated (collkit list)")
    n.add_argument("--sizes", metavar="S", help="sizes as in a spec: \"8B..1MiB x4\" or \"8,4KiB\"")
    n.add_argument("--ranks", metavar="P,P", help="rank counts, comma-separated")
    n.add_argument("--mpi", metavar="M,M", help="MPI libraries of the platform, comma-separated (collkit mpis)")
    n.add_argument("--backend-mpi", metavar="A,A",
                   help="the mpi backend's algorithms: default, all, or names like allreduce/ring")
    n.add_argument("--backend-collkit", metavar="A,A", help="libcollkit's algorithms: all or names")
    n.add_argument("--dtype", metavar="T", help="datatype (default int32)")
    n.add_argument("--op", metavar="OP", help="reduction op (default sum)")
    n.add_argument("--root", metavar="R", help="root rank (default 0)")
    n.add_argument("--in-place", action="store_true", help="MPI_IN_PLACE where the collective allows it")
    n.add_argument("--measure", action="append", metavar="KEY=VALUE",
                   help="a [measure] setting, e.g. time_budget_s=0.01; repeat for several")
    n.set_defaults(func=cmd_new)
