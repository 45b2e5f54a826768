"""`collkit --help` lists the commands by the steps of README.md's loop (issue #52,
item 5): every registered command exactly once, under its group, the groups in
the loop's order; a command registered but placed in no group stops the CLI."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

from cli_runner import collkit, in_process, one_line_error
from collkit import cli

# Where each command belongs, written out here rather than read from cli.py, so
# that a command moved to another group, or one added without a place, fails.
EXPECTED = {
    "measure": ["new", "run", "status", "cancel", "check"],
    "decide": ["report", "export", "compare", "model", "tune"],
    "apply": ["preload"],
    "your program": ["profile", "spec", "predict", "trial", "replay"],
    "machines": ["mpis", "build", "list", "algorithms", "traffic"],
}
HEADING = re.compile(r"^(\S[^:]*):$")         # argparse's section heading: "title:" at column 0
ENTRY = re.compile(r"^  (\S+)(?:\s|$)")       # a command's row: two spaces, its name, its help


def _sections(text: str) -> list[tuple[str, list[str]]]:
    """(heading, [first word of each row indented by exactly two spaces]) per section."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        head = HEADING.match(line)
        if head:
            out.append((head.group(1), []))
        elif out:
            row = ENTRY.match(line)
            if row:
                out[-1][1].append(row.group(1))
    return out


@pytest.fixture(scope="module")
def help_text():
    res = collkit("--help")       # as a user runs it: its own process, the terminal width it gets
    assert res.returncode == 0 and res.stderr == "", res.stderr
    return res.stdout


def test_every_command_is_registered_and_placed():
    assert set(cli.commands(cli.build_parser())) == {c for names in EXPECTED.values() for c in names}


def test_each_command_appears_once_under_its_group_in_the_loops_order(help_text):
    sections = _sections(help_text)
    groups = [(title, rows) for title, rows in sections if title in EXPECTED]
    assert [title for title, _ in groups] == list(EXPECTED)       # measure, decide, apply, ...
    for title, rows in groups:
        # the group's one-line description sits above its rows, indented too: only command names count
        assert [r for r in rows if r in cli.commands(cli.build_parser())] == EXPECTED[title], title
    every_row = [r for _, rows in sections for r in rows]
    for name in cli.commands(cli.build_parser()):
        assert every_row.count(name) == 1, f"{name} is listed {every_row.count(name)} times:\n{help_text}"
        assert len(re.findall(rf"^  {re.escape(name)}\s", help_text, re.M)) == 1, name


def test_each_row_carries_the_commands_one_line_help(help_text):
    # the rows argparse made of add_parser(help=...): the one-line help each command registered
    sub, = [a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    rows = sub._get_subactions()
    assert sorted(r.dest for r in rows) == sorted(c for names in EXPECTED.values() for c in names)
    flat = " ".join(help_text.split())      # wrapped rows read as one line
    for row in rows:
        assert f"{row.dest} {' '.join(row.help.split())}" in flat, row.dest


def test_the_options_are_still_listed(help_text):
    titles = [title for title, _ in _sections(help_text)]
    assert titles[-1] == "options" and "--version" in help_text.split("options:")[1]
    assert "positional arguments" not in help_text      # the commands are in their groups, not a flat list


def test_bare_collkit_prints_the_same_help_and_exits_2(capsys, help_text):
    res = in_process(capsys)
    assert res.returncode == 2
    assert _sections(res.stdout) == _sections(help_text)


@pytest.mark.parametrize("argv, parsed", [
    (["status", "d"], {"command": "status", "dir": "d"}),
    (["replay", "p.json", "--platform", "sim:x"], {"command": "replay", "profile": "p.json", "platform": "sim:x"}),
    (["mpis"], {"command": "mpis"}),
])
def test_subcommands_parse_as_before(argv, parsed):
    ns = vars(cli.build_parser().parse_args(argv))
    assert {k: str(ns[k]) for k in parsed} == parsed


def test_an_unknown_command_is_still_one_line_exit_2(capsys):
    one_line_error(in_process(capsys, "frobnicate"), "invalid choice", "frobnicate", "collkit --help")


def test_a_command_placed_in_no_group_stops_the_cli(monkeypatch):
    from collkit.program import replay
    original = replay.add_parser

    def also_frobnicate(sub):
        original(sub)
        sub.add_parser("frobnicate", help="a command nobody placed")
    monkeypatch.setattr(replay, "add_parser", also_frobnicate)
    with pytest.raises(RuntimeError, match=r"in no group \['frobnicate'\]"):
        cli.build_parser()


def test_a_group_naming_a_missing_or_repeated_command_stops_the_cli(monkeypatch):
    groups = cli.COMMAND_GROUPS
    monkeypatch.setattr(cli, "COMMAND_GROUPS", groups[:-1] + (("machines", "x", ("mpis", "build", "list",
                                                                                 "algorithms", "tune")),))
    with pytest.raises(RuntimeError, match=r"in no group \['traffic'\], in several \['tune'\]"):
        cli.build_parser()
    monkeypatch.setattr(cli, "COMMAND_GROUPS", groups + (("later", "x", ("teleport",)),))
    with pytest.raises(RuntimeError, match=r"not registered \['teleport'\]"):
        cli.build_parser()


def _options(parser: argparse.ArgumentParser) -> list[tuple]:
    return [(a.dest, tuple(a.option_strings), a.nargs, a.default, str(a.choices), a.help) for a in parser._actions]


@pytest.mark.parametrize("name", [c for names in EXPECTED.values() for c in names])
def test_a_named_command_gets_the_same_parser_as_in_the_whole_line(name):
    # main() builds only the command it is given (build_parser(name)): its
    # parser must be the one `collkit --help` describes, option for option
    whole, alone = cli.commands(cli.build_parser()), cli.commands(cli.build_parser(name))
    assert set(alone) == set(whole)         # every other name still known (an unknown one is refused)
    assert _options(alone[name]) == _options(whole[name])
    assert _options(alone[name])[1:], f"{name}: no options of its own"     # [0] is -h


def test_a_named_command_imports_only_its_own_modules():
    # what `collkit status DIR` parses with must not pull in the profile, trial,
    # tuning and traffic commands (0.23 s of each start when it did)
    code = ("import sys; from collkit import cli; cli.build_parser('status'); "
            "print(sorted(m for m in sys.modules if m.startswith(('collkit.program', 'collkit.tune', "
            "'collkit.traffic', 'collkit.apply', 'collkit.specbuild', 'collkit.analysis'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


@pytest.mark.parametrize("argv, name", [
    (["run", "s.toml"], "run"), (["--version"], None), (["-h", "run"], None), (["--help"], None),
    ([], None), (["frobnicate", "x"], "frobnicate"),
])
def test_the_command_a_line_names(argv, name):
    assert cli.named_command(argv) == name
