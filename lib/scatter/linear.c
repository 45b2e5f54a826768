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
    int rc, rank, size;

    CK_TRY(ck_check_scatter(sbuf, rbuf, count, dt, root, comm, &rank, &size));
    if (count == 0) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_SCATTER);
    CK_SPAN_BEGIN("fan_out");
    if (rank != root)
        rc = ck_recv(rbuf, count, dt, root, tag, comm);
    else
        rc = ck_root_fan(0, (void *)sbuf, rbuf, count, dt, root, size, tag, comm);
    CK_SPAN_END("fan_out");
out:
    return rc;
}
