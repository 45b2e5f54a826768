/* Recursive-doubling allreduce (Thakur, Rabenseifner & Gropp 2005, MPICH).
 * log2 p' steps (p' = 2^floor(log2 p)) exchanging the whole vector with the
 * rank at distance 1, 2, 4, ...: after the step at distance d a rank holds the
 * reduction over its aligned group of 2d consecutive ranks. The group with
 * lower ranks is always the first operand, so non-commutative ops work.
 * Non-power-of-two p (Thakur's folding, pairing as MPICH does): among the
 * first 2(p-p') ranks, rank 2i sends its vector to 2i+1, which reduces
 * a_2i op a_2i+1 and takes part for both; 2i gets the result at the end.
 * Latency-optimal for short vectors; sends n per step.
 *
 * Local work (the messages are MPICH's and Open MPI's, unchanged): one
 * vector-sized temporary per call serves the fold and the butterfly (MPICH
 * shares one too). A commutative op accumulates in rbuf and receives into
 * the temporary at every step, as MPICH does (under MPICH the role swaps
 * below cost 1.1-1.3x at 16-256 KiB and 2 ranks, and so does a plain
 * MPI_Sendrecv + MPI_Reduce_local loop in that order; under Open MPI the
 * two orders tie). A non-commutative op, where the lower rank's
 * vector must come first, makes the two buffers trade roles, as in Open
 * MPI, so that the result of either operand order lands in place without a
 * copy per step; out of place, the rank starts in whichever buffer makes
 * the last step land in rbuf (the number of role swaps is known up front:
 * one per step at which this rank is the lower of the pair), so the closing
 * copy Open MPI makes becomes the opening copy of sbuf that is needed
 * anyway. A rank that sits out sends straight from sbuf, without staging it
 * in rbuf. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_allreduce_recursive_doubling(const void *sbuf, void *rbuf, size_t count,
                                    MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size, commutative = 0;
    ck_tmp tmp = {0};
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, 0, &commutative, comm, &rank, &size));
    if (count == 0) goto out;
    if (size == 1) {
        if (sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
        goto out;
    }

    const int tag = CK_TAG(CK_ALLREDUCE);
    const int p2 = ck_pow2_floor(size), rem = size - p2;
    const ck_fold f = ck_fold_of(rank, 0, size, CK_FOLD_KEEP_ODD);
    const char *own = sbuf != MPI_IN_PLACE ? (const char *)sbuf : (const char *)rbuf;
    if (f.vrank < 0) {
        /* Sits out: the partner reduces for both and returns the result. */
        CK_TRY(ck_fold_in(&f, own, NULL, NULL, count, dt, op, tag, comm));
        CK_TRY(ck_fold_out(&f, NULL, rbuf, count, dt, tag, comm));
        goto out;
    }

    CK_TRY(ck_tmp_alloc(&tmp, count, dt));
    const int vrank = f.vrank;
    /* Role swaps ahead (non-commutative ops): the steps at which vrank is
     * the lower of its pair, i.e. its zero bits below p'. An odd number moves
     * the result from the starting buffer to the other one. */
    int swaps = 0;
    for (int mask = 1; mask < p2 && !commutative; mask <<= 1) swaps += (vrank & mask) == 0;
    char *acc = rbuf, *other = tmp.buf;
    if (sbuf != MPI_IN_PLACE && swaps % 2 == 1) {
        acc = tmp.buf;
        other = rbuf;
    }
    /* The own vector into acc (in place it is there already), then the
     * partner's, if any, into other and a_2i op a_2i+1 into acc. */
    CK_TRY(ck_copy(own, acc, count, dt));
    CK_TRY(ck_fold_in(&f, NULL, other, acc, count, dt, op, tag, comm));

    CK_SPAN_BEGIN("butterfly");
    for (int mask = 1; mask < p2; mask <<= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(mask));
        int vpeer = vrank ^ mask, peer = ck_fold_real(vpeer, rem, CK_FOLD_KEEP_ODD);
        CK_TRY(ck_sendrecv(acc, count, peer, other, count, peer, dt, tag, comm));
        if (commutative || vpeer < vrank) {
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
    /* Only in place with an odd number of swaps. */
    if (acc != (char *)rbuf) CK_TRY(ck_copy(acc, rbuf, count, dt));

    CK_TRY(ck_fold_out(&f, rbuf, NULL, count, dt, tag, comm));
out:
    ck_tmp_free(&tmp);
    return rc;
}
