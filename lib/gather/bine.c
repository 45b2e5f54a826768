/* Bine gather (De Sensi et al., "Bine Trees: Enhancing Collective Operations
 * by Optimizing Communication Locality", SC'25, Sec. 4).
 *
 * The distance-doubling Bine tree run backwards (lib/core/bine_tree.h): a
 * rank reached at step h of the broadcast collects the blocks of its subtree
 * from its children (last step first, i.e. smallest subtree first) and sends
 * them to its parent ck_bine_partner(v, h) in one message. The messages grow
 * as they near the root and the biggest ones travel the shortest distances:
 * the root's last child, holding half of the blocks, is its neighbour.
 *
 * Subtrees are not runs of ranks but they are runs of the numbering sigma(v)
 * = bit_reverse(nu(v)): the subtree of v is [sigma(v), sigma(v) + 2^(s-1-h)).
 * Every rank therefore keeps its subtree's blocks in sigma order, each child
 * fills one contiguous slice, and the root restores rank order with one
 * local copy pass at the end.
 *
 * Non-power-of-two p: ranks relative to the root are folded onto the p' =
 * 2^floor(log2 p) core (bine_tree.h). Each 2i+1, i < e = p - p', sends its
 * block to its neighbour 2i first, so virtual rank i stands for two blocks
 * and the slices of a sigma range have variable length (prefix sums over the
 * range). One extra step of one block between neighbours; ceil(log2 p) steps
 * in all, as for a binomial gather. */
#include "../core/bine.h"
#include "../core/bine_tree.h"
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_gather_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root,
                   MPI_Comm comm)
{
    int rc, rank, size;
    MPI_Aint extent;
    ck_tmp tmp = {0};
    size_t *off = NULL;

    CK_TRY(ck_check_args(comm, dt, count, &rank, &size));
    CK_TRY(ck_check_root(root, size));
    CK_TRY(ck_check_buf(sbuf, count));
    if (rank == root) CK_TRY(ck_check_buf(rbuf, count));
    if (count == 0) return MPI_SUCCESS;
    /* Subtree ranges travel as one message of up to about p/2 blocks and the
     * root stages all p. Every rank computes the same bound, so all of them
     * refuse together. */
    if ((size_t)size * count > CK_MAX_COUNT) return MPI_ERR_COUNT;
    CK_TRY(ck_type_extent(dt, &extent));

    const int tag = CK_TAG(CK_GATHER);
    const int rel = ck_rel_rank(rank, root, size);
    const int v = ck_bine_fold_vrank(rel, size);
    if (v < 0) {
        CK_SPAN_BEGIN("fold");
        rc = ck_send(sbuf, count, dt, ck_abs_rank(rel - 1, root, size), tag, comm);
        CK_SPAN_END("fold");
        return rc;
    }
    if (size == 1) {
        if (sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
        goto out;
    }

    const int pof2 = ck_pow2_floor(size), s = ck_log2_ceil(pof2);
    const int nu = ck_bine_nu(v, pof2, s);
    const int sigma = (int)ck_bit_reverse((uint32_t)nu, s);
    const int h = v != 0 ? ck_bine_high_bit(nu) : -1;
    const int len = 1 << (s - 1 - h);
    const int width = ck_bine_fold_width(v, size);
    const int parent = v != 0 ? ck_bine_fold_real(ck_bine_partner(v, h, pof2), root, size) : -1;

    if (len == 1 && width == 1) {
        CK_SPAN_BEGIN("tree");
        CK_TRY(ck_send(sbuf, count, dt, parent, tag, comm));
        CK_SPAN_END("tree");
        goto out;
    }
    off = ck_bine_sigma_offsets(sigma, len, pof2, s, size);
    if (off == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    CK_TRY(ck_tmp_alloc(&tmp, off[len] * count, dt));
#define SLOT(i) ck_elem(tmp.buf, off[(i)] * count, extent)

    /* Own block(s) first; the root's own block goes straight to rbuf. */
    if (v != 0) CK_TRY(ck_copy(sbuf, SLOT(0), count, dt));
    else if (sbuf != MPI_IN_PLACE)
        CK_TRY(ck_copy(sbuf, ck_elem(rbuf, (size_t)root * count, extent), count, dt));
    if (width == 2) {
        CK_SPAN_BEGIN("fold");
        CK_TRY(ck_recv(ck_elem(SLOT(0), count, extent), count, dt,
                       ck_abs_rank(rel + 1, root, size), tag, comm));
        CK_SPAN_END("fold");
    }
    CK_SPAN_BEGIN("tree");
    for (int k = s - 1; k > h; k--) {
        int c = 1 << (s - 1 - k); /* the child's slice starts c slots in, c long */
        CK_TRY(ck_recv(SLOT(c), (off[2 * c] - off[c]) * count, dt,
                       ck_bine_fold_real(ck_bine_partner(v, k, pof2), root, size), tag, comm));
    }
    if (v != 0) {
        CK_TRY(ck_send(tmp.buf, off[len] * count, dt, parent, tag, comm));
        CK_SPAN_END("tree");
        goto out;
    }
    CK_SPAN_END("tree");

    /* Root: slot i holds virtual rank w's width blocks, relative ranks
     * fold_rel(w) onwards; the root's own block is already in place. */
    CK_SPAN_BEGIN("unpermute");
    for (int i = 0; i < len; i++) {
        int w = ck_bine_nu_rank((int)ck_bit_reverse((uint32_t)i, s), pof2, s);
        int r0 = ck_bine_fold_rel(w, size);
        for (size_t b = 0; b < off[i + 1] - off[i]; b++) {
            if (r0 + (int)b == 0) continue;
            int dst = ck_abs_rank(r0 + (int)b, root, size);
            CK_TRY(ck_copy(ck_elem(SLOT(i), b * count, extent),
                           ck_elem(rbuf, (size_t)dst * count, extent), count, dt));
        }
    }
    CK_SPAN_END("unpermute");
#undef SLOT
out:
    free(off);
    ck_tmp_free(&tmp);
    return rc;
}
