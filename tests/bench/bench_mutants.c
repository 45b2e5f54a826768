/* Algorithms that fail with an MPI error, symmetrically or on one rank. */
#include "bench_mutants.h"

/* Every rank refuses, before any message: the common case (bad argument). */
static int allreduce_fails_everywhere(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                      MPI_Op op, MPI_Comm comm)
{
    (void)sbuf, (void)rbuf, (void)count, (void)dt, (void)op, (void)comm;
    return MPI_ERR_OTHER;
}

/* The exchange completes, then only the last rank reports an error: the
 * other ranks must still learn of it and end the point with it. */
static int allreduce_fails_on_last_rank(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                        MPI_Op op, MPI_Comm comm)
{
    int rc = ck_allreduce_recursive_doubling(sbuf, rbuf, count, dt, op, comm);
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    return rc == MPI_SUCCESS && rank == p - 1 ? MPI_ERR_TRUNCATE : rc;
}

static const ck_algorithm bench_mutants[] = {
    {CK_ALLREDUCE, "fails_everywhere", "returns MPI_ERR_OTHER on every rank", "test", 0, 0,
     {.allreduce = allreduce_fails_everywhere}},
    {CK_ALLREDUCE, "fails_on_last_rank", "returns MPI_ERR_TRUNCATE on the last rank only", "test", 0,
     0, {.allreduce = allreduce_fails_on_last_rank}},
};

size_t bench_mutant_count(void) { return sizeof bench_mutants / sizeof bench_mutants[0]; }

const ck_algorithm *bench_mutant_at(size_t i)
{
    return i < bench_mutant_count() ? &bench_mutants[i] : NULL;
}
