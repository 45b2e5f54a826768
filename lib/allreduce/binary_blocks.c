/* "Binary blocks" allreduce (Rabenseifner & Träff 2004, "More efficient
 * reduction algorithms for non-power-of-two number of processors").
 * The ranks are cut into blocks whose sizes are the powers of two in the
 * binary representation of p, the largest first (p = 13: ranks 0-7, 8-11, 12).
 * The vector is cut into s0 fine pieces, s0 the largest block size; member j
 * of a block of size s owns the s0/s consecutive pieces j*s0/s ... .
 *  1. Every block runs a reduce-scatter by recursive halving on its own.
 *  2. From the smallest block upwards, each member sends its partial result,
 *     cut along the next larger block's ownership, to the members of that
 *     block, which reduce it into theirs before passing on in turn.
 *  3. The largest block now owns the final result; from it downwards each
 *     member sends its final part to the member of the next smaller block
 *     that owns it, and every block runs an allgather by recursive doubling.
 * No rank sits idle as in the folding of Rabenseifner's algorithm; the cost is
 * the chain of hand-overs between blocks, and an imbalance when consecutive
 * block sizes differ a lot (a rank of a block of size s sends to s'/s ranks
 * of the next block of size s'). For p a power of two this is Rabenseifner's
 * algorithm. Partial results of non-adjacent rank sets are combined:
 * commutative ops only. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* The block structure seen from one rank. */
typedef struct {
    int nblocks;
    int start[32], bsize[32]; /* first rank and size of each block, largest first */
    int me, j;                /* my block and my index in it */
} layout;

static void make_layout(layout *L, int size, int rank)
{
    L->nblocks = L->me = L->j = 0;
    int at = 0;
    for (int bit = 30; bit >= 0; bit--) {
        if (!(size & (1 << bit))) continue;
        L->start[L->nblocks] = at;
        L->bsize[L->nblocks] = 1 << bit;
        if (rank >= at && rank < at + (1 << bit)) {
            L->me = L->nblocks;
            L->j = rank - at;
        }
        at += 1 << bit;
        L->nblocks++;
    }
}

/* Element offset of fine piece f (of nfine) and of the pieces owned by member
 * range [jlo, jhi) of a block of size s. */
typedef struct {
    size_t off, n;
} range;

static range owned(size_t count, int nfine, int s, int jlo, int jhi)
{
    int unit = nfine / s;
    range r;
    r.off = ck_block_offset(count, nfine, jlo * unit);
    r.n = ck_block_offset(count, nfine, jhi * unit) - r.off;
    return r;
}

/* Between this rank's block b and the larger block b - 1 above: the ranks
 * above own finer pieces, ratio of them inside this rank's piece; each goes
 * to (receive 0: the climb) or comes from (the descent) its owner. */
static int upper_pieces(int receive, void *rbuf, size_t count, MPI_Datatype dt, MPI_Aint ext,
                        const layout *L, int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    const int b = L->me, nfine = L->bsize[0], up = L->bsize[b - 1];
    const int ratio = up / L->bsize[b];
    for (int t = 0; t < ratio && rc == MPI_SUCCESS; t++) {
        int uj = L->j * ratio + t;
        range r = owned(count, nfine, up, uj, uj + 1);
        char *at = ck_elem(rbuf, r.off, ext);
        rc = receive ? ck_recv(at, r.n, dt, L->start[b - 1] + uj, tag, comm)
                     : ck_send(at, r.n, dt, L->start[b - 1] + uj, tag, comm);
    }
    return rc;
}

int ck_allreduce_binary_blocks(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                               MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size;
    ck_tmp tmp = {0};
    MPI_Aint ext;
    layout L;
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, 1, NULL, comm, &rank, &size));
    if (count == 0) return MPI_SUCCESS;
    if (sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
    if (size == 1) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_ALLREDUCE);
    CK_TRY(ck_type_extent(dt, &ext));
    CK_TRY(ck_tmp_alloc(&tmp, count, dt));
    make_layout(&L, size, rank);
    const int nfine = L.bsize[0], b = L.me, j = L.j, s = L.bsize[b], base = L.start[b];
    range mine = owned(count, nfine, s, j, j + 1);

    /* 1. reduce-scatter by recursive halving inside the block. Steps are
     * 0 .. log2 s - 1 here and log2 s .. 2 log2 s - 1 in the allgather (s:
     * this rank's block size); the hand-overs between blocks are phases. */
    int lo = 0, hi = s;
    CK_SPAN_BEGIN("reduce_scatter");
    for (int mask = s / 2; mask > 0; mask >>= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(s / mask) - 1);
        int pj = j ^ mask, slo, shi;
        ck_halve(j, mask, &lo, &hi, &slo, &shi);
        range k = owned(count, nfine, s, lo, hi), x = owned(count, nfine, s, slo, shi);
        CK_TRY(ck_sendrecv(ck_elem(rbuf, x.off, ext), x.n, base + pj, tmp.buf, k.n, base + pj,
                           dt, tag, comm));
        CK_TRY(ck_reduce_local(tmp.buf, ck_elem(rbuf, k.off, ext), k.n, dt, op));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");

    /* 2. partial results climb from the smallest block to the largest */
    CK_SPAN_BEGIN("climb");
    if (b + 1 < L.nblocks) {
        int ratio = s / L.bsize[b + 1];
        CK_TRY(ck_recv(tmp.buf, mine.n, dt, L.start[b + 1] + j / ratio, tag, comm));
        CK_TRY(ck_reduce_local(tmp.buf, ck_elem(rbuf, mine.off, ext), mine.n, dt, op));
    }
    if (b > 0) CK_TRY(upper_pieces(0, rbuf, count, dt, ext, &L, tag, comm));
    CK_SPAN_END("climb");

    /* 3. the final values come back down along the same pieces */
    CK_SPAN_BEGIN("descend");
    if (b > 0) CK_TRY(upper_pieces(1, rbuf, count, dt, ext, &L, tag, comm));
    if (b + 1 < L.nblocks) {
        int ratio = s / L.bsize[b + 1];
        CK_TRY(ck_send(ck_elem(rbuf, mine.off, ext), mine.n, dt, L.start[b + 1] + j / ratio, tag,
                       comm));
    }
    CK_SPAN_END("descend");

    /* 3, continued: allgather by recursive doubling inside the block */
    CK_SPAN_BEGIN("allgather");
    for (int mask = 1; mask < s; mask <<= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(s) + ck_log2_ceil(mask));
        int pj = j ^ mask;
        int mlo = j & ~(mask - 1), plo = pj & ~(mask - 1);
        range m = owned(count, nfine, s, mlo, mlo + mask);
        range o = owned(count, nfine, s, plo, plo + mask);
        CK_TRY(ck_sendrecv(ck_elem(rbuf, m.off, ext), m.n, base + pj, ck_elem(rbuf, o.off, ext),
                           o.n, base + pj, dt, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
out:
    ck_tmp_free(&tmp);
    return rc;
}
