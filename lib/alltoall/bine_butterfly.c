/* Bine butterfly alltoall (De Sensi et al., "Bine Trees: Enhancing
 * Collective Operations by Optimizing Communication Locality", SC'25): the
 * store-and-forward exchange of Bruck's algorithm (log2 p steps, half of the
 * data each step) on the pairs of a Bine butterfly instead of Bruck's shifts.
 *
 * At step k = 0..s-1 rank v swaps data with its butterfly partner
 * ck_bine_partner(v, k) (v + rho(k) from an even rank, v - rho(k) from an odd
 * one, |rho(k)| = 1, 1, 3, 5, 11, ... ~ 2^(k+1)/3) where Bruck sends to
 * v + 2^k and receives from v - 2^k. With the butterfly numbering nu
 * (lib/core/bine_tree.h: partners at step k agree in nu's bits below k and
 * differ in bit k), before step k a rank holds, from the sources its
 * butterfly has reached (itself, and what its partner at step k-1 had
 * reached), the blocks for the destinations whose nu agrees with its own
 * below bit k; it sends its partner the blocks whose destination's bit k is
 * the partner's and takes the blocks of the partner's sources for its own
 * half. After s steps it holds the block of every source for itself. Each
 * step moves p/2 blocks each way, as Bruck's does, over about 2/3 of its
 * distance; the other Bine alltoall (lib/alltoall/bine.c) keeps Bruck's
 * pairs of ranks (distances 1, 2, 4, ... signed) and so its bytes on the
 * network.
 *
 * Layout: the held blocks are a (sources x destinations) grid, both in rank
 * order, row by row; every step builds the next grid from the rows kept and
 * the rows received, so sender and receiver agree on the order of every
 * message without sending it.
 *
 * Non-power-of-two p: ranks are folded onto the p' = 2^floor(log2 p) core
 * (CK_FOLD_KEEP_EVEN, root 0): 2i+1 (i < e = p - p') hands its p blocks to 2i
 * first and gets its p results back last, and the core moves blocks by the
 * nu of the virtual rank that owns their destination. Virtual rank i then
 * carries two sources' and two destinations' rows, so messages are up to
 * twice as large. */
#include <stdlib.h>
#include <string.h>

#include "../core/bine.h"
#include "../core/bine_tree.h"
#include "../core/ck_core.h"
#include "collkit/spans.h"

typedef struct {
    int *q; /* real ranks in increasing order */
    int n;
} rank_set;

/* The real ranks q whose owner's nu satisfies (nu(owner(q)) ^ want) & mask == 0. */
static void select_ranks(rank_set *out, const int *nu_of, int p, int mask, int want)
{
    out->n = 0;
    for (int q = 0; q < p; q++)
        if (((nu_of[q] ^ want) & mask) == 0) out->q[out->n++] = q;
}

/* Marks the virtual ranks whose blocks v holds after steps 0..k-1: its own,
 * and recursively those its partner at step k-1 held before that step. (Not
 * a range of nu: partners agree in nu's low bits only.) */
static void mark_sources(char *mark, int v, int k, int pof2)
{
    if (k == 0) {
        mark[v] = 1;
        return;
    }
    mark_sources(mark, v, k - 1, pof2);
    mark_sources(mark, ck_bine_partner(v, k - 1, pof2), k - 1, pof2);
}

/* The real ranks owned by the virtual ranks v holds blocks from after k steps. */
static void select_sources(rank_set *out, char *mark, int v, int k, int pof2, int p, int rem)
{
    memset(mark, 0, (size_t)pof2);
    mark_sources(mark, v, k, pof2);
    out->n = 0;
    for (int q = 0; q < p; q++)
        if (mark[ck_fold_owner(q, rem)]) out->q[out->n++] = q;
}

