/*
 * The harness's agreements under SimGrid (collkit-bench built with smpicc):
 * through host memory and a SimGrid barrier instead of simulated messages,
 * so that they cost no simulated time and no simulated message, and the
 * host none of the per-message work that made them about 55 % of the host
 * time of a 1,024-rank campaign (issue #21, docs/benchmarks-log.md).
 *
 * Compiled only when mpi.h is SimGrid's (SMPI_H). Each function is
 * collective over `comm`, an intracommunicator, like the message-based
 * agreement it replaces (agree.c): every rank calls it, with the same
 * arguments where they must agree (n, src), and every rank gets the same
 * MPI error code.
 */
#ifndef CK_BENCH_SIM_BOARD_H
#define CK_BENCH_SIM_BOARD_H

#include <mpi.h>
#include <stddef.h>

/* 0 when the boards can run in this simulation; otherwise 1 with one line in
 * why. Every rank reads the same SimGrid configuration, so every rank gets
 * the same answer without a message. */
int sim_board_refused(char *why, size_t len);

/* Element-wise maximum of n doubles, in place on every rank. */
int sim_board_max(double *v, size_t n, MPI_Comm comm);

/* n doubles from rank 0 of comm to every rank, in place. */
int sim_board_bcast(double *v, size_t n, MPI_Comm comm);

/* Rank src's text `mine` to rank 0's out (len bytes, NUL-terminated, cut
 * like snprintf); src < 0: nothing happens. Every rank calls it with the
 * same src, unlike the message version where only src and 0 take part. */
int sim_board_text_to_root(int src, const char *mine, char *out, size_t len, MPI_Comm comm);

#endif
