/* Parallel Rings reduce-scatter: the allgather's schedule reversed (lib/core/
 * parallel_rings.c). Rail l's ring reduces the blocks of the local-rank-l
 * ranks in N - 1 steps; before a block goes round, the node's k inputs of it
 * are summed at the rank that sends it, overlapped with the previous ring
 * step. Commutative ops only (the ring adds nodes out of rank order); the
 * same number of ranks on every node (MPI_ERR_ARG otherwise). */
#include "../core/parallel_rings.h"

int ck_reduce_scatter_parallel_rings(const void *sbuf, void *rbuf, size_t count,
                                     MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size, done;
    const ck_nodes *nd;
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, 1, NULL, comm, &rank, &size));
    CK_TRY(ck_nodes_get(comm, &nd));
    CK_TRY(ck_pr_check(nd));
    CK_TRY(ck_reduce_scatter_open(sbuf, rbuf, count, dt, op, 1, comm, &rank, &size, &done));
    if (done) goto out;
    const ck_pr_layout L = {count, 0, size};
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    CK_TRY(ck_pr_reduce_scatter(in, rbuf, &L, dt, op, nd, CK_TAG(CK_REDUCE_SCATTER), comm));
out:
    return rc;
}
