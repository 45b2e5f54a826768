/* Parallel Rings allreduce: the vector cut into p nearly equal blocks, the
 * Parallel Rings reduce-scatter, then the Parallel Rings allgather on the
 * same rails (lib/core/parallel_rings.c): 2(N - 1) ring steps for N nodes
 * instead of the flat ring's 2(p - 1). Every block is reduced at one rank
 * and copied from there, so all ranks return the same bits. Commutative ops
 * only; the same number of ranks on every node (MPI_ERR_ARG otherwise). */
#include "../core/parallel_rings.h"

int ck_allreduce_parallel_rings(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size;
    MPI_Aint ext;
    const ck_nodes *nd;
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, 1, NULL, comm, &rank, &size));
    CK_TRY(ck_nodes_get(comm, &nd));
    CK_TRY(ck_pr_check(nd));
    CK_TRY(ck_type_extent(dt, &ext));
    if (sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
    if (count == 0 || size == 1) goto out;
    const ck_pr_layout L = {0, count, size};
    const int tag = CK_TAG(CK_ALLREDUCE);
    CK_TRY(ck_pr_reduce_scatter(rbuf, ck_elem(rbuf, ck_pr_offset(&L, rank), ext), &L, dt, op, nd,
                                tag, comm));
    CK_TRY(ck_pr_allgather(rbuf, &L, dt, nd, tag, comm));
out:
    return rc;
}
