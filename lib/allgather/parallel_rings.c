/* Parallel Rings allgather (Barati Sedeh, Grant & Afsahi, Algorithm 1, on
 * CPUs): one ring per local rank across the nodes, N - 1 = P/k - 1 ring
 * steps instead of the flat ring's P - 1, each block forwarded over the node
 * while the ring moves the next (lib/core/parallel_rings.c). Needs the same
 * number of ranks on every node: refused with MPI_ERR_ARG otherwise. */
#include "../core/parallel_rings.h"

int ck_allgather_parallel_rings(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint ext;
    const ck_nodes *nd;
    /* The shape refusal comes after the argument checks (their error classes
     * win) and before count 0 or p 1 can succeed: a refused shape is refused
     * whatever the count. */
    CK_TRY(ck_check_exchange(sbuf, rbuf, count, dt, comm, &rank, &size));
    CK_TRY(ck_nodes_get(comm, &nd));
    CK_TRY(ck_pr_check(nd));
    CK_TRY(ck_allgather_open(sbuf, rbuf, count, dt, comm, &rank, &size, &ext, &done));
    if (done) goto out;
    const ck_pr_layout L = {count, 0, size};
    CK_TRY(ck_pr_allgather(rbuf, &L, dt, nd, CK_TAG(CK_ALLGATHER), comm));
out:
    return rc;
}
