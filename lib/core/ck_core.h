/*
 * Internal core of libcollkit: argument checks, datatype-aware buffers,
 * point-to-point wrappers with size_t counts, and shared math.
 *
 * Algorithms talk to MPI only through the ck_* calls declared here (plus
 * MPI_Comm_rank/size and datatype queries). Keeping that surface small and in
 * one place is what later lets instrumentation and the traffic recorder see
 * every message an algorithm sends.
 */
#ifndef COLLKIT_CORE_H
#define COLLKIT_CORE_H

#include "collkit/collkit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Tags: one per collective, high enough not to collide with typical
 * application tags and below the 32767 that MPI guarantees as MPI_TAG_UB.
 * Messages of consecutive calls cannot mix: MPI orders messages between a
 * pair of ranks on one (comm, tag), and every rank runs the calls in order. */
#define CK_TAG_BASE 0x6b00
#define CK_TAG(coll) (CK_TAG_BASE + (int)(coll))

/* Run an MPI-returning expression; on failure jump to the function's `out`
 * label with the code kept in `rc`. Every algorithm declares `int rc`. */
#define CK_TRY(expr)                                                            \
    do {                                                                        \
        rc = (expr);                                                            \
        if (rc != MPI_SUCCESS) goto out;                                        \
    } while (0)

/* ------------------------------------------------------------- arguments */

/* Checks the communicator, datatype and count, and returns rank and size.
 * MPI_ERR_COMM, MPI_ERR_TYPE or MPI_ERR_COUNT on bad input. */
int ck_check_args(MPI_Comm comm, MPI_Datatype dt, size_t count, int *rank, int *size);

/* MPI_ERR_ROOT unless 0 <= root < size. */
int ck_check_root(int root, int size);

/* MPI_ERR_OP for MPI_OP_NULL, or for a non-commutative op when the algorithm
 * needs a commutative one. *commutative (may be NULL) receives the answer. */
int ck_check_op(MPI_Op op, int need_commutative, int *commutative);

/* MPI_ERR_OP for one of MPI's predefined ops on a derived datatype: MPI
 * defines them on predefined datatypes only, and MPI_Reduce_local refuses the
 * pair (Open MPI), which inside an algorithm would come after messages were
 * exchanged. A reduction's op and datatype are the same on every rank, so
 * every rank refuses here, before communicating. */
int ck_check_op_type(MPI_Op op, MPI_Datatype dt);

/* MPI_ERR_BUFFER when buf is NULL and count > 0, unless dt's data does not
 * start at its origin: then NULL is MPI_BOTTOM (NULL in Open MPI and MPICH)
 * with a datatype of absolute addresses. MPI_IN_PLACE is not NULL. */
int ck_check_buf(const void *buf, size_t count, MPI_Datatype dt);

/* The openings of the collective shapes, each the checks above in the one
 * order of precedence every algorithm of the shape keeps (the error class a
 * bad call gets must not depend on the algorithm): comm/datatype/count, then
 * root, then op, then the buffers significant on this rank. */
/* bcast: root, buf. */
int ck_check_bcast(const void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm,
                   int *rank, int *size);
/* gather: root, sbuf, rbuf at the root. */
int ck_check_gather(const void *sbuf, const void *rbuf, size_t count, MPI_Datatype dt,
                    int root, MPI_Comm comm, int *rank, int *size);
/* scatter: root, sbuf at the root, rbuf. */
int ck_check_scatter(const void *sbuf, const void *rbuf, size_t count, MPI_Datatype dt,
                     int root, MPI_Comm comm, int *rank, int *size);
/* reduce: root, op, sbuf, rbuf at the root. */
int ck_check_reduce(const void *sbuf, const void *rbuf, size_t count, MPI_Datatype dt,
                    MPI_Op op, int need_commutative, int *commutative, int root,
                    MPI_Comm comm, int *rank, int *size);
/* For algorithms whose messages or buffers hold up to p blocks of count,
 * after the checks above: *done for count 0 (nothing to do), MPI_ERR_COUNT
 * when p blocks exceed CK_MAX_COUNT, else the extent of dt. */
int ck_check_blocks(size_t count, int size, MPI_Datatype dt, MPI_Aint *ext, int *done);
/* allgather, alltoall: sbuf, rbuf. */
int ck_check_exchange(const void *sbuf, const void *rbuf, size_t count, MPI_Datatype dt,
                      MPI_Comm comm, int *rank, int *size);
/* allreduce, reduce_scatter: op, sbuf, rbuf. *commutative (may be NULL), as
 * for ck_check_op. */
