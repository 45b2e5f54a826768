/* Recursive-doubling allreduce (Thakur, Rabenseifner & Gropp 2005, MPICH).
 * log2 p' steps (p' = 2^floor(log2 p)) exchanging the whole vector with the
 * rank at distance 1, 2, 4, ...: after the step at distance d a rank holds the
 * reduction over its aligned group of 2d consecutive ranks. The group with
 * lower ranks is always the first operand, so non-commutative ops work.
 * Non-power-of-two p (Thakur's folding, pairing as MPICH does): among the
 * first 2(p-p') ranks, rank 2i sends its vector to 2i+1, which reduces
 * a_2i op a_2i+1 and takes part for both; 2i gets the result at the end.
 * Latency-optimal for short vectors; sends n per step. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_allreduce_recursive_doubling(const void *sbuf, void *rbuf, size_t count,
                                    MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size;
    ck_tmp tmp = {0};
    ck_fold f;
    CK_TRY(ck_allreduce_fold_open(sbuf, rbuf, count, dt, op, 0, CK_FOLD_KEEP_ODD, comm, &rank,
                                  &size, &f));
    if (f.vrank < 0) goto out;

    const int tag = CK_TAG(CK_ALLREDUCE);
    const int p2 = ck_pow2_floor(size), rem = size - p2;

    CK_TRY(ck_tmp_alloc(&tmp, count, dt));

    const int vrank = f.vrank;
    /* Two buffers trade roles so that the result of either operand order
     * lands in place without a copy per step. */
    char *acc = rbuf, *other = tmp.buf;
    CK_SPAN_BEGIN("butterfly");
    for (int mask = 1; mask < p2; mask <<= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(mask));
        int vpeer = vrank ^ mask, peer = ck_fold_real(vpeer, rem, CK_FOLD_KEEP_ODD);
        CK_TRY(ck_sendrecv(acc, count, peer, other, count, peer, dt, tag, comm));
        if (vpeer < vrank) {
            CK_TRY(ck_reduce_local(other, acc, count, dt, op));
        } else {
            CK_TRY(ck_reduce_local(acc, other, count, dt, op));
            char *x = acc;
            acc = other;
            other = x;
        }
        CK_SPAN_END("step");
    }
    CK_SPAN_END("butterfly");
    if (acc != (char *)rbuf) CK_TRY(ck_copy(acc, rbuf, count, dt));

    CK_TRY(ck_fold_out(&f, rbuf, NULL, count, dt, tag, comm));
out:
    ck_tmp_free(&tmp);
    return rc;
}
