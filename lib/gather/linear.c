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
    int rc, rank, size, n = 0;
    MPI_Aint extent;
    MPI_Request *reqs = NULL;

    CK_TRY(ck_check_args(comm, dt, count, &rank, &size));
    CK_TRY(ck_check_root(root, size));
    CK_TRY(ck_check_buf(sbuf, count));
    if (rank == root) CK_TRY(ck_check_buf(rbuf, count));
    if (count == 0) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_GATHER);
    if (rank != root) {
        CK_SPAN_BEGIN("fan_in");
        rc = ck_send(sbuf, count, dt, root, tag, comm);
        CK_SPAN_END("fan_in");
        return rc;
    }

    CK_TRY(ck_type_extent(dt, &extent));
    CK_SPAN_BEGIN("fan_in");
    if (size > 1) {
        reqs = malloc(sizeof *reqs * (size_t)(size - 1));
        if (reqs == NULL) {
            rc = MPI_ERR_NO_MEM;
            goto out;
        }
        for (int i = 1; i < size; i++) {
            int r = ck_abs_rank(i, root, size);
            CK_TRY(ck_irecv(ck_elem(rbuf, (size_t)r * count, extent), count, dt, r, tag,
                            comm, &reqs[n]));
            n++;
        }
    }
    /* The local copy overlaps with the incoming messages. */
    if (sbuf != MPI_IN_PLACE)
        CK_TRY(ck_copy(sbuf, ck_elem(rbuf, (size_t)root * count, extent), count, dt));
    CK_TRY(ck_waitall(n, reqs));
    CK_SPAN_END("fan_in");
out:
    free(reqs);
    return rc;
}
