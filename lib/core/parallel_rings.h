/* The two halves of the Parallel Rings collectives (Barati Sedeh, Grant &
 * Afsahi, "Scalable, Topology- and Multi-HCA-Aware Hierarchical GPU
 * Allgather Using Parallel Rings"), shared by allgather, reduce_scatter and
 * allreduce (lib/core/parallel_rings.c).
 *
 * N nodes of k ranks each (ck_nodes_get; equal counts required): the ranks
 * with the same local rank l form rail l, a ring over the nodes in node
 * order. Rail l carries only the blocks that belong to its ranks, so each
 * ring has N - 1 steps (P/k - 1), and the k rings run side by side, one per
 * NIC when each local rank is bound to its own. The other blocks reach a rank
 * over the node: the intra-node exchange of round r is overlapped with ring
 * step r (nonblocking point-to-point, one wait per round). */
#ifndef COLLKIT_PARALLEL_RINGS_H
#define COLLKIT_PARALLEL_RINGS_H

#include "ck_core.h"

/* Where the p blocks sit: block r holds `count` elements at r * count, or,
 * when `total` is nonzero, ck_block_count(total, p, r) elements at
 * ck_block_offset(total, p, r) (allreduce's split of one vector). */
typedef struct {
    size_t count;
    size_t total;
    int p;
} ck_pr_layout;

static inline size_t ck_pr_count(const ck_pr_layout *L, int r)
{
    return L->total ? ck_block_count(L->total, L->p, r) : L->count;
}

static inline size_t ck_pr_offset(const ck_pr_layout *L, int r)
{
    return L->total ? ck_block_offset(L->total, L->p, r) : (size_t)r * L->count;
}

/* MPI_ERR_ARG unless every node of nd has the same number of ranks. The
 * structure is the same on every rank, so every rank refuses alike. */
int ck_pr_check(const ck_nodes *nd);

/* Allgather in place: buf holds the p blocks, this rank's own block already
 * in place; on return all of them. N rounds: in round r a rank sends the
 * rail block it got in ring step r - 1 (its own in round 0) to its k - 1
 * node peers, receives theirs, and, for r < N - 1, runs ring step r. */
int ck_pr_allgather(void *buf, const ck_pr_layout *L, MPI_Datatype dt, const ck_nodes *nd,
                    int tag, MPI_Comm comm);

/* Reduce-scatter (commutative op): in holds the p input blocks; res receives
 * the reduction of this rank's block (it may be in, or its own block: it is
 * written last, after every message). N rounds: round 0 reduces, over the
 * node, the rail block the ring sends first; round r >= 1 runs ring step
 * r - 1 and, alongside, the node reduction of the block the ring needs next. */
int ck_pr_reduce_scatter(const void *in, void *res, const ck_pr_layout *L, MPI_Datatype dt,
                         MPI_Op op, const ck_nodes *nd, int tag, MPI_Comm comm);

#endif
