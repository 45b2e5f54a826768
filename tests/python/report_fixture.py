"""Shared by test_report_html.py and test_report_browser.py: a real small campaign
(collkit run with the stand-in bench of tests/python/fakes), a copy of it with other
times (for the comparison), and headless Chromium driven from its command line."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

from cli_runner import collkit

FAKES = Path(__file__).parent / "fakes"
REPO = Path(__file__).resolve().parents[2]
SPEC = """
name = "fake"
collectives = ["allreduce", "bcast"]
sizes = "8B..2KiB x4"
ranks = [4, 6]
[backends]
collkit = ["ring", "bine_latency", "recursive_doubling", "binomial_halving", "bine"]
[measure]
timeout_s = 5
launches = 8
"""
# 8 launches a side: the comparison of two campaigns tests launch medians, and about
# 50 points under Holm need 8 (analysis/launches.launches_for)
RANKS = (4, 6)
SIZES = (8, 32, 128, 512, 2048)
# the stand-in's point that reports a wrong result, and the one it crashes on
INVALID = "bcast/collkit/openmpi/bine/p6/512B/"
CRASH = "allreduce/collkit/openmpi/ring/p6/2048B"


def make_campaign(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "spec.toml").write_text(SPEC)
    (root / "platform.toml").write_text(
        f'name = "fake"\n[mpi.openmpi]\nmpirun = "{FAKES / "fake_mpirun"}"\nargs = []\nenv = {{}}\n'
        f'bench = "{FAKES / "fake_bench"}"\n')
    out = collkit("run", "spec.toml", "--platform", "platform.toml", "--out", "base",
                  env={"FAKE_INVALID": INVALID, "FAKE_CRASH": CRASH, "FAKE_STATE": str(root / "fake-state")}, cwd=root)
    assert out.returncode == 1, out.stdout + out.stderr     # an invalid point: exit 1, campaign complete
    return root / "base"


def retimed(base: Path, dest: Path, slower: str, factor: float, seed: int) -> Path:
    """A copy of `base` whose ok points carry 30 noisy iterations around their median,
    the algorithm `slower` `factor` times slower: what two runs of a campaign look like."""
    shutil.copytree(base, dest, ignore=shutil.ignore_patterns("report.html", ".lock"))
    rng = random.Random(seed)
    lines = []
    for line in (dest / "records.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("status") == "ok":
            m = rec["stats_us"]["median"] * (factor if rec["algorithm"] == slower else 1.0)
            times = sorted(m * rng.uniform(0.98, 1.02) for _ in range(30))
            rec["times_us"] = times
            rec["iterations"] = len(times)
            rec["stats_us"] = dict(rec["stats_us"], min=times[0], median=(times[14] + times[15]) / 2,
                                   max=times[-1], p5=times[1], p95=times[-2])
        lines.append(json.dumps(rec))
    (dest / "records.jsonl").write_text("\n".join(lines) + "\n")
    return dest


# ------------------------------------------------------------------ Chromium
def chromium() -> str | None:
    return shutil.which("chromium")


def chromium_unavailable() -> str | None:
    """Why the browser tests cannot run here, or None."""
    exe = chromium()
    if exe is None:
        return "no `chromium` on PATH (Debian: apt-get install -y chromium; scripts/setup.sh installs it)"
    try:
        res = subprocess.run([exe, *FLAGS, "--dump-dom", "about:blank"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"chromium cannot start headless: {exc}"
    if "<html" not in res.stdout:
        return f"chromium --headless printed no DOM (exit {res.returncode}): {res.stderr.strip()[-300:]}"
    return None


# --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
         "--no-first-run", "--disable-extensions")


def dump_dom(url: str) -> tuple[str, list[str]]:
    """The DOM after load (scripts run), and the console messages Chromium logged."""
    res = subprocess.run([chromium(), *FLAGS, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
                          "--dump-dom", url], capture_output=True, text=True, timeout=120)
    return res.stdout, console_lines(res.stderr)


def screenshot(url: str, path: Path, width: int = 1400, height: int = 1000) -> list[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    res = subprocess.run([chromium(), *FLAGS, "--enable-logging=stderr", "--v=0", f"--window-size={width},{height}",
                          "--virtual-time-budget=5000", f"--screenshot={path}", url],
                         capture_output=True, text=True, timeout=120)
    assert path.is_file(), res.stderr[-500:]
    return console_lines(res.stderr)


def console_lines(stderr: str) -> list[str]:
    """Chromium's `--enable-logging=stderr --v=0` prints every console message and uncaught
    exception of the page as an INFO:CONSOLE line (checked by test_console_errors_are_seen)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def colours(png_path_or_bytes) -> int:
    """How many distinct colours an image has (1: blank)."""
    import io

    from PIL import Image
    src = io.BytesIO(png_path_or_bytes) if isinstance(png_path_or_bytes, bytes) else png_path_or_bytes
    with Image.open(src) as im:
        found = im.convert("RGB").getcolors(maxcolors=1 << 16)
    return len(found) if found is not None else 1 << 16
