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
int ck_reduce_rabenseifner_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);

int ck_reduce_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);
int ck_reduce_bine_rsag(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);

/* ---------------------------------------------------------------- gather */
int ck_gather_linear(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_gather_binomial(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);

int ck_gather_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_gather_bine_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);

/* ---------------------------------------------------------------- scatter */
int ck_scatter_linear(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_scatter_binomial(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);

int ck_scatter_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);
int ck_scatter_bine_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm);

/* ---------------------------------------------------------------- allgather */
int ck_allgather_ring(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_recursive_doubling(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_bruck(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_neighbor_exchange(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_sparbit(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);

int ck_allgather_bine_permute(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_butterfly_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_bine_remap(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_bine_noncontig(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_allgather_swing(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);

/* Node-aware (ck_nodes_get): Barati Sedeh, Grant & Afsahi's Parallel Rings. */
int ck_allgather_parallel_rings(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);

/* ---------------------------------------------------------------- reduce_scatter */
int ck_reduce_scatter_recursive_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_reduce_scatter_ring(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_reduce_scatter_recursive_doubling(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

int ck_reduce_scatter_bine_permute(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_reduce_scatter_butterfly_doubling(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_reduce_scatter_bine_remap(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_reduce_scatter_bine_noncontig(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_reduce_scatter_swing(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

int ck_reduce_scatter_parallel_rings(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

/* ---------------------------------------------------------------- allreduce */
int ck_allreduce_recursive_doubling(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_rabenseifner(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_rabenseifner_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_ring(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_ring_seg(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_reduce_bcast(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_binary_blocks(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

int ck_allreduce_bine_latency(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_bine_latency_agreed(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_bine_bandwidth(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_bine_bandwidth_seg(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_swing_latency(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_swing_latency_agreed(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_swing_bandwidth(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

/* Node-aware (ck_nodes_get). */
int ck_allreduce_parallel_rings(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ck_allreduce_bine_hierarchical(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

/* ---------------------------------------------------------------- alltoall */
int ck_alltoall_linear(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_alltoall_pairwise(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_alltoall_bruck(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);

int ck_alltoall_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_alltoall_bine_butterfly(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);

/* Phased exchanges of Prisacari et al. (ICS'13), one sendrecv per phase. */
int ck_alltoall_xor(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_alltoall_linear_shift(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);
int ck_alltoall_fattree_opt(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm);

/* The fat tree FT(L; M1..ML) of alltoall/fattree_opt: the radices come from
 * the environment variable COLLKIT_FATTREE ("8,4,2" = M1,M2,M3, leaves under
 * the same level-1 switch numbered consecutively), read at every call; all
 * ranks must see the same value (mpirun exports it). Unset: one switch,
 * FT(1; p). When the product P divides p, the p/P ranks per node form an
 * extra leaf level (radices p/P, M1, ..., ML); otherwise MPI_ERR_ARG.
 * m holds CK_FATTREE_MAX_LEVELS + 1 entries. linear_shift reads its shift from
 * COLLKIT_LINEAR_SHIFT (an integer, default 0) once, at the process's first
 * call; all ranks must see the same value. */
#define CK_FATTREE_ENV "COLLKIT_FATTREE"
#define CK_LINEAR_SHIFT_ENV "COLLKIT_LINEAR_SHIFT"
#define CK_FATTREE_MAX_LEVELS 16
int ck_fattree_radices(int p, int *m, int *levels);

/* ---------------------------------------------------------------- nodes */

/* The node structure of a communicator (lib/core/nodes.c): which ranks share
 * a node. Nodes are MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups, or,
 * when the environment variable COLLKIT_RANKS_PER_NODE=k is set (read once
 * per process; all ranks must see the same value), virtual nodes of k
 * consecutive ranks of MPI_COMM_WORLD, the last node short when k does not
 * divide the world size. Nodes are numbered in the order of their lowest
 * rank, local ranks in rank order. ck_nodes_get is collective on the first
 * call for a communicator (a split and an allgather); the result is cached on
 * the communicator and stays valid until it is freed. MPI_ERR_ARG for an
 * invalid COLLKIT_RANKS_PER_NODE (not a positive integer). */
#define CK_RANKS_PER_NODE_ENV "COLLKIT_RANKS_PER_NODE"
typedef struct {
    int size;               /* ranks in the communicator */
    int nodes;              /* number of nodes */
    int node, local_rank;   /* the calling rank's node and rank inside it */
    int local_size;         /* ranks on the calling rank's node */
    int equal;              /* every node holds the same number of ranks */
    int consecutive;        /* every node's ranks are consecutive ranks */
    int virtual_nodes;      /* declared by COLLKIT_RANKS_PER_NODE */
    const int *node_of;     /* [size] node of each rank */
    const int *local_of;    /* [size] local rank of each rank */
    const int *node_first;  /* [nodes + 1] start of each node in by_node */
    const int *by_node;     /* [size] ranks by node, then local rank */
} ck_nodes;
int ck_nodes_get(MPI_Comm comm, const ck_nodes **nodes);
/* COLLKIT_RANKS_PER_NODE: *k = 0 when unset; MPI_ERR_ARG when invalid. */
int ck_ranks_per_node_env(int *k);
/* The rank of local rank `local` of node `node`. */
static inline int ck_nodes_rank(const ck_nodes *n, int node, int local)
{
    return n->by_node[n->node_first[node] + local];
}

/* ---------------------------------------------------------------- ops */

/* The ops MPI predefines (MPI-4.1, 6.9.2, and the accumulate ops MPI_REPLACE
 * and MPI_NO_OP), by the names collkit's outputs, specs and profiles use:
 * "sum", "max", ..., "maxloc", "replace", "no_op" (lib/core/ops.c). */
typedef struct {
    const char *name;
    int reduction;  /* a predefined reduction op: commutative, any collective reduction may take it */
    int arithmetic; /* sum, max, min, prod: what a spec and collkit-bench measure and validate */
} ck_op_desc;

size_t ck_op_count(void);
const ck_op_desc *ck_op_at(size_t i);
const ck_op_desc *ck_op_find(const char *name);
/* The MPI handle of an op_desc; the desc of a predefined op, or NULL (a
 * program's own op, MPI_OP_NULL). */
MPI_Op ck_op_mpi(const ck_op_desc *d);
const ck_op_desc *ck_op_of(MPI_Op op);

/* ---------------------------------------------------------------- program conditions */

/* A rank's arrival after a call's first arrival, as the profile reports it and
 * collkit-bench replays it (program conditions, docs/bench-protocol.md): its
 * 0, 10, ..., 100 % quantiles. registry.json's "skew_quantiles". */
#define CK_SKEW_QUANTILES 11

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

/* Flags of an algorithm (ck_algorithm.constraints). CK_REQUIRES_* are
 * constraints: called outside them, an algorithm returns an MPI error code.
 * CK_TRAIT_* describe its message schedule for tools; they constrain nothing. */
#define CK_REQUIRES_COMMUTATIVE 0x1u /* refuses non-commutative ops (MPI_ERR_OP) */
#define CK_REQUIRES_POW2_RANKS  0x2u /* refuses p that is not a power of two */
#define CK_REQUIRES_FATTREE     0x4u /* refuses p unless ck_fattree_radices(p) fits (COLLKIT_FATTREE) */
#define CK_REQUIRES_EQUAL_NODES 0x8u /* refuses unless every node (ck_nodes_get) has the same number of ranks */
#define CK_TRAIT_WHOLE_VECTOR   0x100u /* every message is the whole vector (bytes a multiple of n at any count) */
/* Floating-point results may differ across ranks in the last bits: ranks add
 * the same inputs in different orders (integer results are still exact and
 * identical). The preload and `collkit tune` use such an algorithm for
 * floating-point reductions only when the user allows it (docs/preload.md). */
#define CK_TRAIT_FP_RANK_VARIANT 0x200u

typedef struct {
    ck_collective collective;
    const char *name;        /* same name across backends: "ring", "bruck", ... */
    const char *description; /* one line */
    const char *origin;      /* paper or library it comes from */
    unsigned constraints;    /* CK_REQUIRES_* and CK_TRAIT_* flags */
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

/* ---------------------------------------------------------------- collective descriptors */

/* Everything a tool needs to know about a collective, in one place: the
 * harness, the validator, the tracer and the Python side (through the JSON
 * export) read these instead of switching on the collective.
 *
 * Buffers are measured in blocks of `count` elements. A rank's send and
 * receive buffers hold 0, 1 or p blocks (CK_BLOCKS_P), with separate values
 * for the root and the other ranks; a collective without a root uses the
 * `other` values on every rank. Where MPI_IN_PLACE applies (every rank, or
 * only the root for rooted collectives), it replaces the send buffer (the
 * input then sits in the receive buffer, which holds max(send, recv) blocks)
 * or, for scatter, the receive buffer (the root keeps its block in sbuf).
 *
 * What the result is, as data: a data-movement collective's output block b
 * at rank r is the input block of rank `from_root ? root : b` at slot
 * `source_slot_is_dest ? r : 0`; a reduction's output element j at rank r
 * is the reduction over all ranks, in rank order, of input element
 * j + (result_is_own_block ? r * count : 0). */
#define CK_BLOCKS_P (-1)

typedef enum {
    CK_IN_PLACE_NONE = 0, /* MPI_IN_PLACE is not allowed (bcast) */
    CK_IN_PLACE_SEND,     /* sbuf = MPI_IN_PLACE */
    CK_IN_PLACE_RECV      /* rbuf = MPI_IN_PLACE (scatter) */
} ck_in_place_kind;

/* One call of a collective with MPI's own arguments, the same struct for all
 * eight (an interposer on MPI_* fills it from any of them). bcast's buffer is
 * the receive side; reductions give their count and datatype on both sides;
 * op and root are ignored where the collective has none. */
typedef struct ck_mpi_args {
    const void *sbuf;
    int scount;
    MPI_Datatype stype;
    void *rbuf;
    int rcount;
    MPI_Datatype rtype;
    MPI_Op op;
    int root;
    MPI_Comm comm;
} ck_mpi_args;

typedef struct {
    ck_collective id;
    const char *name;      /* "allreduce" */
    const char *mpi_name;  /* the MPI call a backend times: "MPI_Allreduce" */
    int has_root;          /* takes a root */
    int has_op;            /* takes an MPI_Op: a reduction */
    int per_block;         /* count is one rank's block, not the whole vector */
    ck_in_place_kind in_place;
    int send_blocks_root, send_blocks_other; /* 0, 1 or CK_BLOCKS_P */
    int recv_blocks_root, recv_blocks_other;
    int from_root;           /* data movement: output comes from the root */
    int source_slot_is_dest; /* data movement: the root/sender keeps one block per destination */
    int result_is_own_block; /* reduction: rank r's result is block r of the reduced vector */
    int replicated;          /* every rank ends with the same result */
    /* Bus bandwidth = algbw * (busbw_const + busbw_per_p * (p - 1) / p), as
     * nccl-tests defines it; algbw counts the vector bytes (p blocks of
     * `bytes` where per_block). */
    double busbw_const, busbw_per_p;
    /* Calls one of this collective's algorithms / the MPI library's own
     * collective (MPI_*, not PMPI_*: tools interposed on MPI see it) with
     * the uniform argument list of ck_algorithm_call. */
    int (*call)(const ck_algorithm *a, const void *sbuf, void *rbuf, size_t count,
                MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);
    int (*library_call)(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                        MPI_Op op, int root, MPI_Comm comm);
    /* The library's collective through PMPI_*, with MPI's own arguments: for
     * an interposer on MPI_* (libcollkit-preload), which must not call itself. */
    int (*pmpi_call)(const struct ck_mpi_args *args);
} ck_collective_desc;

/* The descriptor of a collective; NULL for an invalid value. */
const ck_collective_desc *ck_collective_describe(ck_collective coll);

/* Buffer sizes and result size, in elements, at `rank` (see above). MPI_IN_PLACE
 * is honoured when in_place is nonzero and applies at this rank; a buffer that is
 * MPI_IN_PLACE or not significant has 0 elements. */
int ck_collective_in_place_at(const ck_collective_desc *d, int in_place, int rank, int root);
size_t ck_collective_send_elems(const ck_collective_desc *d, size_t count, int p, int rank,
                                int root, int in_place);
size_t ck_collective_recv_elems(const ck_collective_desc *d, size_t count, int p, int rank,
                                int root, int in_place);
size_t ck_collective_result_elems(const ck_collective_desc *d, size_t count, int p, int rank,
                                  int root);

/* Bytes of the whole vector for a point of `bytes` per count (p blocks where
 * per_block), and the bus-bandwidth factor at p ranks. */
double ck_collective_vector_bytes(const ck_collective_desc *d, double bytes, int p);
double ck_collective_busbw_factor(const ck_collective_desc *d, int p);

/* Calls algorithm a with the uniform argument list: bcast takes rbuf as its
 * buffer; arguments a collective does not have (op, root, sbuf) are ignored.
 * MPI_ERR_ARG for a NULL or malformed algorithm. */
int ck_algorithm_call(const ck_algorithm *a, const void *sbuf, void *rbuf, size_t count,
                      MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);

/* The MPI library's own collective with the same argument list. */
int ck_library_call(ck_collective coll, const void *sbuf, void *rbuf, size_t count,
                    MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);

/* The library's collective through PMPI_* with MPI's own arguments
 * (descriptor's pmpi_call). MPI_ERR_ARG for an invalid collective. */
int ck_pmpi_call(ck_collective coll, const ck_mpi_args *args);

/* What a call's buffers are at one rank, from the descriptor, in elements of
 * each side's own count and datatype: a buffer with 0 elements is not
 * significant here or is MPI_IN_PLACE. */
typedef struct {
    size_t send_elems, recv_elems;
    int recv_in;         /* rbuf holds this rank's input (in place, or bcast's root) */
    int recv_out;        /* rbuf receives a result that is not already there */
    int block_from_send; /* rbuf is not significant here: the block (one rank's
                          * count times its datatype's size, equal on every rank
                          * by MPI's type-signature rule) is read on the send side */
} ck_mpi_roles;

/* The roles of args' buffers at `rank` of p (MPI_IN_PLACE read from args).
 * Only the counts MPI reads at `rank` are validated and used: a side that is
 * not significant there (scatter's send side at a non-root, gather's and
 * reduce's receive side at a non-root, the side MPI_IN_PLACE replaces) may hold
 * anything, e.g. NULL, -1, MPI_DATATYPE_NULL. Returns 0, or -1 for an invalid
 * collective or a negative significant count. */
int ck_mpi_roles_of(ck_collective coll, const ck_mpi_args *args, int p, int rank,
                    ck_mpi_roles *roles);

/* The bytes of one block of a call at this rank, as libcollkit-preload's
 * rules and profile count it: the block's count times its datatype's size,
 * read on the side `roles` (ck_mpi_roles_of at this rank) says is significant
 * here, and equal on every rank by MPI's type-signature rule. A block of 0
 * elements is 0 bytes whatever its datatype. MPI_SUCCESS, or the error of
 * MPI_Type_size on that side's datatype. */
int ck_mpi_block_bytes(const ck_mpi_roles *roles, const ck_mpi_args *args, size_t *bytes);

/* ---------------------------------------------------------------- datatypes */

/* The predefined datatypes the tools name: "int8", "int32", "int64",
 * "float", "double". */
typedef struct {
    const char *name;
    size_t size; /* bytes */
    int is_float;
} ck_datatype_desc;

size_t ck_datatype_count(void);
const ck_datatype_desc *ck_datatype_at(size_t i);
const ck_datatype_desc *ck_datatype_find(const char *name);
/* The MPI handle of a datatype_desc (a function: handles are not constants in every MPI). */
MPI_Datatype ck_datatype_mpi(const ck_datatype_desc *d);

/* ---------------------------------------------------------------- registry */

/* Number of registered algorithms, and the i-th (NULL when out of range). */
size_t ck_algorithm_count(void);
const ck_algorithm *ck_algorithm_at(size_t i);

/* Look an algorithm up by collective and name; NULL when unknown. */
const ck_algorithm *ck_algorithm_find(ck_collective coll, const char *name);

/* "bcast", "reduce", ...; NULL for an invalid value. */
const char *ck_collective_name(ck_collective coll);

/* Parse a collective name; returns 0 and sets *coll, or -1 when unknown. */
int ck_collective_parse(const char *name, ck_collective *coll);

/* Whether a collective takes an MPI_Op / a root (its descriptor's has_op, has_root). */
int ck_collective_has_op(ck_collective coll);
int ck_collective_has_root(ck_collective coll);

/* Write the registry as JSON to f: {"collectives": [descriptors],
 * "datatypes": [...], "ops": [...], "skew_quantiles": N, "algorithms": [...]};
 * returns 0 or -1 on I/O error. */
int ck_registry_write_json(FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* COLLKIT_COLLKIT_H */
