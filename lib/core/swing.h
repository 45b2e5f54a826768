/*
 * Swing butterflies (De Sensi et al., "Swing: Short-cutting Rings for Higher
 * Bandwidth Allreduce", NSDI'24), shared by allreduce/swing.c,
 * reduce_scatter/swing.c and allgather/swing.c.
 *
 * On p2 = 2^s ranks, at step k rank v talks to ck_bine_partner(v, k, p2):
 * v + rho(k) for even v, v - rho(k) for odd v, |rho(k)| = 1, 1, 3, 5, 11, ...
 * reach(v, k) is the set of ranks v reaches through steps k..s-1:
 *   reach(v, s) = {v},  reach(v, k) = reach(v, k+1) U reach(partner(v, k), k+1),
 * and for p2 = 2^s the two halves are disjoint at every k (checked
 * exhaustively in tests/test_swing.c), so reach(v, 0) is every rank. Hence:
 *   - reduce-scatter, steps k = 0..s-1: v keeps the blocks of reach(v, k+1)
 *     and sends its partial sums of the blocks of reach(partner, k+1); after
 *     step s-1 it holds block v fully reduced. The largest messages go to the
 *     nearest partners (distance 1, then 1, 3, 5, ...).
 *   - allgather, steps k = s-1..0: the mirror image; v holds reach(v, k+1)
 *     and swaps it for the partner's.
 * The block sets are not contiguous in rank order, so they travel packed in
 * increasing block order (both sides enumerate the same set).
 *
 * Non-power-of-two p: p2 = 2^floor(log2 p), e = p - p2. Each neighbouring
 * pair (2i, 2i+1), i < e, acts as virtual rank i: 2i+1 hands its data to 2i
 * before the butterfly and gets the result from 2i after it (one extra
 * message of the whole vector each way, between neighbours); rank r >= 2e is
 * virtual rank r - e. The map is monotone, so neighbouring virtual ranks are
 * real ranks at most 2 apart, and virtual rank v stands for the consecutive
 * real ranks ck_swing_real(v, p) .. + ck_swing_width(v, p) - 1, whose blocks
 * are adjacent in a rank-ordered buffer (one "super-block" per virtual rank).
 */
#ifndef COLLKIT_SWING_H
#define COLLKIT_SWING_H

#include "ck_core.h"

/* Fills set[] with reach(v, k) on p2 = 2^s ranks in increasing order and
 * returns its size 2^(s-k). set must hold 2^(s-k) ints. */
int ck_swing_reach(int v, int k, int p2, int s, int *set);

/* Offsets of the super-blocks of a rank-ordered buffer of size blocks of
 * count: virtual rank u's blocks are elements [off[u], off[u+1]), u < p2.
 * A malloc'ed array of p2 + 1 the caller frees, or NULL when out of memory. */
size_t *ck_swing_superblocks(int size, size_t count);

/* The two butterfly phases, run only by the ranks with a virtual rank
 * (ck_swing_vrank(rank, p) >= 0). buf is laid out as p2 consecutive
 * super-blocks: the one of virtual rank v is elements [off[v], off[v+1]).
 * Reduce-scatter: on return block vrank holds the reduction over all virtual
 * ranks' buffers (other blocks hold partial sums). Allgather: on entry block
 * vrank is valid, on return every block is. Commutative ops only. Both tag
 * one "step" per butterfly level (instrumented builds): the reduce-scatter
 * from 0, the allgather from step0 (the caller's count of earlier steps). */
int ck_swing_rs_phase(void *buf, const size_t *off, MPI_Datatype dt, MPI_Op op, int rank,
                      int p, int tag, MPI_Comm comm);
int ck_swing_ag_phase(void *buf, const size_t *off, MPI_Datatype dt, int rank, int p, int tag,
                      MPI_Comm comm, int step0);

#endif
