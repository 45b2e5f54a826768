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
 * Layout: the held blocks form a grid of (sources x destinations), read
 * column by column. Destinations are in sigma = bit_reverse(nu) order of
 * their virtual rank (bine_permute's numbering), so the columns a rank holds
 * are an aligned sigma range and the half it gives at step k is the lower or
 * upper one. Sources are in butterfly order, rows(v, k+1) = rows(v, k) then
 * rows(partner, k), so each side knows the order of the blocks it receives.
 * The blocks themselves never move between steps: each sits in a slot of
 * one of two work buffers, a step sends from the given slots and receives
 * into the same slots of the other buffer (as libcollkit's Bruck does,
 * through a datatype of the blocks' addresses, lib/core/scattered.h; small
 * steps pack instead), and only the grid of slot numbers is rebuilt. Local
 * copies: the input once (one run), and the blocks to rbuf at the end.
 *
 * Non-power-of-two p: ranks are folded onto the p' = 2^floor(log2 p) core
 * (CK_FOLD_KEEP_EVEN, root 0): 2i+1 (i < e = p - p') hands its p blocks to 2i
 * first and gets its p results back last, and the core moves blocks by the
 * nu of the virtual rank that owns their destination. Virtual rank i then
 * carries two sources' rows and two destinations' columns, so messages are
 * up to twice as large. */
#include <stdlib.h>
#include <string.h>

#include "../core/bine.h"
#include "../core/bine_tree.h"
#include "../core/ck_core.h"
#include "../core/scattered.h"
#include "collkit/spans.h"

/* Blocks (real source ranks) virtual rank v holds after steps 0..k-1. */
static int source_count(int v, int k, int pof2, int rem)
{
    if (k == 0) return ck_fold_width(v, rem);
    return source_count(v, k - 1, pof2, rem) +
           source_count(ck_bine_partner(v, k - 1, pof2), k - 1, pof2, rem);
}

/* The real source ranks of those rows, in row order; returns how many. */
static int source_rows(int *out, int v, int k, int pof2, int rem)
{
    if (k == 0) {
        out[0] = ck_fold_first(v, rem);
        if (ck_fold_width(v, rem) == 2) out[1] = out[0] + 1;
        return ck_fold_width(v, rem);
    }
    int n = source_rows(out, v, k - 1, pof2, rem);
    return n + source_rows(out + n, ck_bine_partner(v, k - 1, pof2), k - 1, pof2, rem);
}

/* One message of nb blocks at the addresses at[], through a datatype of
 * them when that pays, else packed in / unpacked from pack. Either way the
 * type signature is nb blocks of dt, so the two sides choose independently. */
typedef struct {
    char **at;
    int nb;
    char *pack;
} blocks_msg;

static int exchange(const blocks_msg *snd, int dst, const blocks_msg *rcv, int src, size_t count,
                    MPI_Datatype dt, MPI_Aint extent, MPI_Aint *disp, int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    const int scat_s = ck_scattered_pays(snd->nb, count, dt);
    const int scat_r = ck_scattered_pays(rcv->nb, count, dt);
    ck_scattered s = {NULL, 1, MPI_DATATYPE_NULL, 0}, r = {NULL, 1, MPI_DATATYPE_NULL, 0};
    for (int i = 0; i < snd->nb && !scat_s && rc == MPI_SUCCESS; i++)
        rc = ck_copy(snd->at[i], ck_elem(snd->pack, (size_t)i * count, extent), count, dt);
    if (rc == MPI_SUCCESS)
        rc = scat_s ? ck_scattered_make(snd->nb, snd->at, disp, count, dt, &s)
                    : ck_scattered_run(snd->pack, (size_t)snd->nb * count, dt, &s);
    if (rc == MPI_SUCCESS)
        rc = scat_r ? ck_scattered_make(rcv->nb, rcv->at, disp, count, dt, &r)
                    : ck_scattered_run(rcv->pack, (size_t)rcv->nb * count, dt, &r);
    if (rc == MPI_SUCCESS) rc = ck_sendrecv_scattered(&s, dst, &r, src, tag, comm);
    for (int i = 0; i < rcv->nb && !scat_r && rc == MPI_SUCCESS; i++)
        rc = ck_copy(ck_elem(rcv->pack, (size_t)i * count, extent), rcv->at[i], count, dt);
    ck_scattered_free(&s);
    ck_scattered_free(&r);
    return rc;
}

int ck_alltoall_bine_butterfly(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                               MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint extent;
    const void *src;
    ck_tmp work[2] = {{0}, {0}}, packs = {0};
    int *col = NULL, *offs = NULL, *pos = NULL, *npos = NULL, *recvd = NULL, *slots = NULL;
    unsigned char *where = NULL;
    char **at = NULL;
    MPI_Aint *disp = NULL;

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
/* Slot x of work buffer b, one block in: a message's lowest block is then
 * never the start of an allocation, which SimGrid's SMPI would check the
 * whole datatype's extent against (a message may span both buffers). */
#define SLOT(b, x) BLK(work[(b)].buf, (x) + 1)
    const ck_fold f = ck_fold_of(rank, 0, p, CK_FOLD_KEEP_EVEN);
    if (f.vrank < 0) {
        /* Dropped out: the partner exchanges this rank's blocks for it. */
        CK_TRY(ck_fold_in(&f, src, NULL, NULL, (size_t)p * blk, dt, MPI_OP_NULL, tag, comm));
        CK_TRY(ck_fold_out(&f, NULL, rbuf, (size_t)p * blk, dt, tag, comm));
        goto out;
    }

    const int pof2 = ck_pow2_floor(p), s = ck_log2_ceil(pof2), rem = ck_fold_rem(p);
    const int v = f.vrank, width = ck_fold_width(v, rem);
    const int sigma = (int)ck_bit_reverse((uint32_t)ck_bine_nu(v, pof2, s), s);
    /* col: every real rank in destination order (sigma of its virtual rank,
     * then rank); offs[g]: the columns before sigma g. */
    col = malloc((size_t)p * sizeof *col);
    offs = malloc(((size_t)pof2 + 1) * sizeof *offs);
    if (col == NULL || offs == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    offs[0] = 0;
    for (int g = 0; g < pof2; g++) {
        int w = ck_bine_nu_rank((int)ck_bit_reverse((uint32_t)g, s), pof2, s);
        offs[g + 1] = offs[g] + ck_fold_width(w, rem);
        for (int i = 0; i < ck_fold_width(w, rem); i++) col[offs[g] + i] = ck_fold_first(w, rem) + i;
    }

    /* Slots: as many as the grid ever holds (p when p = 2^k; a folded core's
     * grid is rows x columns, up to 4p), and a message's blocks at most 2p. */
    int cap = width * p, prows_at[32]; /* the partner's rows at each step, s <= 31 */
    for (int k = 0, rows = width; k < s; k++) {
        const int half = pof2 >> (k + 1), kbase = sigma & ~(half - 1);
        prows_at[k] = source_count(ck_bine_partner(v, k, pof2), k, pof2, rem);
        rows += prows_at[k];
        const int held = rows * (offs[kbase + half] - offs[kbase]);
        if (held > cap) cap = held;
    }
    pos = malloc((size_t)cap * sizeof *pos);
    npos = malloc((size_t)cap * sizeof *npos);
    recvd = malloc((size_t)cap * sizeof *recvd);
    slots = malloc(((size_t)cap + 2 * (size_t)p) * sizeof *slots);
    where = malloc((size_t)cap);
    at = malloc((size_t)4 * p * sizeof *at);
    disp = malloc((size_t)2 * p * sizeof *disp);
    if (pos == NULL || npos == NULL || recvd == NULL || slots == NULL || where == NULL || at == NULL ||
        disp == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    CK_TRY(ck_tmp_alloc(&work[0], ((size_t)cap + 1) * blk, dt));
    CK_TRY(ck_tmp_alloc(&work[1], ((size_t)cap + 1) * blk, dt));
    CK_TRY(ck_tmp_alloc(&packs, (size_t)4 * p * blk, dt));

    /* Slot q (+ p for the fold partner's row) of buffer 0 holds the block for
     * rank q: the first grid, rows = this rank (and its partner). */
    CK_TRY(ck_copy(src, SLOT(0, 0), (size_t)p * blk, dt));
    if (width == 2)
        CK_TRY(ck_fold_in(&f, NULL, SLOT(0, p), NULL, (size_t)p * blk, dt, MPI_OP_NULL,
                          tag, comm));
    for (int c = 0; c < p; c++)
        for (int r = 0; r < width; r++) pos[c * width + r] = col[c] + r * p;
    memset(where, 0, (size_t)cap);
    /* Free slots: a stack on top of slots[2p..]; slots[0..2p) lists a step's freed ones. */
    int *freed = slots, *spare = slots + 2 * p, nspare = 0;
    for (int x = cap - 1; x >= width * p; x--) spare[nspare++] = x;

    int rows = width;
    CK_SPAN_BEGIN("butterfly");
    for (int k = 0; k < s; k++) {
        const int len = pof2 >> k, half = len >> 1;
        const int base = sigma & ~(len - 1), kbase = sigma & ~(half - 1), gbase = kbase ^ half;
        const int u = ck_bine_partner(v, k, pof2);
        const int peer = ck_fold_rank_of(u, CK_FOLD_KEEP_EVEN, 0, p);
        const int prows = prows_at[k];
        const int nkeep = offs[kbase + half] - offs[kbase];
        const int ngive = offs[gbase + half] - offs[gbase];
        const int keep0 = offs[kbase] - offs[base], give0 = offs[gbase] - offs[base];

        /* Send the given columns, column by column; their slots are freed. */
        blocks_msg snd = {at, ngive * rows, packs.buf};
        for (int c = 0, i = 0; c < ngive; c++)
            for (int r = 0; r < rows; r++, i++) {
                int x = pos[(give0 + c) * rows + r];
                at[i] = SLOT(where[x], x);
                freed[i] = x;
            }
        /* Receive into freed slots of the other buffer first, then spare ones. */
        const int nrecv = nkeep * prows;
        blocks_msg rcv = {at + snd.nb, nrecv, BLK(packs.buf, snd.nb)};
        for (int i = 0; i < nrecv; i++) {
            int x;
            if (i < snd.nb) {
                x = freed[i];
                where[x] ^= 1;
            } else {
                x = spare[--nspare];
                where[x] = 0;
            }
            rcv.at[i] = SLOT(where[x], x);
            recvd[i] = x;
        }
        for (int i = nrecv; i < snd.nb; i++) spare[nspare++] = freed[i];
        CK_SPAN_BEGIN_STEP("step", k);
        CK_TRY(exchange(&snd, peer, &rcv, peer, blk, dt, extent, disp, tag, comm));
        CK_SPAN_END("step");

        /* The new grid: each kept column's own rows, then the partner's. */
        const int nrows = rows + prows;
        for (int c = 0; c < nkeep; c++) {
            for (int r = 0; r < rows; r++) npos[c * nrows + r] = pos[(keep0 + c) * rows + r];
            for (int r = 0; r < prows; r++) npos[c * nrows + rows + r] = recvd[c * prows + r];
        }
        int *t = pos;
        pos = npos;
        npos = t;
        rows = nrows;
    }
    CK_SPAN_END("butterfly");

    /* rows == p: the columns are this rank's (and its fold partner's), the
     * rows every source in butterfly order. */
    CK_SPAN_BEGIN("unrotate");
    int *order = col; /* col is no longer needed */
    source_rows(order, v, s, pof2, rem);
    for (int r = 0; r < p; r++) {
        CK_TRY(ck_copy(SLOT(where[pos[r]], pos[r]), BLK(rbuf, order[r]), blk, dt));
        if (width == 2)
            CK_TRY(ck_copy(SLOT(where[pos[p + r]], pos[p + r]), BLK(packs.buf, order[r]), blk, dt));
    }
    CK_SPAN_END("unrotate");
    if (width == 2) CK_TRY(ck_fold_out(&f, packs.buf, NULL, (size_t)p * blk, dt, tag, comm));
#undef SLOT
#undef BLK
out:
    ck_tmp_free(&work[0]);
    ck_tmp_free(&work[1]);
    ck_tmp_free(&packs);
    free(col);
    free(offs);
    free(pos);
    free(npos);
    free(recvd);
    free(slots);
    free(where);
    free(at);
    free(disp);
    return rc;
}
