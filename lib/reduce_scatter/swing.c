/* Swing reduce-scatter (De Sensi et al., NSDI'24), MPI_Reduce_scatter_block
 * semantics: the first half of the Swing bandwidth-optimal allreduce. Step k
 * = 0..s-1 swaps with the partner at distance |rho(k)| = 1, 1, 3, 5, 11, ...
 * half of the blocks still being reduced (the biggest messages to the nearest
 * partners); the blocks a step sends are those its partner reaches in the
 * remaining steps, not contiguous in rank order, so they travel packed (see
 * lib/core/swing.h). log2 p' steps, about n(p'-1)/p' bytes sent per rank
 * (n = p * count elements). Block r ends at rank r, no final permutation.
 * Non-power-of-two p: the neighbouring pairs (2i, 2i+1), i < p - p', fold:
 * 2i+1 sends its whole input to 2i, which plays one virtual rank owning the
 * adjacent blocks 2i and 2i+1 and returns block 2i+1 at the end (two more
 * steps, n + count more bytes for those pairs). Commutative ops only. */
#include "../core/ck_core.h"
#include "../core/swing.h"
#include "collkit/spans.h"

int ck_reduce_scatter_swing(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                            MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size;
    ck_tmp work = {0}, tmp = {0};
    size_t *off = NULL;
    MPI_Aint ext;
    CK_TRY(ck_check_args(comm, dt, count, &rank, &size));
    CK_TRY(ck_check_op(op, 1, NULL));
    CK_TRY(ck_check_buf(sbuf, count));
    CK_TRY(ck_check_buf(rbuf, count));
    if (count == 0) return MPI_SUCCESS;
    if (size == 1) return sbuf == MPI_IN_PLACE ? MPI_SUCCESS : ck_copy(sbuf, rbuf, count, dt);

    const int tag = CK_TAG(CK_REDUCE_SCATTER), p2 = ck_pow2_floor(size);
    const size_t n = (size_t)size * count;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    CK_TRY(ck_type_extent(dt, &ext));

    const int v = ck_swing_vrank(rank, size);
    if (v < 0) {
        CK_SPAN_BEGIN("fold");
        CK_TRY(ck_send(in, n, dt, rank - 1, tag, comm));
        CK_SPAN_END("fold");
        CK_SPAN_BEGIN("unfold");
        CK_TRY(ck_recv(rbuf, count, dt, rank - 1, tag, comm));
        CK_SPAN_END("unfold");
        return MPI_SUCCESS;
    }

    /* In place, rbuf holds all p blocks and serves as the work area; out of
     * place it only has room for one, and sbuf must stay untouched. */
    char *wbuf = rbuf;
    if (sbuf != MPI_IN_PLACE) {
        CK_TRY(ck_tmp_alloc(&work, n, dt));
        wbuf = work.buf;
        CK_TRY(ck_copy(sbuf, wbuf, n, dt));
    }
    if (ck_swing_width(v, size) == 2) {
        CK_TRY(ck_tmp_alloc(&tmp, n, dt));
        CK_SPAN_BEGIN("fold");
        CK_TRY(ck_recv(tmp.buf, n, dt, rank + 1, tag, comm));
        CK_TRY(ck_reduce_local(tmp.buf, wbuf, n, dt, op));
        CK_SPAN_END("fold");
        ck_tmp_free(&tmp);
    }

    /* Super-block of virtual rank u: the blocks of the real ranks it plays. */
    off = malloc(((size_t)p2 + 1) * sizeof *off);
    if (off == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    for (int u = 0; u < p2; u++) off[u] = (size_t)ck_swing_real(u, size) * count;
    off[p2] = n;
    CK_SPAN_BEGIN("reduce_scatter");
    CK_TRY(ck_swing_rs_phase(wbuf, off, dt, op, rank, size, tag, comm));
    CK_SPAN_END("reduce_scatter");

    if (ck_swing_width(v, size) == 2) {
        CK_SPAN_BEGIN("unfold");
        CK_TRY(ck_send(ck_elem(wbuf, (size_t)(rank + 1) * count, ext), count, dt, rank + 1, tag,
                       comm));
        CK_SPAN_END("unfold");
    }
    /* Block rank sits at rank*count >= count unless rank is 0: no overlap. */
    CK_TRY(ck_copy(ck_elem(wbuf, (size_t)rank * count, ext), rbuf, count, dt));
out:
    free(off);
    ck_tmp_free(&tmp);
    ck_tmp_free(&work);
    return rc;
}
