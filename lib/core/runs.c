/* A run of consecutive ranks' blocks, relative to nothing: blocks first ..
 * first + nb - 1 taken mod p, so a run may wrap past rank p-1 back to 0. A
 * rooted tree (binomial gather and scatter) moves a subtree's run as one
 * message; a wrapped run is staged in a temporary buffer in run order. */
#include "ck_core.h"

int ck_run_move(int receive, void *blocks, int first, int nb, size_t count, MPI_Datatype dt,
                int size, int peer, int tag, MPI_Comm comm)
{
    int rc;
    MPI_Aint ext;
    ck_tmp tmp = {0};
    CK_TRY(ck_type_extent(dt, &ext));
    char *at = ck_elem(blocks, (size_t)first * count, ext);
    const size_t n = (size_t)nb * count;
    if (first + nb <= size) {
        rc = receive ? ck_recv(at, n, dt, peer, tag, comm) : ck_send(at, n, dt, peer, tag, comm);
        goto out;
    }
    const size_t head = (size_t)(size - first) * count; /* blocks first..p-1 */
    CK_TRY(ck_tmp_alloc(&tmp, n, dt));
    char *tail = ck_elem(tmp.buf, head, ext);
    if (receive) {
        CK_TRY(ck_recv(tmp.buf, n, dt, peer, tag, comm));
        CK_TRY(ck_copy(tmp.buf, at, head, dt));
        CK_TRY(ck_copy(tail, blocks, n - head, dt));
    } else {
        CK_TRY(ck_copy(at, tmp.buf, head, dt));
        CK_TRY(ck_copy(blocks, tail, n - head, dt));
        CK_TRY(ck_send(tmp.buf, n, dt, peer, tag, comm));
    }
out:
    ck_tmp_free(&tmp);
    return rc;
}

int ck_leaf_move(int gather, const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                 int parent, int tag, MPI_Comm comm)
{
    return gather ? ck_send(sbuf, count, dt, parent, tag, comm)
                  : ck_recv(rbuf, count, dt, parent, tag, comm);
}
