"""`collkit build` and `collkit mpis` on the command line."""

from __future__ import annotations

import argparse
import json
import shutil

from collkit.common.errors import UserError
from collkit.common.table import render
from collkit.mpis import build as builder
from collkit.mpis import known
from collkit.mpis.identity import derivative


def _forcing(k: known.KnownMPI) -> str:
    """Where algorithm forcing comes from for this MPI, or why it offers its default only."""
    if k.build is None:
        return "-"
    if not k.family:
        return f"default only: {k.kind} is not of a family collkit can force (Open MPI, MPICH, Intel MPI)"
    if not k.mpirun:
        return "default only: no launcher known"
    from collkit.backends import forcing_source
    source = forcing_source(k.install())
    # a derivative (Cray MPICH, MVAPICH) is forced through its family's knobs: say whose
    return f"{k.family}'s knobs: {source}" if derivative(k.kind, k.family) else source


def _row(k: known.KnownMPI) -> dict:
    b = k.build
    return {
        "name": k.name,
        "version": k.short,
        "library_version": k.library_version,
        "family": k.family,
        "mpicc": k.mpicc,
        "mpirun": k.mpirun,
        "build": str(b.prefix) if b else "",
        "origin": k.origin,
        "parts": sorted(p for p in b.manifest["parts"] if b.has(p)) if b else [],
        "missing_parts": b.missing_parts() if b else [],
        "forcing": _forcing(k),
        "problem": k.problem,
    }


def _installation() -> list[dict]:
    """The other things collkit can use here, each found or with its fix."""
    from collkit.simulation import settings as sim, simgrid_install
    # collkit's own SimGrid build (one pinned version), made when first needed
    simgrid = simgrid_install.installed()
    have_sim = simgrid is not None and simgrid_install.programs_ready(simgrid)
    fix = "collkit build --simgrid (or the first simulated campaign builds it)"
    items = [
        {"what": f"SimGrid {simgrid_install.VERSION} (smpirun)", "found": simgrid is not None,
         "where": str(simgrid.smpirun) if simgrid else "", "fix": "" if simgrid else fix},
        {"what": "collkit-bench for SimGrid", "found": have_sim, "where": str(sim.bench_path()) if have_sim else "",
         "fix": "" if have_sim else fix},
    ]
    sbatch = shutil.which("sbatch")
    items.append({"what": "Slurm (sbatch)", "found": bool(sbatch), "where": sbatch or "",
                  "fix": "" if sbatch else "only on a Slurm cluster's login node (module load slurm)"})
    from collkit.backends import devices
    # what each device backend needs (CUDA, NCCL: backends/nccl.py)
    items += [p.to_json() for device in devices.DEVICE_BACKENDS for p in device.prerequisites()]
    items.append({"what": "build cache", "found": True, "where": str(known.cache_root()),
                  "fix": "COLLKIT_CACHE chooses another (on a cluster: a shared filesystem)"})
    return items


def cmd_mpis(ns: argparse.Namespace) -> int:
    rows = [_row(k) for _, k in sorted(known.known().items())]
    extra = _installation()
    if ns.json:
        print(json.dumps({"mpis": rows, "installation": extra}, indent=2))
        return 0
    if rows:
        print(render(["name", "version", "mpicc", "mpirun", "build", "parts", "forcing"],
                     [[r["name"], r["version"], r["mpicc"], r["mpirun"] or "-",
                       r["build"] or f"unusable: {r['problem']}",
                       "all" if r["build"] and not r["missing_parts"]
                       else ("missing " + ", ".join(r["missing_parts"]) if r["build"] else "-"),
                       r["forcing"]] for r in rows]))
    else:
        print(f"no MPI is known here: add one with {known.BUILD_HINT}")
    print()
    print(render(["installation", "found", "where / fix"],
                 [[i["what"], "yes" if i["found"] else "no", i["where"] if i["found"] else i["fix"]]
                  for i in extra]))
    return 0


def cmd_build(ns: argparse.Namespace) -> int:
    if ns.jobs is not None and not 1 <= ns.jobs <= 1024:
        raise UserError(f"--jobs {ns.jobs}: give 1 to 1024")
    if ns.simgrid:
        from collkit.simulation import simgrid_install
        if ns.mpi or ns.mpicc or ns.prefix or ns.mpirun or ns.replace or ns.nccl:
            raise UserError("collkit build --simgrid takes no MPI options: SimGrid brings its own (SMPI)")
        out = simgrid_install.ensure_programs()
        print(f"simgrid {simgrid_install.VERSION}: {simgrid_install.prefix()}")
        print(f"collkit-bench for SimGrid: {out}")
        return 0
    result = builder.build(ns.mpi, ns.mpicc, ns.prefix, ns.mpirun, replace=ns.replace, jobs=ns.jobs, nccl=ns.nccl)
    print(f"{result.name}: {result.prefix}")
    return 0



def add_parsers(sub) -> None:
    from collkit.simulation.simgrid_install import VERSION as SIMGRID_VERSION
    b = sub.add_parser("build", help="build collkit's C parts for another MPI (into the build cache)",
                       description="Compile libcollkit, collkit-bench, the tracer, the correctness matrix and "
                                   "libcollkit-preload with an MPI's compiler wrapper into the build cache "
                                   "(COLLKIT_CACHE, else $XDG_CACHE_HOME/collkit or ~/.cache/collkit) and make "
                                   "the MPI known to every command by NAME. Rebuilt only when the MPI library, "
                                   "the compiler or collkit changes.")
    b.add_argument("--mpi", metavar="NAME",
                   help="the name commands will know it by (default: its family, e.g. openmpi, mpich, "
                        "intel-mpi, cray-mpich, mvapich)")
    b.add_argument("--mpicc", metavar="PATH", help="the MPI's C compiler wrapper")
    b.add_argument("--prefix", metavar="DIR", help="the MPI's install prefix (DIR/bin/mpicc)")
    b.add_argument("--mpirun", metavar="PATH",
                   help="its launcher (default: mpiexec or mpirun beside the wrapper)")
    b.add_argument("--replace", action="store_true",
                   help="let NAME point at this MPI although another is known under it")
    b.add_argument("--jobs", "-j", type=int, metavar="N", help="parallel compile jobs (default: all cores)")
    b.add_argument("--nccl", action="store_true",
                   help="also build collkit-bench-nccl, the nccl backend (CUDA and NCCL needed; docs/gpu.md)")
    b.add_argument("--simgrid", action="store_true",
                   help=f"instead: build SimGrid {SIMGRID_VERSION} (once per machine, into COLLKIT_SIMGRID_CACHE, else "
                        "~/.cache/collkit/simgrid) and collkit-bench for it; simulated campaigns do it when "
                        "first needed")
    b.set_defaults(func=cmd_build)
    m = sub.add_parser("mpis", help="list the MPIs collkit knows here, and what else it found",
                       description="Every known MPI (name, version string, mpicc, mpirun, build, which C parts "
                                   "are built, where algorithm forcing comes from), then SimGrid, Slurm, CUDA "
                                   "and NCCL: found, or how to get them.")
    m.add_argument("--json", action="store_true", help="print JSON")
    m.set_defaults(func=cmd_mpis)
