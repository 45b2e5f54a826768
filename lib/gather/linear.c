/* Linear gather: every rank sends its block straight to the root.
 *
 * The root posts all p-1 receives before waiting, each directly into the
 * sender's block of rbuf. Receiving in rank order instead would make the root
 * sit behind one late rank while the blocks of the others pile up as
 * unexpected messages (an extra copy each, or stalled rendezvous senders);
 * with every receive posted, blocks land in whatever order they arrive. The
 * price is one request per rank at the root. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_gather_linear(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                     int root, MPI_Comm comm)
{
    int rc, rank, size;

    CK_TRY(ck_check_gather(sbuf, rbuf, count, dt, root, comm, &rank, &size));
    if (count == 0) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_GATHER);
    CK_SPAN_BEGIN("fan_in");
    if (rank != root)
        rc = ck_send(sbuf, count, dt, root, tag, comm);
    else
        rc = ck_root_fan(1, rbuf, (void *)sbuf, count, dt, root, size, tag, comm);
    CK_SPAN_END("fan_in");
out:
    return rc;
}
