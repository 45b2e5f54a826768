/*
 * Bine butterflies beyond lib/core/bine.h: the block order in which a Bine
 * butterfly gathers (allgather, distance halving) or scatters (reduce-scatter,
 * distance doubling) its data, and the folding of any p onto a power-of-two
 * core. Used by lib/allgather/bine.c and lib/reduce_scatter/bine.c.
 *
 * Block order (p = 2^s). Let nu(r) be the position of r in the
 * distance-doubling Bine tree rooted at 0: bit k of nu(r) is set when the
 * path from 0 to r takes butterfly step k. The partner of r at step k,
 * ck_bine_partner(r, k, p), has the same low k bits of nu as r and bit k
 * flipped (checked in tests/test_bine_butterfly.c). Hence the ranks reachable
 * from r through steps k..s-1 are exactly {q : nu(q) = nu(r) mod 2^k}, and
 * with the slot sigma(r) = bit_reverse(nu(r), s) that set is the aligned slot
 * range of length 2^(s-k) containing sigma(r):
 *   - allgather, steps k = s-1..0: before step k a rank holds the blocks of
 *     the aligned slot range of length 2^(s-1-k) around its slot, and its
 *     partner the adjacent one (range start XOR 2^(s-1-k));
 *   - reduce-scatter, steps k = 0..s-1: before step k a rank reduces the
 *     aligned range of length 2^(s-k) around its slot, keeps the half with
 *     its own slot and sends the other half, which is the partner's.
 * In natural rank order those sets are scattered; in slot order they are
 * contiguous. That is the whole difference between the permute, remap and
 * noncontig variants.
 *
 * Folding (p not a power of two): p2 = 2^floor(log2 p), e = p - p2. The
 * neighbouring pairs (2i, 2i+1), i < e, act as virtual rank i: 2i takes part
 * in the butterfly and owns blocks 2i and 2i+1, 2i+1 only talks to 2i (or,
 * in the remap variants, exchanges its single block with one core rank).
 * Rank q >= 2e is virtual rank q - e. Virtual ranks keep the rank order, so
 * virtual rank v owns the contiguous real blocks [first(v), first(v+1)), and
 * Bine's short butterfly distances at most double in real ranks.
 */
#ifndef COLLKIT_BINE_BUTTERFLY_H
#define COLLKIT_BINE_BUTTERFLY_H

#include "bine.h"
#include "ck_core.h"

typedef struct {
    int size;       /* ranks of the communicator */
    int p2, s;      /* core of p2 = 2^s virtual ranks */
    int extra;      /* size - p2: number of folded pairs */
    int xor_pairs;  /* pairs v, v ^ 2^k (the classic butterfly) instead of Bine's */
    int *sigma;     /* sigma[v]: slot of virtual rank v */
    int *slot_rank; /* slot_rank[x]: virtual rank in slot x (inverse of sigma) */
} ck_bine_bf;

/* nu[0..p-1] for p = 2^s, by running the distance-doubling tree from 0. */
void ck_bine_bf_nu_table(int p, int s, int *nu);

/* Set up (size >= 1) / release. Zero-initialise; free is safe at any time.
 * MPI_ERR_NO_MEM when the tables cannot be allocated. */
int ck_bine_bf_init(ck_bine_bf *bf, int size);
/* The same block order, layout and fold for the classic XOR butterfly: with
 * partners v ^ 2^k, "nu" is v itself and sigma(v) = bit_reverse(v). The
 * butterfly_halving allgather and butterfly_doubling reduce-scatter run the
 * permuted Bine code on it: the same steps in the same order, at XOR
 * distances, so that the two differ in their pairs of ranks alone. */
int ck_bine_bf_init_xor(ck_bine_bf *bf, int size);
void ck_bine_bf_free(ck_bine_bf *bf);

/* Virtual rank of real rank q, or -1 when q is folded into q - 1. */
static inline int ck_bine_bf_vrank(const ck_bine_bf *bf, int q)
{
    return ck_fold_vrank(q, bf->extra, CK_FOLD_KEEP_EVEN);
}

/* Virtual rank that owns real block q (folded blocks included). */
static inline int ck_bine_bf_owner(const ck_bine_bf *bf, int q)
{
    return ck_fold_owner(q, bf->extra);
}

/* First real block (= the real rank playing it) of virtual rank v, for
 * 0 <= v <= p2; first(p2) = size closes the last range. */
static inline int ck_bine_bf_first(const ck_bine_bf *bf, int v)
{
    return ck_fold_first(v, bf->extra);
}

/* Real blocks owned by virtual rank v: 2 for folded pairs, else 1. */
static inline int ck_bine_bf_width(const ck_bine_bf *bf, int v)
{
    return ck_fold_width(v, bf->extra);
}

/* Real rank of the butterfly partner of virtual rank v at step k. */
static inline int ck_bine_bf_peer(const ck_bine_bf *bf, int v, int k)
{
    return ck_bine_bf_first(bf, bf->xor_pairs ? v ^ (1 << k) : ck_bine_partner(v, k, bf->p2));
}

/* What ck_bine_bf_move does with the selected blocks. */
typedef enum {
    CK_BINE_BF_COUNT,  /* only count them */
    CK_BINE_BF_PACK,   /* natural -> packed */
    CK_BINE_BF_UNPACK, /* packed -> natural */
    CK_BINE_BF_REDUCE  /* natural = packed (op) natural */
} ck_bine_bf_mode;

/* Walk the blocks of the virtual ranks u with sigma[u] >> shift == key in
 * increasing rank order (runs of consecutive blocks merged into one call),
 * between a buffer in natural block order and a dense packed buffer.
 * *moved receives the number of elements selected. */
int ck_bine_bf_move(const ck_bine_bf *bf, int shift, int key, ck_bine_bf_mode mode,
                    void *natural, void *packed, size_t count, MPI_Datatype dt, MPI_Op op,
                    size_t *moved);

/* Slot-ordered layout (the permuted variants): off[x] is the first block of
 * slot x, the prefix sums of the widths of the virtual ranks in slot order,
 * x = 0..p2. A malloc'ed array the caller frees, or NULL when out of memory. */
size_t *ck_bine_bf_slot_offsets(const ck_bine_bf *bf);

/* Moves every slot between a rank-ordered and a slot-ordered buffer of
 * blocks of count elements (off from ck_bine_bf_slot_offsets). */
typedef enum {
    CK_BINE_BF_TO_SLOTS,       /* dst (slot order) = src (rank order) */
    CK_BINE_BF_FROM_SLOTS,     /* dst (rank order) = src (slot order) */
    CK_BINE_BF_REDUCE_TO_SLOTS /* dst (slot order) = src (rank order) (op) dst */
} ck_bine_bf_permute_mode;
int ck_bine_bf_permute(const ck_bine_bf *bf, const size_t *off, ck_bine_bf_permute_mode mode,
                       const void *src, void *dst, size_t count, MPI_Datatype dt, MPI_Op op);

#endif