int ck_check_allreduce(const void *sbuf, const void *rbuf, size_t count, MPI_Datatype dt,
                       MPI_Op op, int need_commutative, int *commutative, MPI_Comm comm, int *rank,
                       int *size);

/* ------------------------------------------------------------- datatypes */

/* Extent of dt (the stride between consecutive elements). */
int ck_type_extent(MPI_Datatype dt, MPI_Aint *extent);

/* Whether dt is one of the predefined datatypes programs pass most (the
 * integers, floats and doubles of C and <stdint.h>), whose elements are one
 * dense run of *size bytes: for them nothing needs asking MPI. A call's
 * checks and copies otherwise query the type each time (extent, true extent,
 * size, envelope: 30 to 100 instructions each in Open MPI 4.1, a third of
 * an 8-byte allreduce's own work). */
int ck_type_named_dense(MPI_Datatype dt, MPI_Aint *size);

/* Address of element idx of a buffer of dt elements. */
static inline char *ck_elem(const void *base, size_t idx, MPI_Aint extent)
{
    return (char *)base + (MPI_Aint)idx * extent;
}

/* A temporary buffer for `count` elements of a datatype, laid out so that
 * `buf` can be passed to MPI like a user buffer (true lower bound honoured).
 * Zero-initialise the struct; ck_tmp_free is safe on it at any time. */
typedef struct {
    void *mem;
    char *buf;
} ck_tmp;

int ck_tmp_alloc(ck_tmp *t, size_t count, MPI_Datatype dt);
void ck_tmp_free(ck_tmp *t);

/* Copy count elements src -> dst (regions must not overlap). */
int ck_copy(const void *src, void *dst, size_t count, MPI_Datatype dt);

/* Block j of dst (nblocks blocks of count) = block (shift + j) mod nblocks of
 * src, 0 <= shift < nblocks (regions must not overlap). */
int ck_rotate(const void *src, void *dst, int shift, int nblocks, size_t count, MPI_Datatype dt);

/* inout = in (op) inout, element-wise: `in` holds the operand that comes
 * first in rank order, which matters for non-commutative ops. */
int ck_reduce_local(const void *in, void *inout, size_t count, MPI_Datatype dt, MPI_Op op);

/* Under SimGrid: charge the simulated time of the local work (copies,
 * reductions) done since the last message, in one action (buffer.c); called
 * before every message. ck_local_work_batch(1) starts batching (returns the
 * previous state), ck_local_work_batch(0) flushes and stops: ck_algorithm_call
 * brackets the algorithm with them. Nothing outside SimGrid builds. */
#ifdef SMPI_H
void ck_local_work_flush(void);
int ck_local_work_batch(int on);
#else
#define ck_local_work_flush() ((void)0)
#define ck_local_work_batch(on) ((void)(on), 0)
#endif

/* ------------------------------------------------------------- point-to-point */

int ck_send(const void *buf, size_t count, MPI_Datatype dt, int dst, int tag, MPI_Comm comm);
int ck_recv(void *buf, size_t count, MPI_Datatype dt, int src, int tag, MPI_Comm comm);
int ck_sendrecv(const void *sbuf, size_t scount, int dst,
                void *rbuf, size_t rcount, int src,
                MPI_Datatype dt, int tag, MPI_Comm comm);
int ck_isend(const void *buf, size_t count, MPI_Datatype dt, int dst, int tag,
             MPI_Comm comm, MPI_Request *req);
int ck_irecv(void *buf, size_t count, MPI_Datatype dt, int src, int tag,
             MPI_Comm comm, MPI_Request *req);
int ck_waitall(int n, MPI_Request *reqs);

/* Requests for up to n messages: the caller's array `stack` of CK_STACK_REQS
 * when n fits (Open MPI keeps a per-communicator request array, MPICH a small
 * on-stack one, for the same reason: at small p a malloc and a free per call
 * cost a fifth of an 8-byte call's own work), else one malloc; NULL when out
 * of memory. The stack array is left uninitialised (zeroing it would cost
 * as much as the malloc). ck_reqs_put(stack, NULL) is safe. */
#define CK_STACK_REQS 32
MPI_Request *ck_reqs_get(MPI_Request *stack, size_t n);
void ck_reqs_put(MPI_Request *stack, MPI_Request *reqs);

/* ------------------------------------------------------------- math */

int ck_is_pow2(int p);
int ck_pow2_floor(int p);  /* largest power of two <= p (p >= 1) */
int ck_log2_ceil(int p);   /* smallest k with 2^k >= p (p >= 1) */
int ck_high_bit(int x);    /* index of the highest set bit of x > 0 */
int ck_low_bit(int x);     /* index of the lowest set bit of x > 0 */

