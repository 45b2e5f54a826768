"""A small collective-heavy mpi4py program: the application of the preload's
application benchmark (docs/benchmarks.md, scripts/bench_preload_app.py).

Each step does what the communication of two common codes does, with their
local arithmetic left out (mpi4py and the standard library only, no numpy):
data-parallel training (an allreduce of a 256 KiB float32 gradient, and of one
double, the loss) and a row-distributed conjugate gradient / FFT transpose (an
allgather of a 1,024-double block, an alltoall of 512 doubles a rank), none in
place, as the campaign that tuned the rules measured them
(tests/preload/app_campaign.toml). Every result is checked at the end: exit 1
on a wrong value.

    mpirun -n 4 python app_collectives.py [STEPS]

Rank 0 prints `app_seconds=T`: the slowest rank's time for the steps, after a
barrier, so launch and MPI_Init are not in it.
"""
from __future__ import annotations

import sys
import time
from array import array

from mpi4py import MPI

GRAD = 65536    # float32: 256 KiB
BLOCK = 1024    # doubles a rank contributes to the allgather: 8 KiB
A2A = 512       # doubles a rank sends each other rank: 4 KiB


def main() -> int:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    comm = MPI.COMM_WORLD
    p, r = comm.Get_size(), comm.Get_rank()
    # Small integers in floating point: every sum below is exact.
    base = array("f", [float(r + 1)]) * GRAD
    grad = array("f", [0.0]) * GRAD
    loss_in, loss = array("d", [float(r)]), array("d", [0.0])
    block = array("d", [float(r)]) * BLOCK
    full = array("d", [0.0]) * (BLOCK * p)
    send = array("d", [float(r * p + d) for d in range(p) for _ in range(A2A)])
    recv = array("d", [0.0]) * (A2A * p)
    bad = 0
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        comm.Allreduce([base, MPI.FLOAT], [grad, MPI.FLOAT], op=MPI.SUM)
        comm.Allreduce([loss_in, MPI.DOUBLE], [loss, MPI.DOUBLE], op=MPI.SUM)
        comm.Allgather([block, MPI.DOUBLE], [full, MPI.DOUBLE])
        comm.Alltoall([send, MPI.DOUBLE], [recv, MPI.DOUBLE])
    elapsed = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    want = p * (p + 1) / 2
    bad += sum(1 for i in (0, GRAD // 2, GRAD - 1) if grad[i] != want)
    bad += loss[0] != p * (p - 1) / 2
    bad += sum(1 for s in range(p) if full[s * BLOCK] != s or full[s * BLOCK + BLOCK - 1] != s)
    bad += sum(1 for s in range(p) if recv[s * A2A] != s * p + r or recv[s * A2A + A2A - 1] != s * p + r)
    total = comm.allreduce(int(bad), op=MPI.SUM)
    if r == 0:
        print(f"app_seconds={elapsed:.6f} steps={steps} ranks={p} failures={total}", flush=True)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
