/* Recursive-doubling allgather (Thakur, Rabenseifner, Gropp 2005): at step k
 * a rank swaps everything its group of 2^k ranks holds with the partner group
 * rank XOR 2^k, so the data held doubles each step and log2 p steps suffice.
 *
 * Non-power-of-two p is handled by folding rather than MPICH's scheme of
 * extra forwarding steps inside the doubling: with q = pow2_floor(p), each
 * "extra" rank q+i first hands its block to rank i, the q low ranks run the
 * power-of-two exchange, and rank i finally returns the full vector to q+i.
 * Folding keeps every transfer a contiguous range of blocks and its cost is
 * easy to state (two extra steps, one extra vector), while MPICH's variant
 * needs a subtree-dependent forwarding pattern for the missing data. During
 * the doubling a low rank's group of blocks [g, g+m) comes with the folded
 * blocks [g+q, g+m+q) ∩ [q, p), which is again contiguous, so a step moves
 * at most two messages per direction. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

static size_t clamp_blocks(int v, int hi)
{
    return v <= 0 ? 0 : (size_t)(v < hi ? v : hi);
}

int ck_allgather_recursive_doubling(const void *sbuf, void *rbuf, size_t count,
                                    MPI_Datatype dt, MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint ext;
    CK_TRY(ck_allgather_open(sbuf, rbuf, count, dt, comm, &rank, &size, &ext, &done));
    if (done) goto out;

    const int tag = CK_TAG(CK_ALLGATHER);
    const int q = ck_pow2_floor(size), extra = size - q;
    const size_t total = (size_t)size * count;

    const ck_fold f = ck_fold_of(rank, 0, size, CK_FOLD_HIGH);
    /* Each half of a pair sends or receives block rank + q in place. */
    CK_TRY(ck_fold_in(&f, ck_elem(rbuf, (size_t)rank * count, ext),
                      ck_elem(rbuf, (size_t)(rank + q) * count, ext), NULL, count, dt,
                      MPI_OP_NULL, tag, comm));
    if (f.vrank < 0) return ck_fold_out(&f, NULL, rbuf, total, dt, tag, comm);

    CK_SPAN_BEGIN("allgather");
    for (int mask = 1; mask < q; mask <<= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(mask));
        const int partner = rank ^ mask;
        const int mine = rank & ~(mask - 1), theirs = partner & ~(mask - 1);
        /* folded blocks riding along with each group (possibly none) */
        const size_t xmine = clamp_blocks(extra - mine, mask);
        const size_t xtheirs = clamp_blocks(extra - theirs, mask);
        MPI_Request req[4];
        int n = 0;
        /* Both sides post core before folded part: MPI's pairwise message
         * order then matches them even though they share a tag. */
        CK_TRY(ck_irecv(ck_elem(rbuf, (size_t)theirs * count, ext), (size_t)mask * count, dt,
                        partner, tag, comm, &req[n++]));
        if (xtheirs > 0)
            CK_TRY(ck_irecv(ck_elem(rbuf, (size_t)(theirs + q) * count, ext), xtheirs * count,
                            dt, partner, tag, comm, &req[n++]));
        CK_TRY(ck_isend(ck_elem(rbuf, (size_t)mine * count, ext), (size_t)mask * count, dt,
                        partner, tag, comm, &req[n++]));
        if (xmine > 0)
            CK_TRY(ck_isend(ck_elem(rbuf, (size_t)(mine + q) * count, ext), xmine * count, dt,
                            partner, tag, comm, &req[n++]));
        CK_TRY(ck_waitall(n, req));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");

    CK_TRY(ck_fold_out(&f, rbuf, NULL, total, dt, tag, comm));
out:
    return rc;
}
