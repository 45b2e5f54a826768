/* Linear alltoall (Open MPI coll/base basic_linear, MPICH isend/irecv):
 * every rank posts a receive from and a send to every other rank at once.
 *
 * Peers are taken in rotated order, receiving from rank - i and sending to
 * rank + i for i = 1..p-1, so that at any moment the ranks target different
 * peers instead of all hitting rank 0 first. Receives are posted before sends
 * so incoming blocks land directly in rbuf rather than as unexpected
 * messages. One step of p-1 concurrent messages each way.
 *
 * In place, every other block of rbuf is both input still to be sent and a
 * landing spot for a receive that may complete first, so the input is copied
 * aside once. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_alltoall_linear(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                       MPI_Comm comm)
{
    int rc, rank, size, n = 0;
    MPI_Aint extent;
    MPI_Request stack[CK_STACK_REQS], *reqs = NULL;
    ck_tmp tmp = {0};
    const void *src;

    CK_TRY(ck_alltoall_open(sbuf, rbuf, count, dt, comm, &rank, &size, &extent, &tmp, &src));
    if (src == NULL) goto out;
    const int tag = CK_TAG(CK_ALLTOALL);

    CK_SPAN_BEGIN("exchange");
    if (size > 1) {
        reqs = ck_reqs_get(stack, 2 * (size_t)(size - 1));
        if (reqs == NULL) CK_TRY(MPI_ERR_NO_MEM);
        for (int i = 1; i < size; i++) {
            int from = (rank - i + size) % size;
            CK_TRY(ck_irecv(ck_elem(rbuf, (size_t)from * count, extent), count, dt, from,
                            tag, comm, &reqs[n]));
            n++;
        }
        for (int i = 1; i < size; i++) {
            int to = (rank + i) % size;
            CK_TRY(ck_isend(ck_elem(src, (size_t)to * count, extent), count, dt, to, tag,
                            comm, &reqs[n]));
            n++;
        }
    }
    /* The own block moves locally while the messages are in flight. In place
     * it is already where it belongs. */
    if (sbuf != MPI_IN_PLACE)
        CK_TRY(ck_copy(ck_elem(sbuf, (size_t)rank * count, extent),
                       ck_elem(rbuf, (size_t)rank * count, extent), count, dt));
    CK_TRY(ck_waitall(n, reqs));
    CK_SPAN_END("exchange");
out:
    ck_reqs_put(stack, reqs);
    ck_tmp_free(&tmp);
    return rc;
}
