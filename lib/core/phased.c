/* The phased all-to-all exchanges (xor, linear_shift, fattree_opt): one
 * sendrecv per phase, phases in order, each algorithm only saying how many
 * phases there are and who the peers of a phase are. One loop serves all, so
 * their message schedules differ only where their peer functions do.
 *
 * With own_by_copy the phase whose peers are the rank itself sends nothing
 * and the own block is copied locally after the exchange (what Open MPI's
 * pairwise does; a self-message costs a pass through the MPI library's self
 * path). */
#include "ck_core.h"
#include "collkit/spans.h"

int ck_alltoall_phases(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm,
                       ck_phase_setup setup, ck_phase_peers peers, void *ctx, int own_by_copy)
{
    int rc, rank, size, phases = 0, own_copy = 0;
    MPI_Aint extent;
    ck_tmp tmp = {0};
    const void *src;

    CK_TRY(ck_alltoall_open(sbuf, rbuf, count, dt, comm, &rank, &size, &extent, &tmp, &src));
    /* Before the trivial cases return: a misconfigured job fails the same way
     * whatever it sends. */
    CK_TRY(setup(size, ctx, &phases));
    if (src == NULL) goto out;
    const int tag = CK_TAG(CK_ALLTOALL);
    CK_SPAN_BEGIN("exchange");
    for (int q = 0; q < phases; q++) {
        int to, from;
        if (!peers(ctx, rank, size, q, &to, &from)) continue;
        CK_SPAN_BEGIN_STEP("phase", q);
        if (own_by_copy && to == rank && from == rank) {
            own_copy = 1;
            CK_SPAN_END("phase");
            continue;
        }
        CK_TRY(ck_sendrecv(ck_elem(src, (size_t)to * count, extent), count, to,
                           ck_elem(rbuf, (size_t)from * count, extent), count, from, dt, tag, comm));
        CK_SPAN_END("phase");
    }
    CK_SPAN_END("exchange");
    /* In place the own block already sits in rbuf (src is a copy). */
    if (own_copy && sbuf != MPI_IN_PLACE)
        CK_TRY(ck_copy(ck_elem(src, (size_t)rank * count, extent),
                       ck_elem(rbuf, (size_t)rank * count, extent), count, dt));
out:
    ck_tmp_free(&tmp);
    return rc;
}
