/* Linear broadcast: the root sends the whole buffer to every other rank.
 * p-1 sequential sends at the root; the baseline every tree must beat. */
#include "../core/ck_core.h"

int ck_bcast_linear(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc, rank, size;
    CK_TRY(ck_check_args(comm, dt, count, &rank, &size));
    CK_TRY(ck_check_root(root, size));
    CK_TRY(ck_check_buf(buf, count));
    if (count == 0 || size == 1) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_BCAST);
    if (rank == root) {
        for (int r = 0; r < size; r++)
            if (r != root) CK_TRY(ck_send(buf, count, dt, r, tag, comm));
    } else {
        CK_TRY(ck_recv(buf, count, dt, root, tag, comm));
    }
out:
    return rc;
}
