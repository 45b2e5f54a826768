/*
 * What separates timed iterations (docs/bench-protocol.md, "sync"): the
 * harness's own dissemination barrier, MPI_Barrier, or ReproMPI-style time
 * windows on clocks corrected by ping-pong offset estimates. None of them uses
 * an MPI collective other than MPI_Barrier itself, which only the
 * `mpi_barrier` method asks for.
 */
#ifndef CK_BENCH_SYNC_H
#define CK_BENCH_SYNC_H

#include <mpi.h>

/* Dissemination barrier on point-to-point (ceil(log2 p) rounds). It also ORs
 * *flag across ranks: the harness uses that to stop calling a failed
 * collective on every rank at once, with no extra message. */
int sync_dissemination(MPI_Comm comm, int rank, int p, int *flag);

/* Offset of this rank's MPI_Wtime against rank 0's (local = rank0 + offset),
 * from the ping-pong exchange with the smallest round trip. 0 on rank 0.
 * *error (when not NULL): half that round trip, the bound on the offset's
 * error; 0 on rank 0. */
int sync_clock_offset(MPI_Comm comm, int rank, int p, double *offset, double *error);

/* Busy-waits until MPI_Wtime() reaches `local_start` (under SimGrid: sleeps
 * in simulated time, where the offsets are 0). Returns 1 when the start had
 * already passed on arrival (the iteration is late), else 0. */
int sync_wait_until(double local_start);

/* The launch's physical floor: half the round trip of a one-element
 * ping-pong between rank 0 and rank p-1 (the farthest in rank order, on
 * another node where there is one), the median of FLOOR_PINGS exchanges
 * after a few warm-ups, in microseconds. No collective can finish before one
 * message travels, so a point whose median is below it was mismeasured.
 * Rank 0's value; 0 at p = 1 (no message to measure). */
#define FLOOR_PINGS 101
int sync_floor_us(MPI_Comm comm, int rank, int p, double *floor_us);

#endif
