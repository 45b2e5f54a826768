/*
 * The validator: one home for how a collective's result is checked, shared
 * by the correctness matrix (tests/matrix.c) and collkit-bench.
 *
 * Everything about the collective comes from its descriptor
 * (ck_collective_describe): which buffers a rank passes and how large they
 * are, where MPI_IN_PLACE goes, and what the result is as data. Inputs are a
 * formula of (source rank, block slot, element, seed); the reference is the
 * same formula, reduced in rank order where the collective reduces: never
 * another algorithm or the MPI library, which could share the bug being
 * looked for. Every value is a small integer, exact in every datatype and in
 * every order of reduction, so results are compared for equality. The one
 * exception, spread sums (ckv_case.spread), exists to make the order of
 * additions visible, so that results that must be replicated can be
 * compared bitwise across ranks (ckv_result_digest).
 */
#ifndef CK_VALIDATE_H
#define CK_VALIDATE_H

#include <collkit/collkit.h>

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- ops */

/* The ops the validator can check: MPI's predefined ones and a user-defined
 * non-commutative one (composition of affine maps x -> a x + b mod 2^15,
 * associative, and any reordering of operands shows). */
typedef enum { CKV_SUM, CKV_MAX, CKV_MIN, CKV_PROD, CKV_NONCOMM, CKV_NUM_OPS } ckv_op;

const char *ckv_op_name(ckv_op op);            /* "sum", ...; NULL when invalid */
int ckv_op_parse(const char *name, ckv_op *op); /* 0, or -1 when unknown */
int ckv_op_predefined(ckv_op op);              /* one of MPI's own ops */
int ckv_op_commutative(ckv_op op);
/* Whether the op's inputs are exact in the datatype: the non-commutative op
 * packs two 15-bit numbers, so it needs 30 exact bits (int32, int64, double). */
int ckv_op_supports(ckv_op op, const ck_datatype_desc *dt);
/* The MPI handle. The non-commutative op exists between ckv_ops_init and
 * ckv_ops_free (MPI_OP_NULL otherwise). */
MPI_Op ckv_op_mpi(ckv_op op);
int ckv_ops_init(void); /* MPI error code */
void ckv_ops_free(void);

/* ---------------------------------------------------------------- one case */

/* One call of a collective as seen from one rank. op is ignored where the
 * collective does not reduce, root where it has none. */
typedef struct {
    const ck_collective_desc *coll;
    const ck_datatype_desc *dtype;
    ckv_op op;
    size_t count;
    int root;
    int in_place;
    int rank, p;
    /* 0: the small-integer inputs above, exact in every order. 1 (only where
     * ckv_spread_applies): float or double inputs of +-1e6 and multiples of
     * 1e-2, whose sum depends on the order of the additions. The reference
     * can then only bound the result (rounding of p - 1 additions); what the
     * spread case is for is the comparison across ranks (ckv_result_digest):
     * a replicated result must be bitwise the same on every rank, which
     * exact inputs can never show. */
    int spread;
    /* 1: in place, the receive buffer past the result may come back changed.
     * MPI promises only the result; libcollkit promises more (the rest kept,
     * as programs such as mpi4py's tests check), so its algorithms are held
     * to it, while a library's own algorithm is not (MPICH 5.0.2's forced
     * reduce_scatter_block `pairwise` at p = 2 uses that space). */
    int past_result_free;
} ckv_case;

/* Whether a case may use spread inputs: a sum over float or double. */
int ckv_spread_applies(const ckv_case *c);

/* Which buffers the rank passes (from the descriptor). A buffer with 0
 * elements (not significant on this rank, or count 0) is passed as NULL, an
 * in-place one as MPI_IN_PLACE. result_elems: elements of the receive
 * buffer that hold the result (0 where there is none on this rank). */
typedef struct {
    size_t send_elems, recv_elems, result_elems;
    int send_in_place, recv_in_place;
} ckv_layout;

/* Returns 0, or -1 when p x count elements of the datatype (the largest
 * buffer any rank needs) overflow size_t: every rank reaches the same verdict.
 * Also -1 for a datatype of the table that has no element codec (validate/
 * elements.c), so that a new table entry cannot reach the typed loops. */
int ckv_layout_of(const ckv_case *c, ckv_layout *lay);

/* ---------------------------------------------------------------- buffers */

/* Guard bytes on both sides of every buffer: a write out of bounds changes them. */
#define CKV_GUARD_BYTES 64

typedef struct {
    unsigned char *mem; /* allocation, NULL when elems == 0 */
    void *data;         /* mem + CKV_GUARD_BYTES */
    size_t elems, bytes;
} ckv_buf;

typedef struct {
    ckv_layout lay;
    ckv_buf send, recv;
} ckv_buffers;

/* Allocates the case's buffers with their guards. Returns 0, or -1 when the
 * layout overflows or memory is short (then nothing stays allocated). */
int ckv_buffers_alloc(const ckv_case *c, ckv_buffers *b);
void ckv_buffers_free(ckv_buffers *b);
/* What the call receives: the buffer, NULL or MPI_IN_PLACE. */
const void *ckv_send_arg(const ckv_buffers *b);
void *ckv_recv_arg(const ckv_buffers *b);
/* 0: guards intact; -1: the guard before the data changed; 1: the one after. */
int ckv_buf_guards(const ckv_buf *b);

/* Writes the input of `seed` (in the send buffer, or in the receive buffer
 * where the input lives there: in place, and bcast's root) and a value no
 * correct result contains into every other receive element, so that an
 * element the collective never wrote shows. */
void ckv_fill(const ckv_case *c, ckv_buffers *b, uint64_t seed);

/* Checks this rank after the call: guards intact, the send buffer unchanged,
 * in place the input past the result unchanged (reduce_scatter's other
 * blocks; unless past_result_free), the result equal to the reference. Returns 0, or 1 with the first problem
 * in msg: "rank R: recvbuf element I: expected E, got G" (the buffer is
 * `buffer` for bcast's single one, `sendbuf (input changed)` for an altered
 * input), or "rank R: recvbuf written past its end (N elements)". */
int ckv_check(const ckv_case *c, const ckv_buffers *b, uint64_t seed, char *msg, size_t msglen);

/* A 64-bit hash of the bytes of this rank's result (the first result_elems
 * elements of the receive buffer; a constant where there are none). Where
 * the descriptor says `replicated`, every rank must get the same digest:
 * the caller compares them across ranks with its own means (the matrix
 * uses the MPI library's allreduce, never the algorithm under test). */
uint64_t ckv_result_digest(const ckv_case *c, const ckv_buffers *b);

#endif
