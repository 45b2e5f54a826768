/* Linear broadcast: the root sends the whole buffer to every other rank.
 * p-1 sequential sends at the root; the baseline every tree must beat. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_bcast_linear(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc, rank, size;
    CK_TRY(ck_check_bcast(buf, count, dt, root, comm, &rank, &size));
    if (count == 0 || size == 1) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_BCAST);
    /* Step i: the root's i-th send (ranks in order, the root skipped). */
    CK_SPAN_BEGIN("fan_out");
    if (rank == root) {
        for (int r = 0; r < size; r++) {
            if (r == root) continue;
            CK_SPAN_BEGIN_STEP("step", r < root ? r : r - 1);
            CK_TRY(ck_send(buf, count, dt, r, tag, comm));
            CK_SPAN_END("step");
        }
    } else {
        CK_SPAN_BEGIN_STEP("step", rank < root ? rank : rank - 1);
        CK_TRY(ck_recv(buf, count, dt, root, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("fan_out");
out:
    return rc;
}
