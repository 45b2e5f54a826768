/*
 * Bine trees beyond lib/core/bine.h: the distance-doubling tree and its
 * block slots on a folded non-power-of-two p.
 *
 * Distance-doubling Bine tree (p = 2^s, root 0): at step k = 0..s-1 every
 * rank that already holds the data sends to its butterfly partner
 * ck_bine_partner(r, k, p). nu(r) is the set of steps on the path from the
 * root to r (bit k set when the path takes step k), so r is reached at the
 * step of the highest bit of nu(r) and serves the later steps. Two facts
 * make the tree usable for block collectives:
 *   - the subtree of r is {q : nu(q) = nu(r) mod 2^(h+1)}, h = highest bit
 *     of nu(r); with the block numbering sigma(r) = bit_reverse(nu(r), s) it
 *     is the contiguous range [sigma(r), sigma(r) + 2^(s-1-h));
 *   - the partner of r at butterfly step k has the same low k bits of nu and
 *     bit k flipped, so in a distance-halving allgather (or distance-doubling
 *     reduce-scatter) each rank holds a sigma range that is aligned to its
 *     length and the partner holds the adjacent one.
 * Closed form of nu (sum of alternating +-rho(k) along the path, see
 * bine_tree.c): for even r, let X be the (s-1)-bit negabinary form of r/2
 * mod 2^(s-1); for odd r, X is the complement of the (s-1)-bit form of
 * (1-r)/2 mod 2^(s-1) with bit s-1 set; nu(r) = X ^ (X << 1) on s bits.
 *
 * Folding (non-power-of-two p, ranks relative to the root): the neighbour
 * pairs (2i, 2i+1) act as one virtual rank, 2i playing it (CK_FOLD_KEEP_EVEN,
 * ck_core.h), so neighbouring virtual ranks stay neighbouring real ranks and
 * the root (relative 0) is virtual 0.
 */
#ifndef COLLKIT_BINE_TREE_H
#define COLLKIT_BINE_TREE_H

#include <stddef.h>

#include "ck_core.h"

/* Doubling-tree position nu(r) of rank r of p = 2^s, and back. */
int ck_bine_nu(int r, int p, int s);
int ck_bine_nu_rank(int nu, int p, int s);

/* Offsets, in rank blocks, of the doubling-tree block slots [a, a + len) in
 * sigma order on the folded core of pof2 = 2^s virtual ranks: off[i] for
 * i = 0..len (a virtual rank stands for 1 or 2 rank blocks). Returns a
 * malloc'ed array the caller frees, or NULL when out of memory. */
size_t *ck_bine_sigma_offsets(int a, int len, int pof2, int s, int size);

/* Real rank of the butterfly partner at step k of virtual rank v, on the
 * core of pof2 ranks folded relative to root (CK_FOLD_KEEP_EVEN). */
int ck_bine_fold_peer(int v, int k, int pof2, int root, int size);

/* bine_latency's butterfly on a folded core of `members`
 * (lib/core/bine_latency.c), then, when agree is set, the broadcast of
 * virtual rank 0's result that makes every member return the same bits
 * (bine_latency_agreed). v is this member's virtual rank, map(ctx, member)
 * its communicator rank (NULL: the member index is the rank), tmp holds count
 * elements. The caller folds in before and out after. */
int ck_bine_latency_core(void *rbuf, void *tmp, size_t count, MPI_Datatype dt, MPI_Op op, int v,
                         int members, int (*map)(const void *, int), const void *ctx, int agree,
                         int tag, MPI_Comm comm);

/* Virtual rank v's place in the distance-doubling tree of a rooted block
 * collective (gather, scatter) on the folded core: v is reached at step h
 * (-1 for the root, v = 0) from parent (a real rank, -1 for the root) and its
 * subtree holds the slots [sigma, sigma + len). */
typedef struct {
    int pof2, s, nu, sigma, h, len, parent;
} ck_bine_subtree;
void ck_bine_subtree_of(ck_bine_subtree *t, int v, int root, int size);

/* The root's reordering between its subtree buffer in slot order (slot i at
 * block off[i], from ck_bine_sigma_offsets) and a buffer of p blocks in rank
 * order, for slots i0 .. len-1 and every block but the root's own: to_slots
 * copies ranked -> slots (scatter), else slots -> ranked (gather). */
int ck_bine_tree_permute(int to_slots, const size_t *off, int i0, const ck_bine_subtree *t,
                         void *slots, void *ranked, size_t count, MPI_Datatype dt, int root,
                         int size);

/* The shared opening of the Bine gather and scatter (gather != 0, else
 * scatter): the checks, the fold's dropped ranks served (their one block to or
 * from the partner), p 1, and the leaves served (their block straight to or
 * from the parent): *done then. Otherwise b describes this rank's subtree,
 * with tmp room for its blocks in slot order (slot i at block off[i]).
 * Zero-initialise b; close it in any case. */
typedef struct {
    ck_fold f;
    ck_bine_subtree t;
    size_t *off;
    ck_tmp tmp;
    MPI_Aint extent;
    int tag, size;
} ck_bine_blocks;
int ck_bine_blocks_open(int gather, const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                        int root, MPI_Comm comm, ck_bine_blocks *b, int *done);
void ck_bine_blocks_close(ck_bine_blocks *b);

/* The distance-halving Bine gather (gather != 0) or scatter, whole: checks
 * included (lib/core/bine_halving_blocks.c). */
int ck_bine_halving_blocks(int gather, const void *sbuf, void *rbuf, size_t count,
                           MPI_Datatype dt, int root, MPI_Comm comm);

#endif
