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
    int rc, rank, size;
    MPI_Aint extent;
    ck_tmp tmp = {0};
    size_t *off = NULL;

    CK_TRY(ck_check_args(comm, dt, count, &rank, &size));
    CK_TRY(ck_check_root(root, size));
    if (rank == root) CK_TRY(ck_check_buf(sbuf, count));
    CK_TRY(ck_check_buf(rbuf, count));
    if (count == 0) return MPI_SUCCESS;
    /* Subtree ranges travel as one message of up to about p/2 blocks and the
     * root stages all p. Every rank computes the same bound, so all of them
     * refuse together. */
    if ((size_t)size * count > CK_MAX_COUNT) return MPI_ERR_COUNT;
    CK_TRY(ck_type_extent(dt, &extent));

    const int tag = CK_TAG(CK_SCATTER);
    const int rel = ck_rel_rank(rank, root, size);
    const int v = ck_bine_fold_vrank(rel, size);
    if (v < 0) {
        CK_SPAN_BEGIN("unfold");
        rc = ck_recv(rbuf, count, dt, ck_abs_rank(rel - 1, root, size), tag, comm);
        CK_SPAN_END("unfold");
        return rc;
    }
    if (size == 1) {
        if (rbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
        goto out;
    }

    const int pof2 = ck_pow2_floor(size), s = ck_log2_ceil(pof2);
    const int nu = ck_bine_nu(v, pof2, s);
    const int sigma = (int)ck_bit_reverse((uint32_t)nu, s);
    const int h = v != 0 ? ck_bine_high_bit(nu) : -1;
    const int len = 1 << (s - 1 - h);
    const int width = ck_bine_fold_width(v, size);

    if (len == 1 && width == 1) {
        CK_SPAN_BEGIN("tree");
        CK_TRY(ck_recv(rbuf, count, dt, ck_bine_fold_real(ck_bine_partner(v, h, pof2), root, size), tag,
                       comm));
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

    if (v == 0) {
        /* Root: slot i gets virtual rank w's blocks, relative ranks
         * fold_rel(w) onwards; its own block never leaves sbuf. */
        CK_SPAN_BEGIN("permute");
        for (int i = 1; i < len; i++) {
            int w = ck_bine_nu_rank((int)ck_bit_reverse((uint32_t)i, s), pof2, s);
            int r0 = ck_bine_fold_rel(w, size);
            for (size_t b = 0; b < off[i + 1] - off[i]; b++) {
                int src = ck_abs_rank(r0 + (int)b, root, size);
                CK_TRY(ck_copy(ck_elem(sbuf, (size_t)src * count, extent),
                               ck_elem(SLOT(i), b * count, extent), count, dt));
            }
        }
        CK_SPAN_END("permute");
    }
    CK_SPAN_BEGIN("tree");
    if (v != 0)
        CK_TRY(ck_recv(tmp.buf, off[len] * count, dt,
                       ck_bine_fold_real(ck_bine_partner(v, h, pof2), root, size), tag, comm));
    for (int k = h + 1; k < s; k++) {
        int c = 1 << (s - 1 - k); /* the child's slice starts c slots in, c long */
        CK_TRY(ck_send(SLOT(c), (off[2 * c] - off[c]) * count, dt,
                       ck_bine_fold_real(ck_bine_partner(v, k, pof2), root, size), tag, comm));
    }
    CK_SPAN_END("tree");
    if (v != 0) {
        CK_TRY(ck_copy(SLOT(0), rbuf, count, dt));
        if (width == 2) {
            CK_SPAN_BEGIN("unfold");
            CK_TRY(ck_send(ck_elem(SLOT(0), count, extent), count, dt,
                           ck_abs_rank(rel + 1, root, size), tag, comm));
            CK_SPAN_END("unfold");
        }
    } else {
        if (width == 2) {
            CK_SPAN_BEGIN("unfold");
            CK_TRY(ck_send(ck_elem(sbuf, (size_t)ck_abs_rank(1, root, size) * count, extent),
                           count, dt, ck_abs_rank(1, root, size), tag, comm));
            CK_SPAN_END("unfold");
        }
        if (rbuf != MPI_IN_PLACE)
            CK_TRY(ck_copy(ck_elem(sbuf, (size_t)root * count, extent), rbuf, count, dt));
    }
#undef SLOT
out:
    free(off);
    ck_tmp_free(&tmp);
    return rc;
}
