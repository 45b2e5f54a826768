/*
 * Deliberately broken algorithms, one per kind of check in the matrix. The
 * ck_matrix_mutants build runs the matrix over this table with
 * --expect-fail: it passes only if every mutant is caught. It proves the
 * matrix can fail, and keeps proving it as the matrix changes.
 */
#include "mutants.h"

#include <stdlib.h>
#include <string.h>

/* Off-by-one block index: the ring forwards block (rank - s + 1) instead of
 * the block it received in the previous step, so junk travels around. */
static int allgather_ring_off_by_one(const void *sbuf, void *rbuf, size_t count,
                                     MPI_Datatype dt, MPI_Comm comm)
{
    int rank, p;
    MPI_Aint lb, ext;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    MPI_Type_get_extent(dt, &lb, &ext);
    char *r = rbuf;
    if (sbuf != MPI_IN_PLACE) memcpy(r + (MPI_Aint)rank * (MPI_Aint)count * ext, sbuf, count * (size_t)ext);
    for (int s = 0; s < p - 1; s++) {
        int sb = (rank - s + 1 + p) % p, rb = (rank - s - 1 + p) % p;
        MPI_Sendrecv(r + (MPI_Aint)sb * (MPI_Aint)count * ext, (int)count, dt, (rank + 1) % p, 7,
                     r + (MPI_Aint)rb * (MPI_Aint)count * ext, (int)count, dt, (rank - 1 + p) % p, 7,
                     comm, MPI_STATUS_IGNORE);
    }
    return MPI_SUCCESS;
}

/* Forgets the last element of the vector. */
static int bcast_short_by_one(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    return ck_bcast_linear(buf, count > 1 ? count - 1 : count, dt, root, comm);
}

/* Combines in reversed rank order: only a non-commutative op can tell. */
static int allreduce_reversed(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm)
{
    int rank;
    MPI_Comm rev;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_split(comm, 0, -rank, &rev);
    int rc = ck_allreduce_recursive_doubling(sbuf, rbuf, count, dt, op, rev);
    MPI_Comm_free(&rev);
    return rc;
}

/* Every rank adds the inputs starting from its own: exact in every order for
 * the small-integer inputs, so only the bitwise comparison across ranks of
 * spread float/double sums can tell. */
static int allreduce_own_order(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                               MPI_Op op, MPI_Comm comm)
{
    int rank, p, commute = 0;
    MPI_Aint lb, ext;
    MPI_Op_commutative(op, &commute);
    if (!commute) return MPI_ERR_OP;
    if (count == 0) return MPI_SUCCESS;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    MPI_Type_get_extent(dt, &lb, &ext);
    size_t bytes = count * (size_t)ext;
    char *all = malloc(bytes * (size_t)p);
    if (all == NULL) return MPI_ERR_NO_MEM;
    MPI_Allgather(sbuf == MPI_IN_PLACE ? rbuf : sbuf, (int)count, dt, all, (int)count, dt, comm);
    memcpy(rbuf, all + (size_t)rank * bytes, bytes);
    for (int i = 1; i < p; i++)
        MPI_Reduce_local(all + (size_t)((rank + i) % p) * bytes, rbuf, (int)count, dt, op);
    free(all);
    return MPI_SUCCESS;
}

/* Writes one element past the end of its receive buffer. */
static int scatter_overrun(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root,
                           MPI_Comm comm)
{
    int rc = ck_scatter_binomial(sbuf, rbuf, count, dt, root, comm);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(dt, &lb, &ext);
    if (rc == MPI_SUCCESS && rbuf != MPI_IN_PLACE && count > 0)
        memset((char *)rbuf + (MPI_Aint)count * ext, 0, 1);
    return rc;
}

/* Scribbles on its (const) send buffer. */
static int alltoall_modifies_input(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                   MPI_Comm comm)
{
    int rc = ck_alltoall_pairwise(sbuf, rbuf, count, dt, comm);
    if (rc == MPI_SUCCESS && sbuf != MPI_IN_PLACE && count > 0) memset((void *)sbuf, 0, 1);
    return rc;
}

