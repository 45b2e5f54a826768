/*
 * libcollkit: reference collective algorithms on MPI point-to-point.
 *
 * Every algorithm has the MPI signature of its collective with size_t counts
 * and returns an MPI error code (MPI_SUCCESS on success). Data-movement
 * collectives (gather, scatter, allgather, alltoall) take one count and one
 * datatype per rank block, as in the Bine and PICO reference code; the
 * per-rank block of rank r starts at r * count * extent(dt).
 *
 * MPI_IN_PLACE is accepted where MPI accepts it:
 *   bcast           -
 *   reduce          sbuf at the root (input and result in rbuf)
 *   gather          sbuf at the root (root's block already in rbuf)
 *   scatter         rbuf at the root (root keeps its block in sbuf)
 *   allgather       sbuf (own block already in rbuf)
 *   reduce_scatter  sbuf (p*count input in rbuf, result in rbuf's first block)
 *   allreduce       sbuf (input and result in rbuf)
 *   alltoall        sbuf (input and result in rbuf)
 * reduce_scatter has MPI_Reduce_scatter_block semantics: count is the size of
 * one block, every rank contributes p*count elements and receives count.
 */
#ifndef COLLKIT_COLLKIT_H
#define COLLKIT_COLLKIT_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLLKIT_VERSION_MAJOR 0
#define COLLKIT_VERSION_MINOR 1
#define COLLKIT_VERSION_PATCH 0
#define COLLKIT_VERSION "0.1.0"

/* Largest element count one call accepts per block: counts travel to MPI
 * point-to-point calls as int. Anything above is refused with MPI_ERR_COUNT
 * (this also catches negative ints converted to size_t). */
#define CK_MAX_COUNT ((size_t)0x7fffffff)

/* ---------------------------------------------------------------- signatures */

typedef int (*ck_bcast_fn)(void *buf, size_t count, MPI_Datatype dt, int root,
                           MPI_Comm comm);
typedef int (*ck_reduce_fn)(const void *sbuf, void *rbuf, size_t count,
                            MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);
typedef int (*ck_gather_fn)(const void *sbuf, void *rbuf, size_t count,
                            MPI_Datatype dt, int root, MPI_Comm comm);
typedef int (*ck_scatter_fn)(const void *sbuf, void *rbuf, size_t count,
                             MPI_Datatype dt, int root, MPI_Comm comm);
typedef int (*ck_allgather_fn)(const void *sbuf, void *rbuf, size_t count,
                               MPI_Datatype dt, MPI_Comm comm);
typedef int (*ck_reduce_scatter_fn)(const void *sbuf, void *rbuf, size_t count,
                                    MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
typedef int (*ck_allreduce_fn)(const void *sbuf, void *rbuf, size_t count,
                               MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
typedef int (*ck_alltoall_fn)(const void *sbuf, void *rbuf, size_t count,
                              MPI_Datatype dt, MPI_Comm comm);

/* ---------------------------------------------------------------- bcast */
int ck_bcast_linear(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_bcast_binomial_doubling(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_bcast_binomial_halving(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_bcast_scatter_allgather_rd(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_bcast_scatter_allgather_ring(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_bcast_chain(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);

int ck_bcast_bine(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_bcast_bine_scatter_allgather(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);

/* ---------------------------------------------------------------- reduce */
int ck_reduce_linear(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);
int ck_reduce_binomial_doubling(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);
int ck_reduce_binomial_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);
int ck_reduce_rabenseifner(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);

int ck_reduce_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);
int ck_reduce_bine_rsag(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);

/* ---------------------------------------------------------------- gather */
int ck_gather_linear(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_gather_binomial(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);

int ck_gather_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);

/* ---------------------------------------------------------------- scatter */
int ck_scatter_linear(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_scatter_binomial(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);

int ck_scatter_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);

/* ---------------------------------------------------------------- allgather */
int ck_allgather_ring(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_recursive_doubling(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_bruck(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_neighbor_exchange(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_sparbit(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);

int ck_allgather_bine_permute(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_bine_remap(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_bine_noncontig(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_swing(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);

/* ---------------------------------------------------------------- reduce_scatter */
int ck_reduce_scatter_recursive_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_reduce_scatter_ring(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_reduce_scatter_recursive_doubling(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

int ck_reduce_scatter_bine_permute(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_reduce_scatter_bine_remap(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_reduce_scatter_bine_noncontig(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_reduce_scatter_swing(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

/* ---------------------------------------------------------------- allreduce */
int ck_allreduce_recursive_doubling(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_rabenseifner(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_ring(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_reduce_bcast(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_binary_blocks(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

int ck_allreduce_bine_latency(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_bine_bandwidth(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_bine_bandwidth_seg(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_swing_latency(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_swing_bandwidth(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

/* ---------------------------------------------------------------- alltoall */
int ck_alltoall_linear(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_alltoall_pairwise(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_alltoall_bruck(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);

int ck_alltoall_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);

/* ---------------------------------------------------------------- registry */

typedef enum {
    CK_BCAST = 0,
    CK_REDUCE,
    CK_GATHER,
    CK_SCATTER,
    CK_ALLGATHER,
    CK_REDUCE_SCATTER,
    CK_ALLREDUCE,
    CK_ALLTOALL,
    CK_NUM_COLLECTIVES
} ck_collective;

/* Constraint flags of an algorithm (ck_algorithm.constraints). Called outside
 * them, an algorithm returns an MPI error code. */
#define CK_REQUIRES_COMMUTATIVE 0x1u /* refuses non-commutative ops (MPI_ERR_OP) */
#define CK_REQUIRES_POW2_RANKS  0x2u /* refuses p that is not a power of two */

typedef struct {
    ck_collective collective;
    const char *name;        /* same name across backends: "ring", "bruck", ... */
    const char *description; /* one line */
    const char *origin;      /* paper or library it comes from */
    unsigned constraints;    /* CK_REQUIRES_* flags */
    size_t min_count;        /* smallest supported count (0: any) */
    union {
        ck_bcast_fn bcast;
        ck_reduce_fn reduce;
        ck_gather_fn gather;
        ck_scatter_fn scatter;
        ck_allgather_fn allgather;
        ck_reduce_scatter_fn reduce_scatter;
        ck_allreduce_fn allreduce;
        ck_alltoall_fn alltoall;
    } fn;
} ck_algorithm;

/* Number of registered algorithms, and the i-th (NULL when out of range). */
size_t ck_algorithm_count(void);
const ck_algorithm *ck_algorithm_at(size_t i);

/* Look an algorithm up by collective and name; NULL when unknown. */
const ck_algorithm *ck_algorithm_find(ck_collective coll, const char *name);

/* "bcast", "reduce", ...; NULL for an invalid value. */
const char *ck_collective_name(ck_collective coll);

/* Parse a collective name; returns 0 and sets *coll, or -1 when unknown. */
int ck_collective_parse(const char *name, ck_collective *coll);

/* Whether a collective takes an MPI_Op / a root. */
int ck_collective_has_op(ck_collective coll);
int ck_collective_has_root(ck_collective coll);

/* Write the registry as a JSON array to f; returns 0 or -1 on I/O error. */
int ck_registry_write_json(FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* COLLKIT_COLLKIT_H */
