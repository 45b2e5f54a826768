/* Ring allgather: p-1 steps; at step i every rank forwards to its right
 * neighbour the block it received at step i-1 (its own block at step 0) and
 * receives the next block from its left neighbour. Bandwidth-optimal, every
 * rank sends (p-1)/p of the vector, but latency grows linearly in p. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_allgather_ring(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                      MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint ext;
    CK_TRY(ck_allgather_open(sbuf, rbuf, count, dt, comm, &rank, &size, &ext, &done));
    if (done) goto out;

    const int tag = CK_TAG(CK_ALLGATHER);
    const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    CK_SPAN_BEGIN("allgather");
    for (int i = 0; i < size - 1; i++) {
        CK_SPAN_BEGIN_STEP("step", i);
        /* After i steps this rank holds blocks rank, rank-1, ..., rank-i. */
        int sblk = (rank - i + size) % size;
        int rblk = (rank - i - 1 + size) % size;
        CK_TRY(ck_sendrecv(ck_elem(rbuf, (size_t)sblk * count, ext), count, right,
                           ck_elem(rbuf, (size_t)rblk * count, ext), count, left,
                           dt, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
out:
    return rc;
}
