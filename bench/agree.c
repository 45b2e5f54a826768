/* Agreement across ranks on libcollkit algorithms and point-to-point. */
#include "agree.h"

#include "tags.h"

#include <collkit/collkit.h>
#include <stdio.h>
#include <string.h>

int agree_max(double *v, size_t n, MPI_Comm comm)
{
    /* Recursive doubling: latency-bound messages, and MAX is exact, so every
     * rank ends with bit-identical values and takes identical decisions. */
    return ck_allreduce_recursive_doubling(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, comm);
}

double agree_mark(int have, int rank, int p) { return have ? (double)(p - rank) : 0.0; }

int agree_marked_rank(double max_mark, int p) { return max_mark > 0.0 ? p - (int)max_mark : -1; }

int agree_text_to_root(int src, const char *mine, char *out, int rank, MPI_Comm comm)
{
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
}

int agree_bcast(double *v, size_t n, MPI_Comm comm)
{
    return ck_bcast_binomial_halving(v, n, MPI_DOUBLE, 0, comm);
}