/* Registered as needing a commutative op, but never checks it. */
static int reduce_scatter_no_op_check(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                      MPI_Op op, MPI_Comm comm)
{
    return ck_reduce_scatter_recursive_doubling(sbuf, rbuf, count, dt, op, comm);
}

/* In place, uses the input's other blocks as scratch: the result is right,
 * but the receive buffer past it changed (Open MPI and MPICH leave it). */
static int reduce_scatter_in_place_scratch(const void *sbuf, void *rbuf, size_t count,
                                           MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int rc = ck_reduce_scatter_recursive_doubling(sbuf, rbuf, count, dt, op, comm), p = 1;
    MPI_Aint lb, ext;
    if (rc != MPI_SUCCESS || sbuf != MPI_IN_PLACE || count == 0) return rc;
    MPI_Comm_size(comm, &p);
    MPI_Type_get_extent(dt, &lb, &ext);
    if (p > 1) memset((char *)rbuf + (MPI_Aint)count * ext, 0x5a, 1);
    return rc;
}

/* Accepts an out-of-range root by wrapping it. */
static int bcast_wraps_root(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int p = 1;
    if (comm != MPI_COMM_NULL) MPI_Comm_size(comm, &p);
    return ck_bcast_linear(buf, count, dt, ((root % p) + p) % p, comm);
}

/* Parallel Rings that never refuses: on uneven nodes it falls back to the
 * flat ring, a right answer where the registry promises a refusal, which
 * would mislead every tool that trusts the constraint (run with
 * COLLKIT_RANKS_PER_NODE set so that some nodes are short). */
static int allgather_parallel_rings_no_node_check(const void *sbuf, void *rbuf, size_t count,
                                                  MPI_Datatype dt, MPI_Comm comm)
{
    const ck_nodes *nd;
    if (comm != MPI_COMM_NULL && ck_nodes_get(comm, &nd) == MPI_SUCCESS && !nd->equal)
        return ck_allgather_ring(sbuf, rbuf, count, dt, comm);
    return ck_allgather_parallel_rings(sbuf, rbuf, count, dt, comm);
}

static const ck_algorithm mutants[] = {
    {CK_ALLGATHER, "ring_off_by_one", "forwards the wrong block", "test", 0, 0,
     {.allgather = allgather_ring_off_by_one}},
    {CK_BCAST, "short_by_one", "drops the last element", "test", 0, 0, {.bcast = bcast_short_by_one}},
    {CK_ALLREDUCE, "reversed_order", "combines in reverse rank order", "test", 0, 0,
     {.allreduce = allreduce_reversed}},
    {CK_ALLREDUCE, "own_order", "each rank adds the inputs starting from its own", "test",
     CK_REQUIRES_COMMUTATIVE, 0, {.allreduce = allreduce_own_order}},
    {CK_SCATTER, "overrun", "writes past its receive buffer", "test", 0, 0,
     {.scatter = scatter_overrun}},
    {CK_ALLTOALL, "modifies_input", "writes into its send buffer", "test", 0, 0,
     {.alltoall = alltoall_modifies_input}},
    {CK_REDUCE_SCATTER, "no_op_check", "ignores its commutativity constraint", "test",
     CK_REQUIRES_COMMUTATIVE, 0, {.reduce_scatter = reduce_scatter_no_op_check}},
    {CK_REDUCE_SCATTER, "in_place_scratch", "writes past its result when in place", "test", 0, 0,
     {.reduce_scatter = reduce_scatter_in_place_scratch}},
    {CK_BCAST, "wraps_root", "accepts root out of range", "test", 0, 0, {.bcast = bcast_wraps_root}},
    {CK_ALLGATHER, "parallel_rings_no_node_check", "runs the flat ring on uneven nodes instead of refusing",
     "test", CK_REQUIRES_EQUAL_NODES, 0, {.allgather = allgather_parallel_rings_no_node_check}},
};

size_t mutant_count(void) { return sizeof mutants / sizeof mutants[0]; }

const ck_algorithm *mutant_at(size_t i) { return i < mutant_count() ? &mutants[i] : NULL; }
