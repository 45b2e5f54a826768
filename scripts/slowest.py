#!/usr/bin/env python3
"""The slowest tests of a `make test` run, and where its time went.

    slowest.py RESULTS_DIR [N]

Reads what scripts/test.sh leaves in RESULTS_DIR: ctest's JUnit files
(ctest-<tree>.xml), pytest's (pytest.xml) and the steps' wall times
(steps.tsv), and prints the steps with their times, then the N slowest tests
(default 10) over all of them, each with its suite. Standard library only.
A missing or damaged file is passed over with a note: the run's own verdict
stands, this is a report."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def cases(path: Path, suite: str) -> list[tuple[float, str, str]]:
    """(seconds, suite, test) of every test case of one JUnit file."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        try:
            seconds = float(case.get("time", "0"))
        except ValueError:
            continue
        cls, name = case.get("classname", ""), case.get("name", "")
        # pytest: classname "tests.python.test_x" (+ ".Class"), name "test_y[param]"
        test = f"{cls.split('.', 2)[-1]}::{name}" if cls and cls != name else name
        out.append((seconds, suite, test))
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    results = Path(argv[1])
    n = int(argv[2]) if len(argv) > 2 else 10
    found: list[tuple[float, str, str]] = []
    for path in sorted(results.glob("*.xml")):
        suite = path.stem.removeprefix("ctest-") if path.stem.startswith("ctest-") else path.stem
        suite = f"ctest {suite}" if path.stem.startswith("ctest-") else suite
        try:
            found += cases(path, suite)
        except (OSError, ET.ParseError) as exc:
            print(f"(slowest: {path} not read: {exc})")
    steps = results / "steps.tsv"
    if steps.is_file():
        print("\nsteps (wall time):")
        for line in steps.read_text().splitlines():
            label, _, seconds = line.rpartition("\t")
            print(f"  {int(seconds):5d} s  {label}")
    if found:
        found.sort(reverse=True)
        total = sum(s for s, _, _ in found)
        print(f"\nthe {min(n, len(found))} slowest of {len(found)} tests ({total:.0f} s summed; "
              "ctest and pytest run two at a time):")
        for seconds, suite, test in found[:n]:
            print(f"  {seconds:7.1f} s  {suite:14s} {test}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
