/* The MPI library's collectives: what the CLI forces through the library's
 * own knobs (environment), so this file never chooses an algorithm. */
#include "backend.h"

int backend_mpi_call(const backend_call *c, const void *sbuf, void *rbuf, MPI_Comm comm)
{
    int n = (int)c->count;
    const void *s = sbuf;
    switch (c->coll) {
    case CK_BCAST: return MPI_Bcast(rbuf, n, c->dt, c->root, comm);
    case CK_REDUCE: return MPI_Reduce(s, rbuf, n, c->dt, c->op, c->root, comm);
    case CK_GATHER: return MPI_Gather(s, n, c->dt, rbuf, n, c->dt, c->root, comm);
    case CK_SCATTER: return MPI_Scatter(s, n, c->dt, rbuf, n, c->dt, c->root, comm);
    case CK_ALLGATHER: return MPI_Allgather(s, n, c->dt, rbuf, n, c->dt, comm);
    case CK_REDUCE_SCATTER: return MPI_Reduce_scatter_block(s, rbuf, n, c->dt, c->op, comm);
    case CK_ALLREDUCE: return MPI_Allreduce(s, rbuf, n, c->dt, c->op, comm);
    case CK_ALLTOALL: return MPI_Alltoall(s, n, c->dt, rbuf, n, c->dt, comm);
    default: return MPI_ERR_ARG;
    }
}
