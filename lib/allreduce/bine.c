/* Bine allreduce (De Sensi et al., "Bine Trees: Enhancing Collective
 * Operations by Optimizing Communication Locality"). Butterflies whose
 * step-k partner is ck_bine_partner(v, k, p') at distance |rho(k)| = 1, 1, 3,
 * 5, 11, ... instead of 2^k, so on a ring/torus the partners are closer than
 * recursive doubling's for the same step count and volume.
 *   - bine_latency: whole vector every step (recursive doubling on the Bine
 *     butterfly), log2 p' steps of n bytes: the papers' schedule
 *     (docs/algorithms.md). From p' = 8 on, ranks add in different orders
 *     and floating-point sums may differ in their last bits between ranks.
 *   - bine_latency_agreed: the same, then log2 p' more steps to broadcast
 *     virtual rank 0's result, so that every rank returns the same bits
 *     (lib/core/bine_latency.c).
 *   - bine_bandwidth: Bine reduce-scatter (distance doubling, halving the
 *     data) + Bine allgather (distance halving, doubling the data).
 *   - bine_bandwidth_seg: the same, with each reduce-scatter transfer cut into
 *     CK_BINE_AR_SEG_BYTES segments, all received ahead so that reducing one
 *     segment overlaps the arrival of the next.
 *
 * Why the bandwidth variants need no block permutation: the vector is cut
 * into p' blocks addressed by slot x, and virtual rank v works on the slot
 * sigma(v) = bit_reverse(nu(v)) (lib/core/bine_tree.h). At reduce-scatter
 * step k both partners hold the same aligned slot range of length 2^(s-k)
 * (same low k bits of nu), and each keeps the half containing its own slot;
 * the allgather retraces the same ranges backwards. Both phases use the same
 * slot numbering, so every message is one contiguous byte range and the
 * slot -> rank permutation, which a reduce-scatter or allgather alone would
 * have to undo, cancels out: an allreduce never needs to know which rank owns
 * which block.
 *
 * Non-power-of-two p: p' = 2^floor(log2 p), e = p - p'. The neighbouring
 * pairs (2i, 2i+1), i < e, fold into 2i before the butterfly (2i+1 sends it
 * its vector) and 2i hands the result back afterwards; rank q >= 2e is
 * virtual rank q - e. Neighbouring virtual ranks stay neighbouring real
 * ranks, so Bine's short distances at most double. Extra cost for the folded
 * pairs: two steps and n bytes each way.
 *
 * Local work (the messages are unchanged): out of place the bandwidth
 * variants' first step sends from sbuf, receives the partner's half straight
 * into rbuf and reduces sbuf's own half into it, as rabenseifner does; the
 * opening copy of the whole vector into rbuf goes (it was 24 % of the time
 * at 4 ranks and 8 MiB on sim:lumi-like, issue #53), and the temporary holds
 * only what later steps receive (p'/4 slots). A folded pair's survivor
 * receives its partner's vector into rbuf and reduces sbuf into it
 * (lib/core/openings.c).
 *
 * Partners combine sums of interleaved rank sets: commutative ops only. */
#include <stdlib.h>

#include "../core/ck_core.h"
#include "../core/bine.h"
#include "../core/bine_tree.h"
#include "collkit/spans.h"

/* Segment size of bine_bandwidth_seg: large enough that a segment's
 * start-up is small next to its transfer, small enough to pipeline the
 * medium vectors where reduction time matters. */
#define CK_BINE_AR_SEG_BYTES 65536

static int latency(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                   MPI_Comm comm, int agree)
{
    int rc, rank, size;
    ck_fold f;
    ck_tmp tmp = {0};
    CK_TRY(ck_allreduce_fold_open(sbuf, rbuf, count, dt, op, 1, CK_FOLD_KEEP_EVEN, comm, &rank,
                                  &size, &f));
    if (f.vrank < 0) goto out;
    const int v = f.vrank;

    const int tag = CK_TAG(CK_ALLREDUCE);
    CK_TRY(ck_tmp_alloc(&tmp, count, dt));
    CK_TRY(ck_bine_latency_core(rbuf, tmp.buf, count, dt, op, v, size, NULL, NULL, agree, tag,
                                comm));
    CK_TRY(ck_fold_out(&f, rbuf, NULL, count, dt, tag, comm));
out:
    ck_tmp_free(&tmp);
    return rc;
}

int ck_allreduce_bine_latency(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm)
{
    return latency(sbuf, rbuf, count, dt, op, comm, 0);
}

int ck_allreduce_bine_latency_agreed(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                     MPI_Op op, MPI_Comm comm)
{
    return latency(sbuf, rbuf, count, dt, op, comm, 1);
}

/* Reduce-scatter + allgather on the folded core; segmented cuts every
 * reduce-scatter transfer into CK_BINE_AR_SEG_BYTES segments. */
