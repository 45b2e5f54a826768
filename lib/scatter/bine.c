/* Bine scatter (De Sensi et al., "Bine Trees: Enhancing Collective
 * Operations by Optimizing Communication Locality", SC'25, Sec. 4): the
 * mirror image of the Bine gather (lib/gather/bine.c).
 *
 * The distance-doubling Bine tree (lib/core/bine_tree.h): at step k every
 * rank holding data sends to ck_bine_partner(v, k) the blocks of that
 * partner's subtree. The root first hands half of the blocks to its
 * neighbour, and messages shrink as they travel farther.
 *
 * Subtrees are runs of the numbering sigma(v) = bit_reverse(nu(v)): the
 * subtree of v reached at step h is [sigma(v), sigma(v) + 2^(s-1-h)). The
 * root first packs sbuf into sigma order (one local copy pass); every other
 * rank then forwards contiguous slices of what it received.
 *
 * Non-power-of-two p: ranks relative to the root are folded onto the p' =
 * 2^floor(log2 p) core (bine_tree.h): virtual rank i < e = p - p' carries the
 * blocks of relative ranks 2i and 2i+1 and finally passes the second one to
 * its neighbour 2i+1. One extra step of one block between neighbours;
 * ceil(log2 p) steps in all, as for a binomial scatter. */
#include "../core/bine.h"
#include "../core/bine_tree.h"
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_scatter_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root,
                    MPI_Comm comm)
{
    int rc, done;
    ck_bine_blocks b = {0};
    CK_TRY(ck_bine_blocks_open(0, sbuf, rbuf, count, dt, root, comm, &b, &done));
    if (done) goto out;

    const int v = b.f.vrank, s = b.t.s;
#define SLOT(i) ck_elem(b.tmp.buf, b.off[(i)] * count, b.extent)

    if (v == 0) {
        /* Root: the other slots from rank order; its own block never leaves sbuf. */
        CK_SPAN_BEGIN("permute");
        CK_TRY(ck_bine_tree_permute(1, b.off, 1, &b.t, b.tmp.buf, (void *)sbuf, count, dt, root,
                                    b.size));
        CK_SPAN_END("permute");
    }
    CK_SPAN_BEGIN("tree");
    if (v != 0) CK_TRY(ck_recv(b.tmp.buf, b.off[b.t.len] * count, dt, b.t.parent, b.tag, comm));
    for (int k = b.t.h + 1; k < s; k++) {
        int c = 1 << (s - 1 - k); /* the child's slice starts c slots in, c long */
        CK_TRY(ck_send(SLOT(c), (b.off[2 * c] - b.off[c]) * count, dt,
                       ck_bine_fold_peer(v, k, b.t.pof2, root, b.size), b.tag, comm));
    }
    CK_SPAN_END("tree");
    if (v != 0) {
        CK_TRY(ck_copy(SLOT(0), rbuf, count, dt));
        CK_TRY(ck_fold_out(&b.f, ck_elem(SLOT(0), count, b.extent), NULL, count, dt, b.tag, comm));
    } else {
        /* The root's partner (relative 1) gets its block straight from sbuf. */
        if (b.f.partner >= 0)
            CK_TRY(ck_fold_out(&b.f, ck_elem(sbuf, (size_t)b.f.partner * count, b.extent), NULL,
                               count, dt, b.tag, comm));
        if (rbuf != MPI_IN_PLACE)
            CK_TRY(ck_copy(ck_elem(sbuf, (size_t)root * count, b.extent), rbuf, count, dt));
    }
#undef SLOT
out:
    ck_bine_blocks_close(&b);
    return rc;
}
