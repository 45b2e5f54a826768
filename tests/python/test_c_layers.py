"""No two C files of collkit call each other, directly or around a loop.

scripts/call_cycles.py reads preload/, bench/ and lib/: a file uses another
when it calls a function the other defines. Layers are one-way (issue #52:
preload's dispatcher once called the autotuner, which called the fallback
rules back in the dispatcher; the rules file's reader called the autotuner's
writer for the library line; bench's steady-state file took its median from
itself and the points file, which took the skew parser from conditions.c,
which took the median from the steady-state file). The checker itself is
tried on made-up folders with and without a loop."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKER = ROOT / "scripts" / "call_cycles.py"


def _run(*dirs: Path | str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECKER), *map(str, dirs)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)


@pytest.mark.parametrize("folder", ["preload", "bench", "lib", "tools"])
def test_no_circle_of_files(folder):
    out = _run(folder)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == f"no circle of files in {folder}"


def _write(d: Path, files: dict[str, str]) -> None:
    d.mkdir()
    for name, text in files.items():
        (d / name).write_text(text)


def test_checker_finds_a_loop_of_three_files(tmp_path):
    _write(tmp_path / "c", {
        "a.c": "int a_one(int x)\n{\n    return b_two(x) + 1;\n}\n",
        "b.c": "/* c_three( in a comment is no call */\nint b_two(int x)\n{\n    return c_three(x);\n}\n",
        "c.c": "static int helper(void) { return 0; }\nint c_three(int x)\n{\n    return x ? a_one(x - 1) : helper();\n}\n",
        "d.c": "int d_four(void)\n{\n    return a_one(2);\n}\n",
    })
    out = _run(tmp_path / "c")
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert lines[0].endswith("3 files call each other in a loop: a.c, b.c, c.c")
    assert "  a.c -> b.c (b_two)" in lines
    assert "  b.c -> c.c (c_three)" in lines
    assert "  c.c -> a.c (a_one)" in lines
    # d.c calls into the loop but nothing calls it back
    assert not any("d.c" in line for line in lines)


def test_checker_ignores_calls_in_comments_strings_and_static_functions(tmp_path):
    _write(tmp_path / "c", {
        "a.c": "int a_one(void)\n{\n    puts(\"b_two(\");\n    return b_two();\n}\n",
        "b.c": "/* a_one() would close a loop */\nstatic int a_one(void) { return 1; }\nint b_two(void)\n{\n"
               "    return a_one();\n}\n",
    })
    out = _run(tmp_path / "c")
    assert out.returncode == 0, out.stdout
    assert out.stdout.strip() == f"no circle of files in {tmp_path / 'c'}"


def test_checker_names_a_missing_folder(tmp_path):
    out = _run(tmp_path / "nowhere")
    assert out.returncode == 2
    assert out.stderr.strip() == f"call_cycles: {tmp_path / 'nowhere'} is not a folder"
