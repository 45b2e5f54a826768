/* Linear reduce: every rank sends its vector to the root, which combines them
 * one by one. p - 1 messages and p - 1 local reductions serialised at the
 * root; the baseline the trees are measured against. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_reduce_linear(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                     int root, MPI_Comm comm)
{
    int rc, rank, size, done;
    ck_tmp in = {0}, own = {0};
    CK_TRY(ck_reduce_open(sbuf, rbuf, count, dt, op, 0, NULL, root, comm, &rank, &size, &done));
    if (done) goto out;

    const int tag = CK_TAG(CK_REDUCE);
    if (rank != root) {
        CK_SPAN_BEGIN("fan_in");
        rc = ck_send(sbuf, count, dt, root, tag, comm);
        CK_SPAN_END("fan_in");
        return rc;
    }

    /* Combining from the highest rank down, acc = a_i op acc keeps the lower
     * rank's operand first, as non-commutative ops need, and lets rbuf be the
     * accumulator from the start. The root's own input must survive until its
     * turn, so in place it is saved first unless it is the starting value. */
    const void *mine = sbuf;
    if (sbuf == MPI_IN_PLACE && root != size - 1) {
        CK_TRY(ck_tmp_alloc(&own, count, dt));
        CK_TRY(ck_copy(rbuf, own.buf, count, dt));
        mine = own.buf;
    }
    CK_SPAN_BEGIN("fan_in");
    if (root == size - 1) {
        if (sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
    } else {
        CK_TRY(ck_recv(rbuf, count, dt, size - 1, tag, comm));
    }
    for (int i = size - 2; i >= 0; i--) {
        if (i == root) {
            CK_TRY(ck_reduce_local(mine, rbuf, count, dt, op));
        } else {
            /* Not needed where the root's own input is the only one left
             * (p = 2 with root 0). */
            if (in.mem == NULL) CK_TRY(ck_tmp_alloc(&in, count, dt));
            CK_TRY(ck_recv(in.buf, count, dt, i, tag, comm));
            CK_TRY(ck_reduce_local(in.buf, rbuf, count, dt, op));
        }
    }
    CK_SPAN_END("fan_in");
out:
    ck_tmp_free(&in);
    ck_tmp_free(&own);
    return rc;
}
