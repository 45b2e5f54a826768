/* The distance-halving Bine tree that gather and scatter bine_halving share,
 * run upwards (gather) or downwards (scatter); see lib/gather/bine_halving.c.
 *
 * The tree is the Bine broadcast's (lib/bcast/bine.c): on the folded core of
 * p' = 2^s virtual ranks, v sits at position pos = gray(nb(v)); its parent
 * is the rank at pos - 2^j (j = lowbit(pos), s for the root) and its children
 * the ranks at pos + 2^i, i < j, the child at pos + 2^i holding 2^i virtual
 * ranks. The subtree of v is a circular run of 2^j virtual ranks around v:
 * stepping down the Bine partners (+rho from an even rank, -rho from an odd
 * one, rho = 1, -1, 3, -5, ...) reaches m(j) ranks below an even v and
 * 2^j - 1 - m(j) above it, m(j) = sum of 2^i over odd i < j (mirrored for
 * odd v). So every subtree moves as one message of consecutive blocks, in
 * rank order (relative to the root), with no reordering anywhere: the
 * structure of MPICH's binomial gather (ck_binomial_blocks: the biggest
 * subtree sent the farthest), at Bine's shorter distances (the root's
 * biggest child is |rho(s-1)| ~ p/3 away rather than p/2).
 *
 * Non-power-of-two p: ranks relative to the root are folded onto the core
 * (CK_FOLD_KEEP_EVEN, ck_core.h): virtual rank i < e = p - p' stands for the
 * relative ranks 2i and 2i+1, the others for i + e. The map keeps order, so a
 * circular run of virtual ranks is a circular run of relative ranks and of
 * blocks; 2i+1's block makes one extra hop to or from 2i. */
#include "bine.h"
#include "bine_tree.h"
#include "ck_core.h"
#include "collkit/spans.h"

/* Virtual ranks an even subtree root reaches below itself, for 2^j ranks. */
static int below_even(int j)
{
    int m = 0;
    for (int i = 1; i < j; i += 2) m += 1 << i;
    return m;
}

/* First virtual rank of the subtree of v (2^j virtual ranks) on the core of pof2. */
static int run_start(int v, int j, int pof2)
{
    const int below = (v % 2 == 0) ? below_even(j) : (1 << j) - 1 - below_even(j);
    return ((v - below) % pof2 + pof2) % pof2;
}

/* Blocks of the circular virtual run [a, a + len): virtual rank w starts at
 * relative rank (= block, in relative order) ck_fold_first(w). */
static int run_blocks(int a, int len, int pof2, int rem, int size)
{
    if (len == pof2) return size;
    const int d = ck_fold_first((a + len) % pof2, rem) - ck_fold_first(a, rem);
    return d < 0 ? d + size : d;
}