static int bandwidth(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                     MPI_Comm comm, int segmented)
{
    int rc, rank, size;
    ck_fold f;
    MPI_Aint extent;
    ck_tmp tmp = {0};
    MPI_Request *sreq = NULL, *rreq = NULL;
    const void *src0;
    CK_TRY(ck_allreduce_fold_open_src(sbuf, rbuf, count, dt, op, 1, CK_FOLD_KEEP_EVEN, comm,
                                      &rank, &size, &f, &src0));
    if (f.vrank < 0) goto out;
    const int v = f.vrank;
    CK_TRY(ck_type_extent(dt, &extent));
    /* Where step k reads this rank's vector: sbuf for the first step out of
     * place (its received half goes straight into rbuf), then rbuf. */
    const char *src = src0;

    const int tag = CK_TAG(CK_ALLREDUCE), p2 = ck_pow2_floor(size), s = ck_log2_ceil(p2);
    const int sigma = (int)ck_bit_reverse((uint32_t)ck_bine_nu(v, p2, s), s);
    /* Slot x is elements [off(x), off(x + 1)); empty slots when count < p'. */
#define OFF(x) ck_block_offset(count, p2, (x))
    size_t seg = count;
    if (segmented && extent > 0) {
        seg = CK_BINE_AR_SEG_BYTES / (size_t)extent;
        if (seg == 0) seg = 1;
    }
    /* The first step moves the largest half: at most ceil(count/2) elements
     * (blocks differ by at most one element). */
    const size_t maxhalf = OFF(p2) - OFF(p2 / 2) > OFF(p2 / 2) ? OFF(p2) - OFF(p2 / 2)
                                                               : OFF(p2 / 2);
    /* From sbuf the first step needs no temporary, the later ones at most a
     * quarter (an aligned range of p'/4 slots is at most the first p'/4). */
    const size_t need = src == (const char *)rbuf ? maxhalf : p2 > 2 ? OFF(p2 / 4) : 0;
    if (need > 0) CK_TRY(ck_tmp_alloc(&tmp, need, dt));
    const size_t maxseg = (maxhalf + seg - 1) / seg + 1;
    if (segmented) {
        sreq = malloc(maxseg * sizeof *sreq);
        rreq = malloc(maxseg * sizeof *rreq);
        if (sreq == NULL || rreq == NULL) {
            rc = MPI_ERR_NO_MEM;
            goto out;
        }
    }

    /* Steps 0 .. s-1 reduce-scatter, s .. 2s-1 allgather. */
    CK_SPAN_BEGIN("reduce_scatter");
    for (int k = 0; k < s; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        const int half = p2 >> (k + 1);
        const int mine = sigma & ~(half - 1), other = mine ^ half;
        const size_t mo = OFF(mine), mn = OFF(mine + half) - mo;
        const size_t oo = OFF(other), on = OFF(other + half) - oo;
        const int q = ck_bine_fold_peer(v, k, p2, 0, size);
        /* From sbuf the partner's half lands in rbuf and sbuf's is reduced
         * into it (commutative ops only, as the whole core). */
        const int staged = src == (const char *)rbuf;
        char *to = staged ? tmp.buf : ck_elem(rbuf, mo, extent);
        const char *mine_src = staged ? tmp.buf : ck_elem(src, mo, extent);
        if (!segmented) {
            CK_TRY(ck_sendrecv(ck_elem(src, oo, extent), on, q, to, mn, q, dt, tag, comm));
            CK_TRY(ck_reduce_local(mine_src, ck_elem(rbuf, mo, extent), mn, dt, op));
            src = rbuf;
            CK_SPAN_END("step");
            continue;
        }
        /* Both partners cut their halves the same way, so segment i of the
         * send matches segment i of the partner's receive. */
        size_t ns = 0, nr = 0;
        for (size_t at = 0; at < mn; at += seg, nr++) {
            size_t c = mn - at < seg ? mn - at : seg;
            CK_TRY(ck_irecv(ck_elem(to, at, extent), c, dt, q, tag, comm, &rreq[nr]));
        }
        for (size_t at = 0; at < on; at += seg, ns++) {
            size_t c = on - at < seg ? on - at : seg;
            CK_TRY(ck_isend(ck_elem(src, oo + at, extent), c, dt, q, tag, comm, &sreq[ns]));
        }
        size_t i = 0;
        for (size_t at = 0; at < mn; at += seg, i++) {
            size_t c = mn - at < seg ? mn - at : seg;
            CK_TRY(ck_waitall(1, &rreq[i]));
            CK_TRY(ck_reduce_local(ck_elem(mine_src, at, extent),
                                   ck_elem(rbuf, mo + at, extent), c, dt, op));
        }
        CK_TRY(ck_waitall((int)ns, sreq));
        src = rbuf;
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");
    CK_SPAN_BEGIN("allgather");
    for (int k = s - 1; k >= 0; k--) {
        CK_SPAN_BEGIN_STEP("step", 2 * s - 1 - k);
        const int len = p2 >> (k + 1);
        const int mine = sigma & ~(len - 1), other = mine ^ len;
        const size_t mo = OFF(mine), mn = OFF(mine + len) - mo;
        const size_t oo = OFF(other), on = OFF(other + len) - oo;
        const int q = ck_bine_fold_peer(v, k, p2, 0, size);
        CK_TRY(ck_sendrecv(ck_elem(rbuf, mo, extent), mn, q, ck_elem(rbuf, oo, extent), on, q,
                           dt, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
#undef OFF
    CK_TRY(ck_fold_out(&f, rbuf, NULL, count, dt, tag, comm));
out:
    free(sreq);
    free(rreq);
    ck_tmp_free(&tmp);
    return rc;
}

int ck_allreduce_bine_bandwidth(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                MPI_Op op, MPI_Comm comm)
{
    return bandwidth(sbuf, rbuf, count, dt, op, comm, 0);
}

int ck_allreduce_bine_bandwidth_seg(const void *sbuf, void *rbuf, size_t count,
                                    MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    return bandwidth(sbuf, rbuf, count, dt, op, comm, 1);
}
