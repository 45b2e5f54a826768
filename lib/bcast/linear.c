/* Linear broadcast: the root sends the whole buffer to every other rank.
 * p-1 sends at the root; the baseline every tree must beat.
 *
 * The root posts all p-1 sends (ranks in order, the root skipped) before it
 * waits, as Open MPI's basic_linear does (coll_base_bcast.c,
 * ompi_coll_base_bcast_intra_basic_linear): with blocking sends in rank order
 * each rendezvous handshake, and each receiver that reaches the call late,
 * would hold back the delivery to every rank after it. The messages and the
 * order they are posted in are those of p-1 blocking sends. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_bcast_linear(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc, rank, size, posted = 0;
    MPI_Request stack[CK_STACK_REQS], *reqs = NULL;   /* the common sizes allocate nothing per call */
    CK_TRY(ck_check_bcast(buf, count, dt, root, comm, &rank, &size));
    if (count == 0 || size == 1) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_BCAST);
    /* Step i: the root's i-th send (ranks in order, the root skipped). A
     * receiver's step times its receive; the root's step i times only the
     * post of send i: the sends overlap, so their transfers fall in the one
     * wait after the posts, inside "fan_out" but in no step. */
    CK_SPAN_BEGIN("fan_out");
    if (rank != root) {
        CK_SPAN_BEGIN_STEP("step", rank < root ? rank : rank - 1);
        rc = ck_recv(buf, count, dt, root, tag, comm);
        CK_SPAN_END("step");
    } else {
        reqs = ck_reqs_get(stack, (size_t)(size - 1));
        rc = reqs != NULL ? MPI_SUCCESS : MPI_ERR_NO_MEM;
        for (int r = 0; r < size && rc == MPI_SUCCESS; r++) {
            if (r == root) continue;
            CK_SPAN_BEGIN_STEP("step", r < root ? r : r - 1);
            rc = ck_isend(buf, count, dt, r, tag, comm, &reqs[posted]);
            CK_SPAN_END("step");
            if (rc != MPI_SUCCESS) break;
            posted++;
        }
        /* After a failed post the sends already started are still waited
         * for, so that none outlives this call: their receivers run the same
         * schedule, so every one is matched. The first error is reported. */
        if (posted > 0) {
            int wrc = ck_waitall(posted, reqs);
            if (rc == MPI_SUCCESS) rc = wrc;
        }
    }
    CK_SPAN_END("fan_out");
out:
    ck_reqs_put(stack, reqs);
    return rc;
}