int ck_alltoall_bine_butterfly(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                               MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint extent;
    const void *src;
    ck_tmp grid = {0}, next = {0}, sendbuf = {0}, recvbuf = {0};
    int *nu_of = NULL, *mem = NULL;
    char *mark = NULL;

    CK_TRY(ck_alltoall_blocks_open(sbuf, rbuf, count, dt, comm, &rank, &size, &extent, &src,
                                   &done));
    if (done) goto out;
    /* A folded core's messages carry up to 2p blocks; every rank computes the
     * same bound, so all of them refuse together. */
    if ((size_t)2 * size * count > CK_MAX_COUNT) {
        rc = MPI_ERR_COUNT;
        goto out;
    }

    const int p = size, tag = CK_TAG(CK_ALLTOALL);
    const size_t blk = count;
#define BLK(buf, i) ck_elem((buf), (size_t)(i) * blk, extent)
    const ck_fold f = ck_fold_of(rank, 0, p, CK_FOLD_KEEP_EVEN);
    if (f.vrank < 0) {
        /* Dropped out: the partner exchanges this rank's blocks for it. */
        CK_TRY(ck_fold_in(&f, src, NULL, NULL, (size_t)p * blk, dt, MPI_OP_NULL, tag, comm));
        CK_TRY(ck_fold_out(&f, NULL, rbuf, (size_t)p * blk, dt, tag, comm));
        goto out;
    }

    const int pof2 = ck_pow2_floor(p), s = ck_log2_ceil(pof2), rem = ck_fold_rem(p);
    const int v = f.vrank, me = ck_bine_nu(v, pof2, s);
    nu_of = malloc((size_t)p * sizeof *nu_of);
    mem = malloc((size_t)5 * p * sizeof *mem);
    mark = malloc((size_t)pof2);
    if (nu_of == NULL || mem == NULL || mark == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    for (int q = 0; q < p; q++) nu_of[q] = ck_bine_nu(ck_fold_owner(q, rem), pof2, s);
    rank_set srcs = {mem, 0}, dsts = {mem + p, 0}, psrcs = {mem + 2 * p, 0};
    rank_set keep = {mem + 3 * p, 0}, give = {mem + 4 * p, 0};

    /* The grid: this virtual rank's sources (its own rank, and its fold
     * partner's after it) x every destination. Sources and destinations
     * together are at most 4p blocks (2 * 2^k sources x 2 * p'/2^k
     * destinations). */
    CK_TRY(ck_tmp_alloc(&grid, (size_t)4 * p * blk, dt));
    CK_TRY(ck_tmp_alloc(&next, (size_t)4 * p * blk, dt));
    CK_TRY(ck_tmp_alloc(&sendbuf, (size_t)2 * p * blk, dt));
    CK_TRY(ck_tmp_alloc(&recvbuf, (size_t)2 * p * blk, dt));
    CK_TRY(ck_copy(src, grid.buf, (size_t)p * blk, dt));
    CK_TRY(ck_fold_in(&f, NULL, BLK(grid.buf, p), NULL, (size_t)p * blk, dt, MPI_OP_NULL, tag,
                      comm));
    select_ranks(&dsts, nu_of, p, 0, 0);

    CK_SPAN_BEGIN("butterfly");
    for (int k = 0; k < s; k++) {
        const int bit = 1 << k, low = bit - 1;
        const int u = ck_bine_partner(v, k, pof2);
        const int peer = ck_fold_rank_of(u, CK_FOLD_KEEP_EVEN, 0, p);
        /* This rank keeps the destinations with its own bit k, the partner
         * takes the others. */
        select_ranks(&keep, nu_of, p, low | bit, me);
        select_ranks(&give, nu_of, p, low | bit, me ^ bit);
        select_sources(&srcs, mark, v, k, pof2, p, rem);
        select_sources(&psrcs, mark, u, k, pof2, p, rem);

        /* Pack the given columns of every row, rows in order. */
        size_t at = 0;
        for (int i = 0; i < srcs.n; i++)
            for (int j = 0, g = 0; j < dsts.n && g < give.n; j++)
                if (dsts.q[j] == give.q[g]) {
                    CK_TRY(ck_copy(BLK(grid.buf, (size_t)i * dsts.n + j), BLK(sendbuf.buf, at++),
                                   blk, dt));
                    g++;
                }
        CK_SPAN_BEGIN_STEP("step", k);
        CK_TRY(ck_sendrecv(sendbuf.buf, (size_t)srcs.n * give.n * blk, peer, recvbuf.buf,
                           (size_t)psrcs.n * keep.n * blk, peer, dt, tag, comm));
        CK_SPAN_END("step");

        /* The next grid: both source sets merged in rank order, an own row
         * keeping its kept columns, a received row whole. */
        size_t row = 0;
        for (int a = 0, b = 0; a < srcs.n || b < psrcs.n; row++) {
            if (b == psrcs.n || (a < srcs.n && srcs.q[a] < psrcs.q[b])) {
                for (int j = 0, c = 0; j < dsts.n && c < keep.n; j++)
                    if (dsts.q[j] == keep.q[c]) {
                        CK_TRY(ck_copy(BLK(grid.buf, (size_t)a * dsts.n + j),
                                       BLK(next.buf, row * keep.n + c), blk, dt));
                        c++;
                    }
                a++;
            } else {
                CK_TRY(ck_copy(BLK(recvbuf.buf, (size_t)b * keep.n), BLK(next.buf, row * keep.n),
                               (size_t)keep.n * blk, dt));
                b++;
            }
        }
        ck_tmp t = grid;
        grid = next;
        next = t;
        select_ranks(&dsts, nu_of, p, low | bit, me);
    }
    CK_SPAN_END("butterfly");

    /* Every source's row now holds its blocks for this virtual rank's
     * destinations: this rank's column, then the fold partner's. */
    for (int i = 0; i < p; i++)
        CK_TRY(ck_copy(BLK(grid.buf, (size_t)i * dsts.n), BLK(rbuf, i), blk, dt));
    if (dsts.n == 2) {
        for (int i = 0; i < p; i++)
            CK_TRY(ck_copy(BLK(grid.buf, (size_t)i * 2 + 1), BLK(sendbuf.buf, i), blk, dt));
        CK_TRY(ck_fold_out(&f, sendbuf.buf, NULL, (size_t)p * blk, dt, tag, comm));
    }
#undef BLK
out:
    ck_tmp_free(&grid);
    ck_tmp_free(&next);
    ck_tmp_free(&sendbuf);
    ck_tmp_free(&recvbuf);
    free(nu_of);
    free(mem);
    free(mark);
    return rc;
}
