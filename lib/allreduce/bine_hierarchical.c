/* Node-aware Bine allreduce (the hierarchical variant of PICO and the Bine
 * paper): a binomial reduce to local rank 0 of every node, the Bine
 * butterfly (bine_latency_agreed's: whole vector, distance |rho(k)|, folding
 * for a non-power-of-two node count, one leader's result broadcast from N' = 8
 * on) among those node leaders only, and a binomial
 * broadcast inside every node. Leaders only, not all rails: it works for any
 * node shape (uneven nodes, scattered placement), and it is the latency
 * variant, where splitting the vector over the rails would add two
 * intra-node phases to save bytes that are few; the rail-parallel bandwidth
 * case is what parallel_rings is for. Commutative ops only. */
#include "../core/bine_tree.h"
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* Binomial reduce to local rank 0 (into acc) over the node's ranks. */
static int node_reduce(void *acc, void *tmp, size_t count, MPI_Datatype dt, MPI_Op op,
                       const ck_nodes *nd, int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    const int l = nd->local_rank, k = nd->local_size;
    CK_SPAN_BEGIN("node_reduce");
    for (int mask = 1; mask < k; mask <<= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_low_bit(mask));
        if (l & mask) {
            rc = ck_send(acc, count, dt, ck_nodes_rank(nd, nd->node, l - mask), tag, comm);
            CK_SPAN_END("step");
            break;
        }
        if (l + mask < k) {
            CK_TRY(ck_recv(tmp, count, dt, ck_nodes_rank(nd, nd->node, l + mask), tag, comm));
            CK_TRY(ck_reduce_local(tmp, acc, count, dt, op));
        }
        CK_SPAN_END("step");
    }
    CK_SPAN_END("node_reduce");
out:
    return rc;
}

/* Binomial broadcast from local rank 0 over the node's ranks. */
static int node_bcast(void *buf, size_t count, MPI_Datatype dt, const ck_nodes *nd, int tag,
                      MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    const int l = nd->local_rank, k = nd->local_size;
    CK_SPAN_BEGIN("node_bcast");
    for (int mask = (1 << ck_log2_ceil(k)) / 2; mask >= 1; mask >>= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_low_bit(mask));
        const int low = l & (2 * mask - 1);
        if (low == 0 && l + mask < k)
            CK_TRY(ck_send(buf, count, dt, ck_nodes_rank(nd, nd->node, l + mask), tag, comm));
        else if (low == mask)
            CK_TRY(ck_recv(buf, count, dt, ck_nodes_rank(nd, nd->node, l - mask), tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("node_bcast");
out:
    return rc;
}

/* The rank of the leader of node (real index) q. */
static int leader(const void *nd, int q) { return ck_nodes_rank(nd, q, 0); }

/* bine_latency_agreed's butterfly over the N leaders, node indices as
 * ranks: with the agreement broadcast, so that every leader, and through it
 * every rank, returns the same bits (no CK_TRAIT_FP_RANK_VARIANT). */
static int leaders_allreduce(void *rbuf, void *tmp, size_t count, MPI_Datatype dt, MPI_Op op,
                             const ck_nodes *nd, int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    const int N = nd->nodes;
    ck_fold f = ck_fold_of(nd->node, 0, N, CK_FOLD_KEEP_EVEN);
    if (f.partner >= 0) f.partner = leader(nd, f.partner);
    CK_TRY(ck_fold_in(&f, rbuf, tmp, rbuf, count, dt, op, tag, comm));
    if (f.vrank >= 0)
        CK_TRY(ck_bine_latency_core(rbuf, tmp, count, dt, op, f.vrank, N, leader, nd, 1, tag, comm));
    CK_TRY(ck_fold_out(&f, rbuf, rbuf, count, dt, tag, comm));
out:
    return rc;
}

int ck_allreduce_bine_hierarchical(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                   MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size;
    const ck_nodes *nd;
    ck_tmp tmp = {0};
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, 1, NULL, comm, &rank, &size));
    if (sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
    if (count == 0 || size == 1) goto out;
    CK_TRY(ck_nodes_get(comm, &nd));
    CK_TRY(ck_tmp_alloc(&tmp, count, dt));
    const int tag = CK_TAG(CK_ALLREDUCE);
    CK_TRY(node_reduce(rbuf, tmp.buf, count, dt, op, nd, tag, comm));
    if (nd->local_rank == 0) CK_TRY(leaders_allreduce(rbuf, tmp.buf, count, dt, op, nd, tag, comm));
    CK_TRY(node_bcast(rbuf, count, dt, nd, tag, comm));
out:
    ck_tmp_free(&tmp);
    return rc;
}