/* Split `count` elements into `nblocks` nearly equal blocks: the first
 * count % nblocks blocks get one extra element. */
size_t ck_block_count(size_t count, int nblocks, int b);
size_t ck_block_offset(size_t count, int nblocks, int b);

/* Receive (receive != 0) or send the run of nb blocks of count elements
 * starting at block first of blocks (p = size blocks in rank order; the run
 * wraps past block p-1 to block 0) as one message from / to peer. */
int ck_run_move(int receive, void *blocks, int first, int nb, size_t count, MPI_Datatype dt,
                int size, int peer, int tag, MPI_Comm comm);

/* A leaf of a gather (gather != 0) or scatter tree: its own block straight
 * from sbuf to its parent, or from its parent into rbuf. */
int ck_leaf_move(int gather, const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                 int parent, int tag, MPI_Comm comm);

/* The binomial gather (gather != 0) or scatter, whole: checks included
 * (lib/core/binomial_blocks.c). */
int ck_binomial_blocks(int gather, const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                       int root, MPI_Comm comm);

/* One recursive-halving step at distance mask over a window [*lo, *hi) of
 * ranks or blocks: of the pair (me, me ^ mask) the lower keeps the lower half.
 * On return [*lo, *hi) is the half kept and [*slo, *shi) the half sent. */
static inline void ck_halve(int me, int mask, int *lo, int *hi, int *slo, int *shi)
{
    const int mid = *lo + mask, lower = me < (me ^ mask);
    *slo = lower ? mid : *lo;
    *shi = lower ? *hi : mid;
    if (lower)
        *hi = mid;
    else
        *lo = mid;
}

/* Rank relative to a root, and back. */
static inline int ck_rel_rank(int rank, int root, int size) { return (rank - root + size) % size; }
static inline int ck_abs_rank(int rel, int root, int size) { return (rel + root) % size; }

/* ------------------------------------------------------------- folding */

/* Non-power-of-two p on a power-of-two core (Thakur, Rabenseifner & Gropp
 * 2005; Bine; Swing): p2 = ck_pow2_floor(p), rem = p - p2 pairs. The first
 * 2*rem ranks pair as (2i, 2i+1) and each pair acts as virtual rank i; rank
 * q >= 2*rem is virtual rank q - rem. Virtual ranks keep rank order, and
 * virtual rank v stands for the consecutive ranks (= blocks)
 * ck_fold_first(v) .. + ck_fold_width(v) - 1. The conventions differ only in
 * which half of a pair plays the virtual rank:
 *   CK_FOLD_KEEP_ODD   MPICH's: 2i drops out, 2i+1 plays (the survivor reduces
 *                      a_2i op a_2i+1 with the lower rank first);
 *   CK_FOLD_KEEP_EVEN  Bine's and Swing's: 2i plays, 2i+1 drops out (so the
 *                      root, relative 0, is virtual rank 0).
 * Ranks may be relative to a root (ck_rel_rank); the maps do not care.
 * Two more pairings, handled by ck_fold_of and the phases only:
 *   CK_FOLD_TAIL       the last 2*rem ranks pair instead, (first + 2j, first +
 *                      2j + 1) with first = p2 - rem, and the even one plays
 *                      (Rabenseifner's reduce: the root stays unpaired);
 *                      virtual rank v is played by ck_fold_tail_real(v, first);
 *   CK_FOLD_HIGH       rank p2 + i hands over to rank i (i < rem), which plays
 *                      virtual rank i; the virtual rank of q < p2 is q. */
typedef enum { CK_FOLD_KEEP_ODD, CK_FOLD_KEEP_EVEN, CK_FOLD_TAIL, CK_FOLD_HIGH } ck_fold_keep;

static inline int ck_fold_tail_real(int v, int first)
{
    return v < first ? v : first + 2 * (v - first);
}

static inline int ck_fold_rem(int size) { return size - ck_pow2_floor(size); }
static inline int ck_fold_first(int v, int rem) { return v < rem ? 2 * v : v + rem; }
static inline int ck_fold_width(int v, int rem) { return v < rem ? 2 : 1; }
/* Virtual rank that stands for rank (block) q, whether or not q plays it. */
static inline int ck_fold_owner(int q, int rem) { return q < 2 * rem ? q / 2 : q - rem; }
/* Rank that plays virtual rank v (head pairings only). */
static inline int ck_fold_real(int v, int rem, ck_fold_keep keep)
{
    return ck_fold_first(v, rem) + (keep == CK_FOLD_KEEP_ODD && v < rem ? 1 : 0);
}
/* Virtual rank of rank q, -1 when q drops out (head pairings only). */
static inline int ck_fold_vrank(int q, int rem, ck_fold_keep keep)
{
    if (q >= 2 * rem) return q - rem;
    return (q % 2 == (keep == CK_FOLD_KEEP_ODD ? 1 : 0)) ? q / 2 : -1;
}

