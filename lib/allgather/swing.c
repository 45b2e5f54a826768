/* Swing allgather (De Sensi et al., NSDI'24): the second half of the Swing
 * bandwidth-optimal allreduce. Steps k = s-1..0 swap everything gathered so
 * far with the partner at distance |rho(k)| = ..., 11, 5, 3, 1, 1, doubling
 * the data each step (the biggest messages to the nearest partners); the
 * blocks held are those reached from this rank in steps k+1..s-1, not
 * contiguous in rank order, so they travel packed (see lib/core/swing.h).
 * log2 p' steps, n(p'-1)/p' bytes sent per rank (n = p * count elements).
 * Non-power-of-two p: the neighbouring pairs (2i, 2i+1), i < p - p', fold:
 * 2i+1 sends its block to 2i, which plays one virtual rank owning the adjacent
 * blocks 2i and 2i+1 and sends the whole result back at the end (two more
 * steps, count + n more bytes for those pairs). */
#include "../core/ck_core.h"
#include "../core/swing.h"
#include "collkit/spans.h"

int ck_allgather_swing(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                       MPI_Comm comm)
{
    int rc, rank, size, done;
    size_t *off = NULL;
    MPI_Aint ext;
    CK_TRY(ck_allgather_open(sbuf, rbuf, count, dt, comm, &rank, &size, &ext, &done));
    if (done) goto out;

    const int tag = CK_TAG(CK_ALLGATHER);
    const size_t n = (size_t)size * count;
    const ck_fold f = ck_fold_of(rank, 0, size, CK_FOLD_KEEP_EVEN);
    /* Each half of a pair sends or receives its block in place. */
    CK_TRY(ck_fold_in(&f, ck_elem(rbuf, (size_t)rank * count, ext),
                      ck_elem(rbuf, (size_t)(rank + 1) * count, ext), NULL, count, dt,
                      MPI_OP_NULL, tag, comm));
    if (f.vrank < 0) return ck_fold_out(&f, NULL, rbuf, n, dt, tag, comm);

    off = ck_swing_superblocks(size, count);
    if (off == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    CK_SPAN_BEGIN("allgather");
    CK_TRY(ck_swing_ag_phase(rbuf, off, dt, rank, size, tag, comm, 0));
    CK_SPAN_END("allgather");

    CK_TRY(ck_fold_out(&f, rbuf, NULL, n, dt, tag, comm));
out:
    free(off);
    return rc;
}
