/* Reduce then broadcast: a binomial reduce to rank 0 (the library's
 * binomial_doubling reduce, which keeps rank order) followed by a binomial
 * broadcast from rank 0 (binomial_halving bcast). 2 ceil(log2 p) steps, and
 * the whole vector on every edge of both trees: simple and order-preserving,
 * suited to short vectors. Non-commutative ops are fine when the reduce keeps
 * rank order, which binomial_doubling does. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_allreduce_reduce_bcast(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size;
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, 0, NULL, comm, &rank, &size));
    if (count == 0) return MPI_SUCCESS;
    if (size == 1) return sbuf == MPI_IN_PLACE ? MPI_SUCCESS : ck_copy(sbuf, rbuf, count, dt);

    /* MPI_IN_PLACE is a root-only notion for reduce: elsewhere the input in
     * rbuf becomes the send buffer. The reduce must then not write rbuf at a
     * non-root rank, which the reduce algorithms guarantee (rbuf is not
     * significant there). */
    const void *in = (sbuf == MPI_IN_PLACE && rank != 0) ? rbuf : sbuf;
    /* The two halves tag their own steps inside these phases. */
    CK_SPAN_BEGIN("reduce_to_root");
    CK_TRY(ck_reduce_binomial_doubling(in, rbuf, count, dt, op, 0, comm));
    CK_SPAN_END("reduce_to_root");
    CK_SPAN_BEGIN("bcast_from_root");
    CK_TRY(ck_bcast_binomial_halving(rbuf, count, dt, 0, comm));
    CK_SPAN_END("bcast_from_root");
out:
    return rc;
}