/* The same for the ranks of a communicator of size ranks folded relative to
 * root: the real rank playing virtual rank v. */
static inline int ck_fold_rank_of(int v, ck_fold_keep keep, int root, int size)
{
    return ck_abs_rank(ck_fold_real(v, ck_fold_rem(size), keep), root, size);
}

/* One rank's part in the fold, for the two phases below. */
typedef struct {
    int vrank;   /* virtual rank, -1 when this rank drops out */
    int partner; /* the other half of this rank's pair (real rank), -1 if unpaired */
} ck_fold;

/* The part of rank (real) in a communicator of size ranks folded relative to
 * root (0 when the collective has none). */
ck_fold ck_fold_of(int rank, int root, int size, ck_fold_keep keep);

/* Fold-in ("fold" span), before the power-of-two core runs: a rank that drops
 * out sends n elements of give to its partner; the partner receives them into
 * take and, when acc is not NULL, reduces take (op) acc into acc. Nothing for
 * unpaired ranks. */
int ck_fold_in(const ck_fold *f, const void *give, void *take, void *acc, size_t n,
               MPI_Datatype dt, MPI_Op op, int tag, MPI_Comm comm);

/* Fold-out ("unfold" span), after the core: the survivor of a pair sends n
 * elements of give to its partner, which receives them into take. */
int ck_fold_out(const ck_fold *f, const void *give, void *take, size_t n, MPI_Datatype dt,
                int tag, MPI_Comm comm);

/* ------------------------------------------------------------- shared openings */

/* Allreduce on a folded core: the checks, rbuf = sbuf, and the fold-in.
 * f->vrank is -1 when this rank has nothing more to do (count 0, p 1, or
 * dropped out and served); otherwise the caller runs the core on rbuf and
 * ends with ck_fold_out(f, rbuf, NULL, count, ...). */
int ck_allreduce_fold_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                           MPI_Op op, int need_commutative, ck_fold_keep keep, MPI_Comm comm,
                           int *rank, int *size, ck_fold *f);

/* The same without the opening copy: *src is where the core's first step
 * finds this rank's vector, sbuf (out of place and not folded; rbuf is then
 * unwritten) or rbuf. A core that reads its first step from *src and writes
 * rbuf before reading it saves a pass over the vector. */
int ck_allreduce_fold_open_src(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                               MPI_Op op, int need_commutative, ck_fold_keep keep,
                               MPI_Comm comm, int *rank, int *size, ck_fold *f,
                               const void **src);

/* Allgather: the checks, the own block into place in rbuf; *done when the
 * call is complete (count 0 or p 1). */
int ck_allgather_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                      MPI_Comm comm, int *rank, int *size, MPI_Aint *ext, int *done);

/* Reduce-scatter fold-out and result, for a survivor holding the reduced
 * blocks in rank order in acc: the partner's block goes back to it, the own
 * block to rbuf. */
int ck_reduce_scatter_fold_out(const ck_fold *f, const void *acc, void *rbuf, int rank,
                               size_t count, MPI_Datatype dt, MPI_Comm comm);

/* Alltoall with per-block messages: the checks, the extent and the source
 * blocks (ck_alltoall_source); *src is NULL when there is nothing to do. */
int ck_alltoall_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm,
                     int *rank, int *size, MPI_Aint *ext, ck_tmp *tmp, const void **src);

/* Gather (gather != 0) or scatter whose subtrees travel as one message of
 * blocks: the checks and ck_check_blocks; *done when count is 0. */
int ck_rooted_blocks_open(int gather, const void *sbuf, const void *rbuf, size_t count,
                          MPI_Datatype dt, int root, MPI_Comm comm, int *rank, int *size,
                          MPI_Aint *ext, int *done);

/* Alltoall whose messages carry up to p blocks: the checks, ck_check_blocks,
 * *src (sbuf, or rbuf for MPI_IN_PLACE); *done when the call is complete
 * (count 0, or p 1 with the block copied). */
int ck_alltoall_blocks_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                            MPI_Comm comm, int *rank, int *size, MPI_Aint *ext,
                            const void **src, int *done);

