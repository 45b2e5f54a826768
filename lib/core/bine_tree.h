/*
 * Bine trees beyond lib/core/bine.h: the distance-doubling tree and the
 * folding of a non-power-of-two p onto a power-of-two core.
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
 * Folding (non-power-of-two p, ranks relative to the root): p' = 2^floor(log2
 * p), e = p - p'. The pairs of neighbours (2i, 2i+1), i < e, act as one
 * virtual rank i of the core (2i takes part, 2i+1 only talks to 2i); relative
 * rank q >= 2e is virtual rank q - e. Virtual ranks keep the relative order,
 * so neighbouring virtual ranks stay neighbouring real ranks, and the root
 * (relative 0) is virtual 0.
 */
#ifndef COLLKIT_BINE_TREE_H
#define COLLKIT_BINE_TREE_H

#include <stddef.h>

/* Doubling-tree position nu(r) of rank r of p = 2^s, and back. */
int ck_bine_nu(int r, int p, int s);
int ck_bine_nu_rank(int nu, int p, int s);

/* Index of the highest set bit of x > 0. */
int ck_bine_high_bit(int x);

/* Folding of size ranks onto the core of ck_pow2_floor(size) virtual ranks:
 * virtual rank of relative rank rel (-1 when rel is folded into rel - 1),
 * relative rank that plays virtual rank v, and how many relative ranks (1 or
 * 2, the consecutive rel_of(v) and rel_of(v) + 1) virtual rank v stands for. */
int ck_bine_fold_vrank(int rel, int size);
int ck_bine_fold_rel(int v, int size);
int ck_bine_fold_width(int v, int size);

/* Real rank that plays virtual rank v of a communicator of size ranks, when
 * ranks are taken relative to root. */
int ck_bine_fold_real(int v, int root, int size);

/* Offsets, in rank blocks, of the doubling-tree block slots [a, a + len) in
 * sigma order on the folded core of pof2 = 2^s virtual ranks: off[i] for
 * i = 0..len (a virtual rank stands for 1 or 2 rank blocks). Returns a
 * malloc'ed array the caller frees, or NULL when out of memory. */
size_t *ck_bine_sigma_offsets(int a, int len, int pof2, int s, int size);

#endif
