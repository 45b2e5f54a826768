/* The butterfly of bine_latency (lib/allreduce/bine.c), once: the whole
 * vector at every step with the Bine partner at distance |rho(k)|, as the
 * papers' code runs it and nothing more. With agree (bine_latency_agreed),
 * from p' = 8 on, virtual rank 0's result is then broadcast over the core so
 * every member returns the same bits. Shared by the flat allreduces (members
 * are the communicator's ranks) and bine_hierarchical (members are the node
 * leaders): the member -> rank map is the only difference. */
#include "bine_tree.h"
#include "collkit/spans.h"

static int rank_of(int member, int (*map)(const void *, int), const void *ctx)
{
    return map ? map(ctx, member) : member;
}

int ck_bine_latency_core(void *rbuf, void *tmp, size_t count, MPI_Datatype dt, MPI_Op op, int v,
                         int members, int (*map)(const void *, int), const void *ctx, int agree,
                         int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    const int p2 = ck_pow2_floor(members), s = ck_log2_ceil(p2);
    CK_SPAN_BEGIN("butterfly");
    for (int k = 0; k < s; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        const int q = rank_of(ck_bine_fold_peer(v, k, p2, 0, members), map, ctx);
        CK_TRY(ck_sendrecv(rbuf, count, q, tmp, count, q, dt, tag, comm));
        CK_TRY(ck_reduce_local(tmp, rbuf, count, dt, op));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("butterfly");
    /* The butterfly's partners hold overlapping rank sets (0 has {0,1,6,7}
     * after step 1 at p' = 8, 1 has {0,1,2,3}), so the members add the same
     * p' inputs in p'/4 different trees once p' >= 8, and a float or double
     * sum differs in its last bits between them (CK_TRAIT_FP_RANK_VARIANT of
     * bine_latency / swing_latency; tests/matrix.c shows it). No reordering
     * of the operands at a step can make the trees agree: with agree, virtual
     * rank 0's result is broadcast over the core instead (binomial, distance
     * halving, log2 p' more steps of n bytes). At p' <= 4 all trees are one
     * and nothing is sent. */
    if (agree && p2 >= 8) {
        CK_SPAN_BEGIN("agree");
        for (int k = s - 1; k >= 0; k--) {
            CK_SPAN_BEGIN_STEP("step", s + (s - 1 - k));
            const int d = 1 << k;
            if (v % (2 * d) == 0)
                CK_TRY(ck_send(rbuf, count, dt,
                               rank_of(ck_fold_rank_of(v + d, CK_FOLD_KEEP_EVEN, 0, members), map,
                                       ctx),
                               tag, comm));
            else if (v % (2 * d) == d)
                CK_TRY(ck_recv(rbuf, count, dt,
                               rank_of(ck_fold_rank_of(v - d, CK_FOLD_KEEP_EVEN, 0, members), map,
                                       ctx),
                               tag, comm));
            CK_SPAN_END("step");
        }
        CK_SPAN_END("agree");
    }
out:
    return rc;
}
