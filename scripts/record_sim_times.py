#!/usr/bin/env python3
"""Re-record tests/python/fixtures/sim_times_before.json: the simulated times
tests/python/test_sim_times.py pins (its spec, its platforms).

    .venv/bin/python scripts/record_sim_times.py --why "issue #31: SimGrid 4.1, agreements outside the network"

Run it only when simulated times are meant to move (a new SimGrid, a change of
the harness's messages), and say why: the reason is appended to the fixture's
"about". About a minute on 2 cores."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "python"), str(REPO / "tests" / "python")]

import test_sim_times as t  # noqa: E402
from collkit.launch import simgrid as sim_launch  # noqa: E402


def run(tmp: Path, spec: str, platform: str, no_data: bool) -> dict[str, list[float]]:
    tmp.mkdir()
    (tmp / "spec.toml").write_text(spec)
    (tmp / "precise.toml").write_text(t.PRECISE)
    (tmp / "precise-loggp.toml").write_text(t.PRECISE + 'message_costs = "loggp"\n')
    env = dict(os.environ, **({sim_launch.NO_DATA_ENV: "1"} if no_data else {}))
    proc = subprocess.run([sys.executable, "-m", "collkit", "run", "spec.toml", "--platform", platform,
                           "--out", "out"], cwd=tmp, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"record_sim_times: collkit run failed: {proc.stderr[-2000:]}")
    recs = [json.loads(line) for line in (tmp / "out" / "records.jsonl").read_text().splitlines()]
    bad = [r["id"] for r in recs if r["status"] != "ok"]
    if bad:
        sys.exit(f"record_sim_times: {len(bad)} points not ok, e.g. {bad[0]}")
    return {r["id"]: r["times_us"] for r in recs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--why", required=True, help="why the times move (appended to the fixture's about)")
    ns = ap.parse_args()
    old = json.loads(t.FIXTURE.read_text())
    algs = sorted({"/".join(k.split("/")[i] for i in (0, 3)) for k in old["precise"]})
    spec = t.SPEC.replace("{algorithms}", json.dumps(algs))
    with tempfile.TemporaryDirectory(prefix="record-sim-times-") as tmp:
        new = {"precise": run(Path(tmp) / "precise", spec, "precise.toml", True),
               "default": run(Path(tmp) / "default", spec, "sim:lumi-like", False),
               "loggp_precise": run(Path(tmp) / "loggp", t.LOGGP_SPEC, "precise-loggp.toml", True)}
    for which in ("precise", "default"):
        moved = [k for k in old[which] if new[which].get(k) != old[which][k]]
        print(f"{which}: {len(moved)} of {len(old[which])} points moved")
    today = datetime.date.today().isoformat()
    about = old["about"] + f" Re-recorded on {today} with scripts/record_sim_times.py: {ns.why}."
    t.FIXTURE.write_text(json.dumps({"about": about, **new}, indent=0) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
