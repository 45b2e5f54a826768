/*
 * One call of the measured collective, by backend: the MPI library's own
 * collective, or a libcollkit registry algorithm. Buffers arrive ready: NULL
 * where not significant on this rank, MPI_IN_PLACE where in place.
 */
#ifndef CK_BENCH_BACKEND_H
#define CK_BENCH_BACKEND_H

#include <collkit/collkit.h>

#include <stddef.h>

typedef struct {
    ck_collective coll;
    size_t count; /* elements: whole vector, or one rank's block */
    MPI_Datatype dt;
    MPI_Op op;
    int root;
} backend_call;

/* MPI_Bcast, MPI_Reduce, MPI_Gather, MPI_Scatter, MPI_Allgather,
 * MPI_Reduce_scatter_block, MPI_Allreduce or MPI_Alltoall, with
 * sendcount = recvcount = count for the data-movement ones. count must be at
 * most INT_MAX (the caller checks; ck_library_call would refuse it with
 * MPI_ERR_COUNT). Returns the MPI error code. */
int backend_mpi_call(const backend_call *c, const void *sbuf, void *rbuf, MPI_Comm comm);

/* The algorithm called `name` for a collective: libcollkit's registry, and in
 * the ck_bench_mutants build also the deliberately broken test algorithms.
 * NULL when unknown. */
const ck_algorithm *backend_collkit_find(ck_collective coll, const char *name);

int backend_collkit_call(const ck_algorithm *alg, const backend_call *c, const void *sbuf,
                         void *rbuf, MPI_Comm comm);

#endif
