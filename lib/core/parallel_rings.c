/* Parallel Rings: the allgather and reduce-scatter halves (see
 * parallel_rings.h for the schedule and the paper). */
#include "parallel_rings.h"
#include "collkit/spans.h"

int ck_pr_check(const ck_nodes *nd)
{
    return nd->equal ? MPI_SUCCESS : MPI_ERR_ARG;
}

/* This rank's place: node n of N, local rank l of k, ring neighbours. */
typedef struct {
    int N, k, n, l, left, right;
} rails;

static rails rails_of(const ck_nodes *nd)
{
    rails r = {nd->nodes, nd->local_size, nd->node, nd->local_rank, 0, 0};
    r.right = ck_nodes_rank(nd, (r.n + 1) % r.N, r.l);
    r.left = ck_nodes_rank(nd, (r.n - 1 + r.N) % r.N, r.l);
    return r;
}

int ck_pr_allgather(void *buf, const ck_pr_layout *L, MPI_Datatype dt, const ck_nodes *nd,
                    int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    MPI_Aint ext;
    const rails R = rails_of(nd);
    MPI_Request *reqs = malloc((size_t)2 * (size_t)(R.k + 1) * sizeof *reqs);
    if (reqs == NULL) return MPI_ERR_NO_MEM;
    CK_TRY(ck_type_extent(dt, &ext));

    CK_SPAN_BEGIN("allgather");
    for (int r = 0; r < R.N; r++) {
        CK_SPAN_BEGIN_STEP("step", r);
        int nreq = 0;
        /* The rail block of node d: own at r = 0, then the one ring step
         * r - 1 brought, going round the ring backwards. */
        const int d = (R.n - r + R.N) % R.N;
        const int mine = ck_nodes_rank(nd, d, R.l);
        char *mblk = ck_elem(buf, ck_pr_offset(L, mine), ext);
        for (int j = 0; j < R.k; j++) {
            if (j == R.l) continue;
            const int peer = ck_nodes_rank(nd, R.n, j), theirs = ck_nodes_rank(nd, d, j);
            CK_TRY(ck_irecv(ck_elem(buf, ck_pr_offset(L, theirs), ext), ck_pr_count(L, theirs),
                            dt, peer, tag, comm, &reqs[nreq++]));
            CK_TRY(ck_isend(mblk, ck_pr_count(L, mine), dt, peer, tag, comm, &reqs[nreq++]));
        }
        if (r < R.N - 1) {
            const int next = ck_nodes_rank(nd, (d - 1 + R.N) % R.N, R.l);
            CK_TRY(ck_irecv(ck_elem(buf, ck_pr_offset(L, next), ext), ck_pr_count(L, next), dt,
                            R.left, tag, comm, &reqs[nreq++]));
            CK_TRY(ck_isend(mblk, ck_pr_count(L, mine), dt, R.right, tag, comm, &reqs[nreq++]));
        }
        rc = ck_waitall(nreq, reqs);
        nreq = 0;
        if (rc != MPI_SUCCESS) goto out;
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
out:
    /* An error between a post and its wait leaves requests behind; they
     * cannot be cancelled portably, so the call fails with them pending, as
     * any MPI error leaves the communicator undefined. */
    free(reqs);
    return rc;
}

int ck_pr_reduce_scatter(const void *in, void *res, const ck_pr_layout *L, MPI_Datatype dt,
                         MPI_Op op, const ck_nodes *nd, int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    MPI_Aint ext;
    const rails R = rails_of(nd);
    const size_t maxc = ck_pr_count(L, 0); /* block 0 is never the shorter */
    ck_tmp acc = {0}, ring = {0}, peers = {0};
    MPI_Request *reqs = malloc((size_t)2 * (size_t)(R.k + 1) * sizeof *reqs);
    if (reqs == NULL) return MPI_ERR_NO_MEM;
    CK_TRY(ck_type_extent(dt, &ext));
    CK_TRY(ck_tmp_alloc(&acc, maxc, dt));
    CK_TRY(ck_tmp_alloc(&ring, maxc, dt));
    CK_TRY(ck_tmp_alloc(&peers, (size_t)(R.k - 1) * maxc, dt));

    CK_SPAN_BEGIN("reduce_scatter");
    int sent = -1; /* rank of the block whose partial sum sits in acc */
    for (int r = 0; r < R.N; r++) {
        CK_SPAN_BEGIN_STEP("step", r);
        int nreq = 0;
        /* Round r gathers the node's inputs of the rail block of node
         * n - r - 1, the one ring step r sends (the own block last). */
        const int d = (R.n - r - 1 + 2 * R.N) % R.N;
        const int mine = ck_nodes_rank(nd, d, R.l);
        const size_t mc = ck_pr_count(L, mine);
        for (int j = 0, slot = 0; j < R.k; j++) {
            if (j == R.l) continue;
            const int peer = ck_nodes_rank(nd, R.n, j), theirs = ck_nodes_rank(nd, d, j);
            CK_TRY(ck_irecv(ck_elem(peers.buf, (size_t)slot++ * maxc, ext), mc, dt, peer, tag,
                            comm, &reqs[nreq++]));
            CK_TRY(ck_isend(ck_elem(in, ck_pr_offset(L, theirs), ext), ck_pr_count(L, theirs),
                            dt, peer, tag, comm, &reqs[nreq++]));
        }
        if (r > 0) {
            /* Ring step r - 1: the partial sum of the previous round's block
             * goes right, the left neighbour's of this round's comes in. */
            CK_TRY(ck_irecv(ring.buf, mc, dt, R.left, tag, comm, &reqs[nreq++]));
            CK_TRY(ck_isend(acc.buf, ck_pr_count(L, sent), dt, R.right, tag, comm,
                            &reqs[nreq++]));
        }
        rc = ck_waitall(nreq, reqs);
        if (rc != MPI_SUCCESS) goto out;
        /* acc is free again: the node's sum of this block, plus the ring's. */
        CK_TRY(ck_copy(ck_elem(in, ck_pr_offset(L, mine), ext), acc.buf, mc, dt));
        for (int s = 0; s < R.k - 1; s++)
            CK_TRY(ck_reduce_local(ck_elem(peers.buf, (size_t)s * maxc, ext), acc.buf, mc, dt, op));
        if (r > 0) CK_TRY(ck_reduce_local(ring.buf, acc.buf, mc, dt, op));
        sent = mine;
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");
    /* After round N - 1 acc holds this rank's block (d = n). */
    CK_TRY(ck_copy(acc.buf, res, ck_pr_count(L, sent), dt));
out:
    ck_tmp_free(&acc);
    ck_tmp_free(&ring);
    ck_tmp_free(&peers);
    free(reqs);
    return rc;
}
