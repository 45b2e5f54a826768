/* Sparbit allgather (Loch & Koslovski, SBAC-PAD 2021): ceil(log2 p) steps of
 * distance halving, d = 2^(L-1), ..., 2, 1 with L = ceil(log2 p). Before the
 * step at distance d a rank holds the m blocks rank - 2td (t < m, mod p); it
 * sends each of them to rank+d and receives blocks rank - (2t+1)d from rank-d,
 * after which it holds rank - td for t < 2m. Blocks never move inside rbuf
 * (the data locality of the paper), so there is no final rotation; the price
 * is one message per block.
 *
 * For p that is not a power of two, doubling every step would overshoot p
 * and deliver duplicates. Ignoring the last of the m transfers at distance d
 * yields 2m-1 blocks, and since the block count after all steps is
 * 2^L - sum(d over ignoring steps), ignoring exactly at the distances d whose
 * bit is set in 2^L - p makes it end at p. Every block offset produced is
 * then one of 0..p-1, so no block is ever received twice. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_allgather_sparbit(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                         MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint ext;
    MPI_Request *req = NULL;
    CK_TRY(ck_allgather_open(sbuf, rbuf, count, dt, comm, &rank, &size, &ext, &done));
    if (done) goto out;

    const int tag = CK_TAG(CK_ALLGATHER);
    const int steps = ck_log2_ceil(size);
    const unsigned long ignore = (1UL << steps) - (unsigned long)size;
    /* the last step moves the most blocks: m = (p + ignored) / 2 <= (p+1)/2 */
    const size_t maxreq = 2 * (size_t)((size + 1) / 2);
    req = malloc(maxreq * sizeof *req);
    if (req == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }

    long held = 1;
    CK_SPAN_BEGIN("allgather");
    for (int k = steps - 1; k >= 0; k--) {
        CK_SPAN_BEGIN_STEP("step", steps - 1 - k);
        const long d = 1L << k;
        const int skip = (ignore & (unsigned long)d) != 0;
        const int to = (int)((rank + d) % size);
        const int from = (int)((rank - d + size) % size);
        int n = 0;
        for (long t = 0; t < held - skip; t++) {
            const long sblk = (((long)rank - 2 * t * d) % size + size) % size;
            const long rblk = (((long)rank - (2 * t + 1) * d) % size + size) % size;
            CK_TRY(ck_irecv(ck_elem(rbuf, (size_t)rblk * count, ext), count, dt, from, tag,
                            comm, &req[n++]));
            CK_TRY(ck_isend(ck_elem(rbuf, (size_t)sblk * count, ext), count, dt, to, tag,
                            comm, &req[n++]));
        }
        CK_TRY(ck_waitall(n, req));
        held = 2 * held - skip;
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
out:
    free(req);
    return rc;
}
