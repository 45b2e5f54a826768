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
    int rc, rank, size;
    size_t *off = NULL;
    MPI_Aint ext;
    CK_TRY(ck_check_args(comm, dt, count, &rank, &size));
    CK_TRY(ck_check_buf(sbuf, count));
    CK_TRY(ck_check_buf(rbuf, count));
    if (count == 0) return MPI_SUCCESS;
    CK_TRY(ck_type_extent(dt, &ext));
    if (sbuf != MPI_IN_PLACE)
        CK_TRY(ck_copy(sbuf, ck_elem(rbuf, (size_t)rank * count, ext), count, dt));
    if (size == 1) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_ALLGATHER), p2 = ck_pow2_floor(size);
    const size_t n = (size_t)size * count;
    const int v = ck_swing_vrank(rank, size);
    if (v < 0) {
        CK_SPAN_BEGIN("fold");
        CK_TRY(ck_send(ck_elem(rbuf, (size_t)rank * count, ext), count, dt, rank - 1, tag, comm));
        CK_SPAN_END("fold");
        CK_SPAN_BEGIN("unfold");
        CK_TRY(ck_recv(rbuf, n, dt, rank - 1, tag, comm));
        CK_SPAN_END("unfold");
        return MPI_SUCCESS;
    }
    if (ck_swing_width(v, size) == 2) {
        CK_SPAN_BEGIN("fold");
        CK_TRY(ck_recv(ck_elem(rbuf, (size_t)(rank + 1) * count, ext), count, dt, rank + 1, tag,
                       comm));
        CK_SPAN_END("fold");
    }

    off = malloc(((size_t)p2 + 1) * sizeof *off);
    if (off == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    for (int u = 0; u < p2; u++) off[u] = (size_t)ck_swing_real(u, size) * count;
    off[p2] = n;
    CK_SPAN_BEGIN("allgather");
    CK_TRY(ck_swing_ag_phase(rbuf, off, dt, rank, size, tag, comm, 0));
    CK_SPAN_END("allgather");

    if (ck_swing_width(v, size) == 2) {
        CK_SPAN_BEGIN("unfold");
        CK_TRY(ck_send(rbuf, n, dt, rank + 1, tag, comm));
        CK_SPAN_END("unfold");
    }
out:
    free(off);
    return rc;
}
