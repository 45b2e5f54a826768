/* Bine reduces (De Sensi et al., "Bine Trees: Enhancing Collective
 * Operations by Optimizing Communication Locality", SC'25).
 *
 * bine: the mirror of the distance-halving Bine broadcast tree
 * (lib/bcast/bine.c): every rank combines its children's partial results,
 * smallest subtree first, and passes the result to its parent. Subtrees are
 * contiguous circular runs of ranks, but a run may wrap past rank p-1 and
 * children sit on both sides of their parent, so the combining order is
 * rank order only up to rotation: the algorithm requires a commutative op.
 *
 * bine_rsag: Rabenseifner's reduce on Bine patterns. The vector is cut into
 * p' blocks and virtual rank v owns block sigma(v) = bit_reverse(nu(v))
 * (lib/core/bine_tree.h). A distance-doubling Bine reduce-scatter halves
 * each rank's aligned sigma range per step (the biggest exchange first, with
 * the nearest neighbour), leaving v with the reduced block sigma(v); the
 * distance-doubling Bine tree, run backwards, then gathers the blocks to the
 * root, each subtree's blocks being one contiguous sigma range. All messages
 * are contiguous runs of the vector in their final place: no reordering.
 * The butterfly combines partners in +-rho order, hence commutative only.
 *
 * Non-power-of-two p (both): ranks relative to the root are folded onto the
 * p' = 2^floor(log2 p) core (bine_tree.h): each 2i+1, i < e = p - p', first
 * sends its whole vector to its neighbour 2i, which combines it and plays
 * virtual rank i. One extra step of n bytes between neighbours; the tree
 * keeps ceil(log2 p) steps as a binomial tree does. */
#include "../core/bine.h"
#include "../core/bine_tree.h"
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_reduce_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                   int root, MPI_Comm comm)
{
    int rc, rank, size, done;
    ck_tmp acc_tmp = {0}, in_tmp = {0};
    ck_fold f;
    CK_TRY(ck_reduce_fold_open(sbuf, rbuf, count, dt, op, root, CK_FOLD_KEEP_EVEN, comm, &rank,
                               &size, &f, &done));
    if (done) goto out;
    const int tag = CK_TAG(CK_REDUCE);
    const int v = f.vrank;

    const int pof2 = ck_pow2_floor(size), s = ck_log2_ceil(pof2);
    const int pos = ck_bine_tree_position(v, pof2, s);
    const int j = pos != 0 ? ck_low_bit(pos) : s;
    const int folds = f.partner >= 0;
    const int parent = pos != 0 ? ck_fold_rank_of(ck_bine_tree_rank(pos - (1 << j), pof2, s),
                                                  CK_FOLD_KEEP_EVEN, root, size)
                                 : -1;

    /* A leaf has nothing to combine: its input goes up as it is. */
    if (j == 0 && !folds) {
        CK_SPAN_BEGIN("tree");
        rc = ck_send(sbuf, count, dt, parent, tag, comm);
        CK_SPAN_END("tree");
        return rc;
    }

    char *acc;
    CK_TRY(ck_tmp_alloc(&in_tmp, count, dt));
    CK_TRY(ck_reduce_fold_acc(sbuf, rbuf, count, dt, op, rank == root, &f, tag, comm, &acc_tmp,
                              &in_tmp, &acc));
    CK_SPAN_BEGIN("tree");
    for (int i = 0; i < j; i++) {
        int child = ck_fold_rank_of(ck_bine_tree_rank(pos + (1 << i), pof2, s), CK_FOLD_KEEP_EVEN,
                                    root, size);
        CK_TRY(ck_recv(in_tmp.buf, count, dt, child, tag, comm));
        CK_TRY(ck_reduce_local(in_tmp.buf, acc, count, dt, op));
    }
    if (parent >= 0) CK_TRY(ck_send(acc, count, dt, parent, tag, comm));
    CK_SPAN_END("tree");
out:
    ck_tmp_free(&acc_tmp);
    ck_tmp_free(&in_tmp);
    return rc;
}

/* Elements of blocks [a, a + len) out of nb blocks. */
static size_t span(size_t count, int nb, int a, int len)
{
    return ck_block_offset(count, nb, a + len) - ck_block_offset(count, nb, a);
}

int ck_reduce_bine_rsag(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                        int root, MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint extent;
    ck_tmp acc_tmp = {0}, in_tmp = {0};
    ck_fold f;
    CK_TRY(ck_reduce_fold_open(sbuf, rbuf, count, dt, op, root, CK_FOLD_KEEP_EVEN, comm, &rank,
                               &size, &f, &done));
    if (done) goto out;
    CK_TRY(ck_type_extent(dt, &extent));
    const int tag = CK_TAG(CK_REDUCE);
    const int v = f.vrank;

    const int pof2 = ck_pow2_floor(size), s = ck_log2_ceil(pof2);
    const int nu = ck_bine_nu(v, pof2, s);
    const int sigma = (int)ck_bit_reverse((uint32_t)nu, s);
    const int folds = f.partner >= 0;
    char *acc;
    /* The first half of the blocks is the largest message received. */
    CK_TRY(ck_tmp_alloc(&in_tmp, folds ? count : span(count, pof2, 0, pof2 / 2), dt));
    CK_TRY(ck_reduce_fold_acc(sbuf, rbuf, count, dt, op, rank == root, &f, tag, comm, &acc_tmp,
                              &in_tmp, &acc));
#define BLOCK(b) ck_elem(acc, ck_block_offset(count, pof2, (b)), extent)

    /* Reduce-scatter: before step k, v is responsible for the aligned sigma
     * range of length 2^(s-k); it keeps the half holding sigma and the
     * partner, whose sigma differs in exactly that bit, takes the other. */
    CK_SPAN_BEGIN("reduce_scatter");
    for (int k = 0; k < s; k++) {
        int half = 1 << (s - 1 - k);
        int keep = sigma & ~(half - 1), give = keep ^ half;
        int partner = ck_bine_fold_peer(v, k, pof2, root, size);
        size_t nkeep = span(count, pof2, keep, half);
        CK_TRY(ck_sendrecv(BLOCK(give), span(count, pof2, give, half), partner, in_tmp.buf, nkeep,
                           partner, dt, tag, comm));
        CK_TRY(ck_reduce_local(in_tmp.buf, BLOCK(keep), nkeep, dt, op));
    }
    CK_SPAN_END("reduce_scatter");

    /* Gather up the distance-doubling tree: the child of v at step k owns
     * [sigma + 2^(s-1-k), sigma + 2^(s-k)); v reached at step h hands its
     * collected range [sigma, sigma + 2^(s-1-h)) to its parent. */
    const int h = v != 0 ? ck_high_bit(nu) : -1;
    CK_SPAN_BEGIN("gather");
    for (int k = s - 1; k > h; k--) {
        int len = 1 << (s - 1 - k), c = sigma + len;
        CK_TRY(ck_recv(BLOCK(c), span(count, pof2, c, len), dt,
                       ck_bine_fold_peer(v, k, pof2, root, size), tag, comm));
    }
    if (v != 0)
        CK_TRY(ck_send(BLOCK(sigma), span(count, pof2, sigma, 1 << (s - 1 - h)), dt,
                       ck_bine_fold_peer(v, h, pof2, root, size), tag, comm));
    CK_SPAN_END("gather");
#undef BLOCK
out:
    ck_tmp_free(&acc_tmp);
    ck_tmp_free(&in_tmp);
    return rc;
}
