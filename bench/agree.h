/*
 * How the ranks agree on anything (iteration times, errors, a reason text):
 * libcollkit's algorithms and point-to-point only, never the MPI library's
 * collectives, which the CLI may have forced to an algorithm under test.
 * Under SimGrid, host memory and a SimGrid barrier instead (sim_board.h):
 * no simulated time, no simulated message.
 */
#ifndef CK_BENCH_AGREE_H
#define CK_BENCH_AGREE_H

#include <mpi.h>
#include <stddef.h>

/* Length of every reason text, terminator included. */
#define BENCH_TEXT_LEN 512

/* Element-wise maximum across ranks, in place on every rank. */
int agree_max(double *v, size_t n, MPI_Comm comm);

/* Encodes "this rank has something to report" so that the maximum across
 * ranks names the lowest such rank: agree_mark(1, rank, p) = p - rank, and
 * agree_marked_rank(max, p) turns it back (-1 when nobody reported). */
double agree_mark(int have, int rank, int p);
int agree_marked_rank(double max_mark, int p);

/* Rank `src` sends its text `mine` to rank 0, which stores it in out
 * (BENCH_TEXT_LEN bytes). Every rank calls it with the same src: with
 * messages the other ranks do nothing, under SimGrid they all take part. */
int agree_text_to_root(int src, const char *mine, char *out, int rank, MPI_Comm comm);

/* Broadcast from rank 0 (used for the window schedule). */
int agree_bcast(double *v, size_t n, MPI_Comm comm);

#endif
