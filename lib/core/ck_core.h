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

/* MPI_ERR_BUFFER when buf is NULL and count > 0. MPI_IN_PLACE is not NULL. */
int ck_check_buf(const void *buf, size_t count);

/* ------------------------------------------------------------- datatypes */

/* Extent of dt (the stride between consecutive elements). */
int ck_type_extent(MPI_Datatype dt, MPI_Aint *extent);

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

/* inout = in (op) inout, element-wise: `in` holds the operand that comes
 * first in rank order, which matters for non-commutative ops. */
int ck_reduce_local(const void *in, void *inout, size_t count, MPI_Datatype dt, MPI_Op op);

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

/* ------------------------------------------------------------- math */

int ck_is_pow2(int p);
int ck_pow2_floor(int p);  /* largest power of two <= p (p >= 1) */
int ck_log2_ceil(int p);   /* smallest k with 2^k >= p (p >= 1) */

/* Split `count` elements into `nblocks` nearly equal blocks: the first
 * count % nblocks blocks get one extra element. */
size_t ck_block_count(size_t count, int nblocks, int b);
size_t ck_block_offset(size_t count, int nblocks, int b);

/* Rank relative to a root, and back. */
static inline int ck_rel_rank(int rank, int root, int size) { return (rank - root + size) % size; }
static inline int ck_abs_rank(int rel, int root, int size) { return (rel + root) % size; }

#endif /* COLLKIT_CORE_H */
