/* Linear scatter: the root sends each rank its block directly.
 *
 * The root starts all p-1 sends before waiting, each straight from the
 * receiver's block of sbuf, so a rank that reaches the call late does not hold
 * back the delivery to the ones after it (blocking sends in rank order would
 * serialise on every rendezvous handshake). The price is one request per
 * rank at the root. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_scatter_linear(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                      int root, MPI_Comm comm)
{
    int rc, rank, size, n = 0;
    MPI_Aint extent;
    MPI_Request *reqs = NULL;

    CK_TRY(ck_check_args(comm, dt, count, &rank, &size));
    CK_TRY(ck_check_root(root, size));
    if (rank == root) CK_TRY(ck_check_buf(sbuf, count));
    CK_TRY(ck_check_buf(rbuf, count));
    if (count == 0) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_SCATTER);
    if (rank != root) {
        CK_SPAN_BEGIN("fan_out");
        rc = ck_recv(rbuf, count, dt, root, tag, comm);
        CK_SPAN_END("fan_out");
        return rc;
    }

    CK_TRY(ck_type_extent(dt, &extent));
    CK_SPAN_BEGIN("fan_out");
    if (size > 1) {
        reqs = malloc(sizeof *reqs * (size_t)(size - 1));
        if (reqs == NULL) {
            rc = MPI_ERR_NO_MEM;
            goto out;
        }
        for (int i = 1; i < size; i++) {
            int r = ck_abs_rank(i, root, size);
            CK_TRY(ck_isend(ck_elem(sbuf, (size_t)r * count, extent), count, dt, r, tag,
                            comm, &reqs[n]));
            n++;
        }
    }
    /* The local copy overlaps with the outgoing messages. */
    if (rbuf != MPI_IN_PLACE)
        CK_TRY(ck_copy(ck_elem(sbuf, (size_t)root * count, extent), rbuf, count, dt));
    CK_TRY(ck_waitall(n, reqs));
    CK_SPAN_END("fan_out");
out:
    free(reqs);
    return rc;
}
