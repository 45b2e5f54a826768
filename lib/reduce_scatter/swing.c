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
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, 1, NULL, comm, &rank, &size));
    if (count == 0) return MPI_SUCCESS;
    if (size == 1) return sbuf == MPI_IN_PLACE ? MPI_SUCCESS : ck_copy(sbuf, rbuf, count, dt);

    const int tag = CK_TAG(CK_REDUCE_SCATTER);
    const size_t n = (size_t)size * count;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    CK_TRY(ck_type_extent(dt, &ext));

    const ck_fold f = ck_fold_of(rank, 0, size, CK_FOLD_KEEP_EVEN);
    if (f.vrank < 0) {
        CK_TRY(ck_fold_in(&f, in, NULL, NULL, n, dt, op, tag, comm));
        CK_TRY(ck_fold_out(&f, NULL, rbuf, count, dt, tag, comm));
        return MPI_SUCCESS;
    }

    /* The steps reduce in place over all p blocks, so they work on a copy:
     * out of place rbuf has room for one block and sbuf must stay untouched;
     * in place rbuf holds all p, but only its first block is the result and
     * the rest must come back unchanged, as in Open MPI and MPICH (programs
     * check it; see docs/preload.md). */
    CK_TRY(ck_tmp_alloc(&work, n, dt));
    char *wbuf = work.buf;
    CK_TRY(ck_copy(in, wbuf, n, dt));
    if (f.partner >= 0) {
        CK_TRY(ck_tmp_alloc(&tmp, n, dt));
        CK_TRY(ck_fold_in(&f, NULL, tmp.buf, wbuf, n, dt, op, tag, comm));
        ck_tmp_free(&tmp);
    }

    /* Super-block of virtual rank u: the blocks of the real ranks it plays. */
    off = ck_swing_superblocks(size, count);
    if (off == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    CK_SPAN_BEGIN("reduce_scatter");
    CK_TRY(ck_swing_rs_phase(wbuf, off, dt, op, rank, size, tag, comm));
    CK_SPAN_END("reduce_scatter");

    CK_TRY(ck_fold_out(&f, ck_elem(wbuf, (size_t)(rank + 1) * count, ext), NULL, count, dt, tag,
                       comm));
    CK_TRY(ck_copy(ck_elem(wbuf, (size_t)rank * count, ext), rbuf, count, dt));
out:
    free(off);
    ck_tmp_free(&tmp);
    ck_tmp_free(&work);
    return rc;
}