/* Alltoall: the blocks to send, *src: sbuf, or for MPI_IN_PLACE a copy of
 * rbuf in tmp (which the caller frees), since rbuf is overwritten while its
 * blocks are still to be sent. In place with p 1 there is nothing to do:
 * *src is NULL. */
int ck_alltoall_source(const void *sbuf, void *rbuf, size_t count, int size, MPI_Datatype dt,
                       ck_tmp *tmp, const void **src);

/* The root's side of a linear gather (fan_in: receive the block of every
 * other rank into blocks) or scatter (else: send them from blocks), blocks
 * in rank order, overlapped with the copy of the root's own block between
 * own (skipped when MPI_IN_PLACE) and its place in blocks. */
int ck_root_fan(int fan_in, void *blocks, void *own, size_t count, MPI_Datatype dt, int root,
                int size, int tag, MPI_Comm comm);

/* Reduce: the checks; *done when the call is complete (count 0, or p 1 and
 * rbuf = sbuf). */
int ck_reduce_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                   int need_commutative, int *commutative, int root, MPI_Comm comm, int *rank,
                   int *size, int *done);

/* Reduce on a folded core (commutative ops): ck_reduce_open, then the part
 * f of this rank; a rank that drops out sends its input to its partner and
 * is *done. */
int ck_reduce_fold_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                        int root, ck_fold_keep keep, MPI_Comm comm, int *rank, int *size,
                        ck_fold *f, int *done);

/* Reduce on a folded core: the accumulator (rbuf at the root, else a copy of
 * sbuf in acc_tmp) with the partner's vector, received into in_tmp (count
 * elements), combined in when f pairs this rank. */
int ck_reduce_fold_acc(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                       int is_root, const ck_fold *f, int tag, MPI_Comm comm, ck_tmp *acc_tmp,
                       ck_tmp *in_tmp, char **acc);

/* Reduce-scatter (p blocks of count): the checks, the whole-vector count
 * limit, count 0, p 1; *done when the call is complete. */
int ck_reduce_scatter_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                           MPI_Op op, int need_commutative, MPI_Comm comm, int *rank, int *size,
                           int *done);

/* Reduce-scatter fold-in: a rank that drops out hands over its whole input
 * `in` and receives its result block into rbuf (done); a survivor gets acc =
 * its input with the partner's combined in (tmp: a whole-vector scratch). */
int ck_reduce_scatter_fold_in(const ck_fold *f, const void *in, void *rbuf, size_t count,
                              int size, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, ck_tmp *acc,
                              ck_tmp *tmp);

/* Phased all-to-all exchanges (phased.c): after the all-to-all opening,
 * setup() reads the algorithm's parameters and says how many phases there are
 * (an MPI error refuses the call); phase q = 0..phases-1 then sends block `to`
 * of the input and receives block `from` with one sendrecv, inside
 * "exchange"/"phase" spans. peers() returns 0 for a phase the rank sits out.
 * own_by_copy: a phase with the rank itself as both peers sends nothing; the
 * own block is copied locally after the last phase. */
typedef int (*ck_phase_setup)(int size, void *ctx, int *phases);
typedef int (*ck_phase_peers)(const void *ctx, int rank, int size, int phase, int *to, int *from);
int ck_alltoall_phases(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm,
                       ck_phase_setup setup, ck_phase_peers peers, void *ctx, int own_by_copy);

/* The fat tree of alltoall/fattree_opt (fattree.c; ck_fattree_radices and
 * the limits are in collkit.h). Radix arrays hold CK_FATTREE_MAX_LEVELS + 1
 * entries: the environment's levels plus the ranks-per-node leaf level. */
/* "8,4,2" -> m = {8, 4, 2}, levels 3; MPI_ERR_ARG unless 1..MAX decimal
 * radices >= 1 separated by commas with a product that fits an int. */
int ck_fattree_parse(const char *text, int *m, int *levels);
/* The tree of p ranks under the given radices: p = k * product, with k > 1
 * prepended as the ranks-per-node level; MPI_ERR_ARG when the product does not
 * divide p. */
int ck_fattree_fit(int p, const int *given, int given_levels, int *m, int *levels);
/* The permuted-variable-base exchange: the destination of source s in a
 * phase (0 <= phase < product of m), and its inverse, the source that sends
 * to d in that phase. */
int ck_fattree_opt_dest(int s, int phase, const int *m, int levels);
int ck_fattree_opt_source(int d, int phase, const int *m, int levels);
/* B_min(l) = Pi_l - floor(Pi_l / (M_{l+1}*...*M_L)), levels counted from 1
 * (l = 0: a leaf). */
long long ck_fattree_bmin(const int *m, int levels, int l);

#endif /* COLLKIT_CORE_H */