int ck_bine_halving_blocks(int gather, const void *sbuf, void *rbuf, size_t count,
                           MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint extent;
    ck_tmp tmp = {0};
    /* Subtree runs travel as one message of up to about p/2 blocks. */
    CK_TRY(ck_rooted_blocks_open(gather, sbuf, rbuf, count, dt, root, comm, &rank, &size, &extent,
                                 &done));
    if (done) goto out;

    const int tag = gather ? CK_TAG(CK_GATHER) : CK_TAG(CK_SCATTER);
    const ck_fold f = ck_fold_of(rank, root, size, CK_FOLD_KEEP_EVEN);
    if (f.vrank < 0) {
        /* Dropped out of the fold: the block goes to or comes from the partner. */
        if (gather)
            rc = ck_fold_in(&f, sbuf, NULL, NULL, count, dt, MPI_OP_NULL, tag, comm);
        else
            rc = ck_fold_out(&f, NULL, rbuf, count, dt, tag, comm);
        goto out;
    }
    if (size == 1) {
        if (gather && sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
        if (!gather && rbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
        goto out;
    }

    const int v = f.vrank, pof2 = ck_pow2_floor(size), s = ck_log2_ceil(pof2);
    const int rem = ck_fold_rem(size);
    const int pos = ck_bine_tree_position(v, pof2, s);
    const int j = pos == 0 ? s : ck_low_bit(pos);
    const int parent =
        pos == 0 ? -1
                 : ck_fold_rank_of(ck_bine_tree_rank(pos - (1 << j), pof2, s), CK_FOLD_KEEP_EVEN,
                                   root, size);
    const int a = run_start(v, j, pof2);
    const int nsub = run_blocks(a, 1 << j, pof2, rem, size);
    /* This rank's own block(s), as blocks after the start of its run. */
    int own = ck_fold_first(v, rem) - ck_fold_first(a, rem);
    if (own < 0) own += size;

    char *blocks;
    if (v == 0) {
        /* The root works in the user's buffer: relative block q is rank
         * q + root's block, and a child's run may wrap past rank p-1. */
        blocks = gather ? rbuf : (char *)sbuf;
        if (gather && sbuf != MPI_IN_PLACE)
            CK_TRY(ck_copy(sbuf, ck_elem(rbuf, (size_t)root * count, extent), count, dt));
    } else if (nsub == 1) {
        /* A leaf: its own block is the whole subtree. */
        CK_SPAN_BEGIN("tree");
        CK_TRY(ck_leaf_move(gather, sbuf, rbuf, count, dt, parent, tag, comm));
        CK_SPAN_END("tree");
        goto out;
    } else {
        CK_TRY(ck_tmp_alloc(&tmp, (size_t)nsub * count, dt));
        blocks = tmp.buf;
        if (gather)
            CK_TRY(ck_copy(sbuf, ck_elem(tmp.buf, (size_t)own * count, extent), count, dt));
    }
    /* The fold partner's block sits right after this rank's own. */
    char *partner_block =
        v == 0 ? ck_elem(blocks, (size_t)((root + 1) % size) * count, extent)
               : ck_elem(blocks, (size_t)(own + 1) * count, extent);
    if (gather)
        CK_TRY(ck_fold_in(&f, NULL, partner_block, NULL, count, dt, MPI_OP_NULL, tag, comm));

    CK_SPAN_BEGIN("tree");
    if (!gather && v != 0)
        CK_TRY(ck_recv(tmp.buf, (size_t)nsub * count, dt, parent, tag, comm));
    /* A gather takes the smaller subtrees first (they finish first); a
     * scatter serves the biggest first (it starts forwarding earliest). */
    for (int t = 0; t < j; t++) {
        const int i = gather ? t : j - 1 - t;
        const int c = ck_bine_tree_rank(pos + (1 << i), pof2, s);
        const int ca = run_start(c, i, pof2);
        const int nb = run_blocks(ca, 1 << i, pof2, rem, size);
        const int peer = ck_fold_rank_of(c, CK_FOLD_KEEP_EVEN, root, size);
        int first = ck_fold_first(ca, rem);
        if (v == 0)
            first = (first + root) % size;
        else if ((first -= ck_fold_first(a, rem)) < 0)
            first += size;
        CK_TRY(ck_run_move(gather, blocks, first, nb, count, dt, v == 0 ? size : nsub, peer, tag,
                           comm));
    }
    if (gather && v != 0)
        CK_TRY(ck_send(tmp.buf, (size_t)nsub * count, dt, parent, tag, comm));
    CK_SPAN_END("tree");

    if (!gather) {
        CK_TRY(ck_fold_out(&f, partner_block, NULL, count, dt, tag, comm));
        if (v != 0)
            CK_TRY(ck_copy(ck_elem(tmp.buf, (size_t)own * count, extent), rbuf, count, dt));
        else if (rbuf != MPI_IN_PLACE)
            CK_TRY(ck_copy(ck_elem(sbuf, (size_t)root * count, extent), rbuf, count, dt));
    }
out:
    ck_tmp_free(&tmp);
    return rc;
}
