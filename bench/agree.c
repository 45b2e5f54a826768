/* Agreement across ranks on libcollkit algorithms and point-to-point, or,
 * under SimGrid, through host memory (sim_board.c). */
#include "agree.h"

#include "tags.h"

#ifdef SMPI_H
/* Under SimGrid every agreement goes through a board: the harness's own
 * control traffic is then neither simulated time nor simulated messages,
 * and the host is spared its per-message work (about 55 % of the host time
 * of a 1,024-rank campaign, issue #21). All four functions go there, not
 * only agree_max: each is called by every rank of the control communicator
 * together, and no measured interval depends on when their data arrives
 * (agree_bcast carries the window schedule, an absolute start time, and
 * windows do not run under SimGrid anyway; agree_text_to_root runs only
 * when a point or the launch failed). Only the barrier before each timed
 * call (sync.c) and the floor and clock-offset measurements stay messages:
 * they are part of what is measured. The one cost: messages left the ranks
 * a few ns apart when they entered that barrier, the board releases them at
 * the same instant, so simulated times differ by a few ns from the message
 * build's. */
#include "sim_board.h"
#endif

#include <collkit/collkit.h>
#include <stdio.h>
#include <string.h>

int agree_max(double *v, size_t n, MPI_Comm comm)
{
#ifdef SMPI_H
    return sim_board_max(v, n, comm);
#else
    /* Recursive doubling: latency-bound messages, and MAX is exact, so every
     * rank ends with bit-identical values and takes identical decisions. */
    return ck_allreduce_recursive_doubling(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, comm);
#endif
}

double agree_mark(int have, int rank, int p) { return have ? (double)(p - rank) : 0.0; }

int agree_marked_rank(double max_mark, int p) { return max_mark > 0.0 ? p - (int)max_mark : -1; }

int agree_text_to_root(int src, const char *mine, char *out, int rank, MPI_Comm comm)
{
#ifdef SMPI_H
    (void)rank;
    return sim_board_text_to_root(src, mine, out, BENCH_TEXT_LEN, comm);
#else
    if (src < 0) return MPI_SUCCESS;
    if (src == 0) {
        if (rank == 0) snprintf(out, BENCH_TEXT_LEN, "%s", mine);
        return MPI_SUCCESS;
    }
    if (rank == src) {
        char block[BENCH_TEXT_LEN];
        memset(block, 0, sizeof block);
        snprintf(block, sizeof block, "%s", mine);
        return MPI_Send(block, BENCH_TEXT_LEN, MPI_CHAR, 0, BENCH_TAG_TEXT, comm);
    }
    if (rank == 0) {
        int rc = MPI_Recv(out, BENCH_TEXT_LEN, MPI_CHAR, src, BENCH_TAG_TEXT, comm, MPI_STATUS_IGNORE);
        out[BENCH_TEXT_LEN - 1] = '\0';
        return rc;
    }
    return MPI_SUCCESS;
#endif
}

int agree_bcast(double *v, size_t n, MPI_Comm comm)
{
#ifdef SMPI_H
    return sim_board_bcast(v, n, comm);
#else
    return ck_bcast_binomial_halving(v, n, MPI_DOUBLE, 0, comm);
#endif
}
