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
    int rc, done;
    ck_bine_blocks b = {0};
    CK_TRY(ck_bine_blocks_open(1, sbuf, rbuf, count, dt, root, comm, &b, &done));
    if (done) goto out;

    const int v = b.f.vrank, s = b.t.s;
#define SLOT(i) ck_elem(b.tmp.buf, b.off[(i)] * count, b.extent)

    /* Own block(s) first; the root's own block goes straight to rbuf. */
    if (v != 0) CK_TRY(ck_copy(sbuf, SLOT(0), count, dt));
    else if (sbuf != MPI_IN_PLACE)
        CK_TRY(ck_copy(sbuf, ck_elem(rbuf, (size_t)root * count, b.extent), count, dt));
    CK_TRY(ck_fold_in(&b.f, NULL, ck_elem(SLOT(0), count, b.extent), NULL, count, dt, MPI_OP_NULL,
                      b.tag, comm));
    CK_SPAN_BEGIN("tree");
    for (int k = s - 1; k > b.t.h; k--) {
        int c = 1 << (s - 1 - k); /* the child's slice starts c slots in, c long */
        CK_TRY(ck_recv(SLOT(c), (b.off[2 * c] - b.off[c]) * count, dt,
                       ck_bine_fold_peer(v, k, b.t.pof2, root, b.size), b.tag, comm));
    }
    if (v != 0) {
        CK_TRY(ck_send(b.tmp.buf, b.off[b.t.len] * count, dt, b.t.parent, b.tag, comm));
        CK_SPAN_END("tree");
        goto out;
    }
    CK_SPAN_END("tree");

    /* Root: the slots back in rank order; its own block is already in place. */
    CK_SPAN_BEGIN("unpermute");
    CK_TRY(ck_bine_tree_permute(0, b.off, 0, &b.t, b.tmp.buf, rbuf, count, dt, root, b.size));
    CK_SPAN_END("unpermute");
#undef SLOT
out:
    ck_bine_blocks_close(&b);
    return rc;
}
