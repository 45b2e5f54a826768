#!/usr/bin/env python3
"""Does Open MPI follow a rules file? Per-peer messages of forced algorithms against
rules files that choose them (docs/tuning-files.md).

    .venv/bin/python scripts/ompi_tuning_proof.py [--ranks 4] [--bytes 65536] [ALG ...]

For each allreduce algorithm ALG (canonical names, default: ring recursive_doubling)
it runs one collkit-bench point three ways under the pml monitoring component: forced
to ALG, with a one-rule file choosing ALG's id at every size, and prints the messages
each rank sent each peer from inside collectives. Exit status 0 when every file run
sent exactly the forced run's messages and the algorithms' files differ from each
other, 1 otherwise, 2 for a user error."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from collkit.backends import backend_for, discover, ompi_monitoring, openmpi
from collkit.campaign import platform as platforms
from collkit.common.errors import UserError


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("algorithms", nargs="*", default=["ring", "recursive_doubling"])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--bytes", type=int, default=65536, help="message size (a multiple of 4: int32)")
    ns = ap.parse_args(argv)
    try:
        pm = platforms.detect().mpi("openmpi")
        offer = discover(pm.install)
        point = ompi_monitoring.allreduce_point(ns.ranks, ns.bytes, "proof")
        files: dict[str, dict] = {}
        ok = True
        with tempfile.TemporaryDirectory(prefix="collkit-proof-") as tmp:
            for name in ns.algorithms:
                alg = offer.force("allreduce", name)
                rules = Path(tmp) / f"{name}.rules"
                # one collective (allreduce, id 2), every communicator size, every message size
                rules.write_text(f"1\n2\n1\n1\n1\n0 {alg.native_id} 0 0\n")
                forced = ompi_monitoring.run_point(pm, point, backend_for("openmpi").start_env(alg)).internal
                by_file = ompi_monitoring.run_point(pm, point, openmpi.tuned_env(offer, str(rules))).internal
                files[name] = by_file
                same = forced == by_file
                ok &= same
                print(f"{name} (id {alg.native_id}): file {'==' if same else '!='} forced")
                for (src, dst), (msgs, nbytes) in sorted(by_file.items()):
                    f_msgs, f_bytes = forced.get((src, dst), (0, 0))
                    print(f"  {src} -> {dst}: file {msgs:4d} msgs {nbytes:9d} B   forced {f_msgs:4d} msgs {f_bytes:9d} B")
        names = list(files)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                differ = files[a] != files[b]
                ok &= differ
                print(f"{a} file vs {b} file: {'differ' if differ else 'SAME'}")
        return 0 if ok else 1
    except UserError as exc:
        print(f"ompi_tuning_proof: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
