/* The binomial tree that gather and scatter share, run upwards (gather) or
 * downwards (scatter); see lib/gather/binomial.c and lib/scatter/binomial.c.
 *
 * Over ranks relative to the root, relative rank vr owns the subtree
 * [vr, vr + nsub), nsub = min(low, p - vr), low = lowbit(vr) (for the root:
 * the power of two at or above p). Its children are vr + mask for the powers
 * of two mask < low with vr + mask < p, and each child's subtree is one run of
 * min(mask, p - vr - mask) blocks, moved as one message: at the root straight
 * from/to the user buffer (ck_run_move stages the one run that wraps past
 * rank p-1), elsewhere from/to a temporary buffer in relative order. */
#include "ck_core.h"

#include "collkit/spans.h"

int ck_binomial_blocks(int gather, const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                       int root, MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint extent;
    ck_tmp tmp = {0};
    /* Subtree runs travel as one message of up to about p/2 blocks. */
    CK_TRY(ck_rooted_blocks_open(gather, sbuf, rbuf, count, dt, root, comm, &rank, &size, &extent,
                                 &done));
    if (done) goto out;

    const int tag = gather ? CK_TAG(CK_GATHER) : CK_TAG(CK_SCATTER);
    const int vr = ck_rel_rank(rank, root, size);
    const int low = vr == 0 ? 1 << ck_log2_ceil(size) : 1 << ck_low_bit(vr);
    const int parent = ck_abs_rank(vr - low, root, size);
    const int nsub = low < size - vr ? low : size - vr;
    char *blocks;

    CK_SPAN_BEGIN("tree");
    if (vr == 0) {
        blocks = gather ? rbuf : (char *)sbuf;
        if (gather && sbuf != MPI_IN_PLACE)
            CK_TRY(ck_copy(sbuf, ck_elem(rbuf, (size_t)root * count, extent), count, dt));
    } else if (nsub == 1) {
        /* A leaf: its own block is the whole subtree. */
        CK_TRY(ck_leaf_move(gather, sbuf, rbuf, count, dt, parent, tag, comm));
        CK_SPAN_END("tree");
        goto out;
    } else {
        CK_TRY(ck_tmp_alloc(&tmp, (size_t)nsub * count, dt));
        blocks = tmp.buf;
        if (gather)
            CK_TRY(ck_copy(sbuf, tmp.buf, count, dt));
        else
            CK_TRY(ck_recv(tmp.buf, (size_t)nsub * count, dt, parent, tag, comm));
    }
    /* A gather takes the smaller subtrees first (they finish first); a
     * scatter serves the biggest first (it starts forwarding earliest). */
    for (int j = 0; (1 << j) < low; j++) {
        const int mask = gather ? 1 << j : low >> (j + 1);
        if (vr + mask >= size) continue;
        const int nb = mask < size - vr - mask ? mask : size - vr - mask;
        const int child = ck_abs_rank(vr + mask, root, size);
        CK_TRY(ck_run_move(gather, blocks, vr == 0 ? child : mask, nb, count, dt,
                           vr == 0 ? size : nsub, child, tag, comm));
    }
    if (vr != 0 && gather)
        CK_TRY(ck_send(tmp.buf, (size_t)nsub * count, dt, parent, tag, comm));
    else if (vr != 0)
        CK_TRY(ck_copy(tmp.buf, rbuf, count, dt));
    else if (!gather && rbuf != MPI_IN_PLACE)
        CK_TRY(ck_copy(ck_elem(sbuf, (size_t)root * count, extent), rbuf, count, dt));
    CK_SPAN_END("tree");
out:
    ck_tmp_free(&tmp);
    return rc;
}
