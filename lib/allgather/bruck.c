/* Bruck allgather (Bruck et al. 1997): ceil(log2 p) steps for any p. Blocks
 * are gathered in a buffer rotated so that this rank's block comes first; at
 * step k (distance 2^k) a rank sends its first min(2^k, p-2^k) blocks to
 * rank-2^k and appends the same number received from rank+2^k. Every rank
 * then holds blocks rank, rank+1, ..., rank+p-1 (mod p), and one local
 * rotation puts them in place. Costs a p-block temporary and the final copy,
 * in exchange for logarithmic latency without power-of-two restrictions. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_allgather_bruck(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                       MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint ext;
    ck_tmp tmp = {0};
    CK_TRY(ck_allgather_open(sbuf, rbuf, count, dt, comm, &rank, &size, &ext, &done));
    if (done) goto out;
    char *own = ck_elem(rbuf, (size_t)rank * count, ext);

    const int tag = CK_TAG(CK_ALLGATHER);
    CK_TRY(ck_tmp_alloc(&tmp, (size_t)size * count, dt));
    CK_TRY(ck_copy(own, tmp.buf, count, dt));

    const int steps = ck_log2_ceil(size);
    CK_SPAN_BEGIN("allgather");
    for (int k = 0; k < steps; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        const int dist = 1 << k;
        const size_t nblk = (size_t)(dist < size - dist ? dist : size - dist);
        CK_TRY(ck_sendrecv(tmp.buf, nblk * count, (rank - dist + size) % size,
                           ck_elem(tmp.buf, (size_t)dist * count, ext), nblk * count,
                           (rank + dist) % size, dt, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");

    /* tmp block i is block (rank+i) mod p; block 0 is already in place */
    CK_SPAN_BEGIN("unrotate");
    const size_t upper = (size_t)(size - rank);
    CK_TRY(ck_copy(ck_elem(tmp.buf, count, ext), ck_elem(own, count, ext),
                   (upper - 1) * count, dt));
    CK_TRY(ck_copy(ck_elem(tmp.buf, upper * count, ext), rbuf, (size_t)rank * count, dt));
    CK_SPAN_END("unrotate");
out:
    ck_tmp_free(&tmp);
    return rc;
}
