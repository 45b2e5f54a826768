/* Distance-doubling Bine tree positions (folding: ck_fold_* in ck_core.h).
 *
 * Why the closed form of nu holds: along the path 0 -> ... -> r the steps
 * k1 < k2 < ... < km alternate between adding (from an even rank) and
 * subtracting (from an odd rank) rho(k) = (1 - (-2)^(k+1)) / 3. For even m
 * the sum telescopes pairwise to r = 2 * N, where N has negabinary bits set
 * exactly on [k1, k2) u [k3, k4) u ...; for odd m it gives r = 1 - 2 * N'
 * with bits on [0, k1) u [k2, k3) u .... In both cases the bit pattern is
 * the running parity of the path bits (complemented for odd m), so nu is its
 * "derivative" X ^ (X << 1). Only residues mod 2^(s-1) matter, and each
 * residue has exactly one (s-1)-bit negabinary form: ck_bine_rank_to_nb. */
#include "bine_tree.h"

#include "bine.h"
#include "ck_core.h"
#include "collkit/spans.h"

#include <stdint.h>
#include <stdlib.h>

int ck_bine_nu(int r, int p, int s)
{
    if (s == 0) return 0;
    const int half = p / 2;
    uint32_t x;
    if (r % 2 == 0) {
        x = s > 1 ? ck_bine_rank_to_nb((r / 2) % half, half, s - 1) : 0;
    } else {
        int m = ((1 - r) / 2) % half;
        if (m < 0) m += half;
        uint32_t np = s > 1 ? ck_bine_rank_to_nb(m, half, s - 1) : 0;
        x = (~np & (uint32_t)(half - 1)) | (1u << (s - 1));
    }
    return (int)((x ^ (x << 1)) & (uint32_t)(p - 1));
}

int ck_bine_nu_rank(int nu, int p, int s)
{
    int r = 0;
    for (int k = 0; k < s; k++)
        if (nu & (1 << k)) r = ck_bine_partner(r, k, p);
    return r;
}

size_t *ck_bine_sigma_offsets(int a, int len, int pof2, int s, int size)
{
    size_t *off = malloc(((size_t)len + 1) * sizeof *off);
    if (off == NULL) return NULL;
    const int rem = ck_fold_rem(size);
    off[0] = 0;
    for (int i = 0; i < len; i++) {
        int w = ck_bine_nu_rank((int)ck_bit_reverse((uint32_t)(a + i), s), pof2, s);
        off[i + 1] = off[i] + (size_t)ck_fold_width(w, rem);
    }
    return off;
}

int ck_bine_fold_peer(int v, int k, int pof2, int root, int size)
{
    return ck_fold_rank_of(ck_bine_partner(v, k, pof2), CK_FOLD_KEEP_EVEN, root, size);
}

void ck_bine_subtree_of(ck_bine_subtree *t, int v, int root, int size)
{
    t->pof2 = ck_pow2_floor(size);
    t->s = ck_log2_ceil(t->pof2);
    t->nu = ck_bine_nu(v, t->pof2, t->s);
    t->sigma = (int)ck_bit_reverse((uint32_t)t->nu, t->s);
    t->h = v != 0 ? ck_high_bit(t->nu) : -1;
    t->len = 1 << (t->s - 1 - t->h);
    t->parent = v != 0 ? ck_bine_fold_peer(v, t->h, t->pof2, root, size) : -1;
}

int ck_bine_tree_permute(int to_slots, const size_t *off, int i0, const ck_bine_subtree *t,
                         void *slots, void *ranked, size_t count, MPI_Datatype dt, int root,
                         int size)
{
    int rc = MPI_SUCCESS;
    MPI_Aint ext;
    CK_TRY(ck_type_extent(dt, &ext));
    const int rem = ck_fold_rem(size);
    for (int i = i0; i < t->len; i++) {
        int w = ck_bine_nu_rank((int)ck_bit_reverse((uint32_t)i, t->s), t->pof2, t->s);
        int r0 = ck_fold_first(w, rem);
        for (size_t b = 0; b < off[i + 1] - off[i]; b++) {
            if (r0 + (int)b == 0) continue; /* the root's own block stays put */
            char *slot = ck_elem(slots, (off[i] + b) * count, ext);
            char *blk = ck_elem(ranked, (size_t)ck_abs_rank(r0 + (int)b, root, size) * count, ext);
            CK_TRY(to_slots ? ck_copy(blk, slot, count, dt) : ck_copy(slot, blk, count, dt));
        }
    }
out:
    return rc;
}

int ck_bine_blocks_open(int gather, const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                        int root, MPI_Comm comm, ck_bine_blocks *b, int *done)
{
    int rc, rank, size = 0;
    b->off = NULL;
    *done = 1;
    /* Subtree ranges travel as one message of up to about p/2 blocks and the
     * root stages all p. */
    CK_TRY(ck_rooted_blocks_open(gather, sbuf, rbuf, count, dt, root, comm, &rank, &size,
                                 &b->extent, done));
    if (*done) goto out;
    *done = 1; /* until the cases served here are out of the way */
    b->size = size;

    b->tag = gather ? CK_TAG(CK_GATHER) : CK_TAG(CK_SCATTER);
    b->f = ck_fold_of(rank, root, size, CK_FOLD_KEEP_EVEN);
    const int v = b->f.vrank;
    if (v < 0) {
        /* Dropped out: the block goes to or comes from the partner. */
        if (gather)
            rc = ck_fold_in(&b->f, sbuf, NULL, NULL, count, dt, MPI_OP_NULL, b->tag, comm);
        else
            rc = ck_fold_out(&b->f, NULL, rbuf, count, dt, b->tag, comm);
        goto out;
    }
    if (size == 1) {
        if (gather && sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
        if (!gather && rbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
        goto out;
    }
    ck_bine_subtree_of(&b->t, v, root, size);
    if (b->t.len == 1 && b->f.partner < 0) {
        /* A leaf moves its own block straight between its buffer and its parent. */
        CK_SPAN_BEGIN("tree");
        CK_TRY(ck_leaf_move(gather, sbuf, rbuf, count, dt, b->t.parent, b->tag, comm));
        CK_SPAN_END("tree");
        goto out;
    }
    b->off = ck_bine_sigma_offsets(b->t.sigma, b->t.len, b->t.pof2, b->t.s, size);
    if (b->off == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    CK_TRY(ck_tmp_alloc(&b->tmp, b->off[b->t.len] * count, dt));
    *done = 0;
out:
    return rc;
}

void ck_bine_blocks_close(ck_bine_blocks *b)
{
    free(b->off);
    b->off = NULL;
    ck_tmp_free(&b->tmp);
}
