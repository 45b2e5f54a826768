/* Rabenseifner's allreduce: a reduce-scatter by recursive vector halving
 * followed by an allgather by recursive vector doubling over p' =
 * 2^floor(log2 p) ranks, the vector cut into p' nearly equal blocks (the first
 * count % p' one element longer, empty when count < p'). Each rank sends about
 * 2n(p'-1)/p' in 2 log2 p' steps, against n log2 p for recursive doubling.
 * Two orders of the same exchanges, two names:
 *
 *  rabenseifner          MPICH's MPIR_Allreduce_intra_reduce_scatter_allgather
 *                        (and Open MPI's redscat_allgather for p = 2^k): the
 *                        reduce-scatter starts at distance 1 with n/2 and
 *                        doubles the distance as the data halves, so the
 *                        largest messages go to the nearest ranks; virtual
 *                        rank v ends owning block bit_reverse(v), and the
 *                        allgather retraces the distances downwards.
 *  rabenseifner_halving  the order the Thakur/Rabenseifner/Gropp paper draws:
 *                        distance p'/2 first with n/2, so the largest halves
 *                        cross the largest distance; v ends owning block v.
 *
 * Non-power-of-two p (both, as MPICH): among the first 2(p-p') ranks each even
 * rank gives its whole vector to the odd rank above, sits out, and gets the
 * result at the end. The halving pairs ranks that are far apart in rank
 * order: commutative ops only.
 *
 * Local work (the messages are unchanged): out of place, nothing is staged.
 * The first reduce-scatter step sends from sbuf and receives the partner's
 * half straight into rbuf, then reduces the own half from sbuf into it (own
 * op partner's: the algorithm is for commutative ops only), so MPICH's and
 * Open MPI's opening copy of the whole vector into rbuf goes; the rest of
 * rbuf is only written, by the allgather, before it is read. A folded
 * survivor likewise receives its partner's vector into rbuf and reduces its
 * own into it, a rank that sits out sends straight from sbuf. The temporary
 * then only holds what later steps receive, at most p'/4 blocks (p'/2 in
 * place, the whole vector for an in-place survivor's fold), one allocation
 * per call where MPICH and Open MPI take a vector; none at p' = 2 out of
 * place. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* The opening both orders share: the checks, MPICH's fold of the first 2 rem
 * ranks, the extent and the temporary. f->vrank < 0: this rank is done (count
 * 0, p 1, or it sat out and got the result). *src: where the first
 * reduce-scatter step finds this rank's vector, sbuf (out of place and not
 * folded) or rbuf. */
static int open_core(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                     MPI_Comm comm, ck_fold *f, int *p2, int *rem, MPI_Aint *ext, ck_tmp *tmp,
                     const char **src)
{
    int rc, rank, size;
    f->vrank = -1;
    f->partner = -1;
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, 1, NULL, comm, &rank, &size));
    if (count == 0) goto out;
    if (size == 1) {
        if (sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
        goto out;
    }
    const int tag = CK_TAG(CK_ALLREDUCE);
    const int in_place = sbuf == MPI_IN_PLACE;
    const char *own = in_place ? (const char *)rbuf : (const char *)sbuf;
    const ck_fold me = ck_fold_of(rank, 0, size, CK_FOLD_KEEP_ODD);
    *p2 = ck_pow2_floor(size);
    *rem = size - *p2;
    if (me.vrank < 0) {
        /* Sits out: the partner reduces for both and returns the result. */
        CK_TRY(ck_fold_in(&me, own, NULL, NULL, count, dt, op, tag, comm));
        CK_TRY(ck_fold_out(&me, NULL, rbuf, count, dt, tag, comm));
        goto out;
    }
    CK_TRY(ck_type_extent(dt, ext));
    /* The first step reads sbuf unless the vector had to be put together in
     * rbuf (fold) or is there (in place); its received half then goes to the
     * temporary, else into rbuf. A window of w blocks is at most as long as
     * the first w blocks (the longer blocks come first). */
    *src = !in_place && me.partner < 0 ? own : (const char *)rbuf;
    size_t need = *src == (const char *)rbuf ? ck_block_offset(count, *p2, *p2 / 2)
                  : *p2 > 2                  ? ck_block_offset(count, *p2, *p2 / 4)
                                             : 0;
    if (in_place && me.partner >= 0) need = count;
    if (need > 0) CK_TRY(ck_tmp_alloc(tmp, need, dt));
    if (me.partner >= 0) {
        /* rbuf = partner's (op) own: in place the partner's vector comes into
         * the temporary, else into rbuf and sbuf is reduced into it. */
        CK_SPAN_BEGIN("fold");
        char *take = in_place ? tmp->buf : (char *)rbuf;
        CK_TRY(ck_recv(take, count, dt, me.partner, tag, comm));
        CK_TRY(ck_reduce_local(in_place ? take : own, rbuf, count, dt, op));
        CK_SPAN_END("fold");
    }
    *f = me;
out:
    return rc;
}

/* One reduce-scatter exchange: send sn elements at soff to peer, receive kn
 * for the window at koff and reduce them into rbuf there. From src = rbuf
 * the received half goes to the temporary; from src = sbuf (the first step
 * out of place) straight into rbuf, and sbuf's half is reduced into it. */
static int rs_exchange(const char *src, char *rbuf, char *tmp, size_t soff, size_t sn,
                       size_t koff, size_t kn, int peer, MPI_Aint ext, MPI_Datatype dt,
                       MPI_Op op, int tag, MPI_Comm comm)
{
    const int staged = src == rbuf;
    char *to = staged ? tmp : ck_elem(rbuf, koff, ext);
    int rc = ck_sendrecv(ck_elem(src, soff, ext), sn, peer, to, kn, peer, dt, tag, comm);
    if (rc != MPI_SUCCESS) return rc;
    return ck_reduce_local(staged ? tmp : ck_elem(src, koff, ext), ck_elem(rbuf, koff, ext), kn,
                           dt, op);
}

int ck_allreduce_rabenseifner_halving(const void *sbuf, void *rbuf, size_t count,
                                      MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int rc, p2, rem;
    ck_tmp tmp = {0};
    MPI_Aint ext;
    ck_fold f;
    const char *src = NULL;
    CK_TRY(open_core(sbuf, rbuf, count, dt, op, comm, &f, &p2, &rem, &ext, &tmp, &src));
    if (f.vrank < 0) goto out;

    const int tag = CK_TAG(CK_ALLREDUCE);
    const int vrank = f.vrank;
    int lo = 0, hi = p2; /* blocks (of p') this rank is still reducing */
    /* Steps are numbered through both phases: 0 .. log2 p' - 1 here, then
     * log2 p' .. 2 log2 p' - 1 in the allgather. */
    CK_SPAN_BEGIN("reduce_scatter");
    for (int mask = p2 / 2; mask > 0; mask >>= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(p2 / mask) - 1);
        int vpeer = vrank ^ mask, slo, shi;
        int peer = ck_fold_real(vpeer, rem, CK_FOLD_KEEP_ODD);
        ck_halve(vrank, mask, &lo, &hi, &slo, &shi);
        size_t koff = ck_block_offset(count, p2, lo);
        size_t kn = ck_block_offset(count, p2, hi) - koff;
        size_t soff = ck_block_offset(count, p2, slo);
        size_t sn = ck_block_offset(count, p2, shi) - soff;
        CK_TRY(rs_exchange(src, rbuf, tmp.buf, soff, sn, koff, kn, peer, ext, dt, op, tag,
                           comm));
        src = rbuf; /* later steps: all reduced data is in rbuf */
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");

    CK_SPAN_BEGIN("allgather");
    for (int mask = 1; mask < p2; mask <<= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(p2) + ck_log2_ceil(mask));
        int vpeer = vrank ^ mask, peer = ck_fold_real(vpeer, rem, CK_FOLD_KEEP_ODD);
        int mlo = vrank & ~(mask - 1), plo = vpeer & ~(mask - 1);
        size_t moff = ck_block_offset(count, p2, mlo);
        size_t mn = ck_block_offset(count, p2, mlo + mask) - moff;
        size_t poff = ck_block_offset(count, p2, plo);
        size_t pn = ck_block_offset(count, p2, plo + mask) - poff;
        CK_TRY(ck_sendrecv(ck_elem(rbuf, moff, ext), mn, peer, ck_elem(rbuf, poff, ext), pn,
                           peer, dt, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");

    CK_TRY(ck_fold_out(&f, rbuf, NULL, count, dt, tag, comm));
out:
    ck_tmp_free(&tmp);
    return rc;
}

/* MPICH's order. Before the reduce-scatter step at distance mask the window
 * [lo, lo + w) of w = p'/mask blocks is what both partners still reduce; the
 * lower virtual rank keeps its first half (MPICH's "newrank < newdst" branch),
 * so after all steps v's block is bit_reverse(v). The allgather walks back:
 * at distance mask each partner sends its window of p'/(2 mask) blocks, and
 * the windows of the pair are adjacent, the lower rank's first. */
int ck_allreduce_rabenseifner(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm)
{
    int rc, p2, rem;
    ck_tmp tmp = {0};
    MPI_Aint ext;
    ck_fold f;
    const char *src = NULL;
    CK_TRY(open_core(sbuf, rbuf, count, dt, op, comm, &f, &p2, &rem, &ext, &tmp, &src));
    if (f.vrank < 0) goto out;

    const int tag = CK_TAG(CK_ALLREDUCE);
    const int vrank = f.vrank;
    int lo = 0, w = p2; /* the window of blocks this rank is still reducing */
    int step = 0;
    CK_SPAN_BEGIN("reduce_scatter");
    for (int mask = 1; mask < p2; mask <<= 1, step++) {
        CK_SPAN_BEGIN_STEP("step", step);
        const int vpeer = vrank ^ mask, peer = ck_fold_real(vpeer, rem, CK_FOLD_KEEP_ODD);
        const int half = w / 2, lower = vrank < vpeer;
        const int klo = lower ? lo : lo + half, slo = lower ? lo + half : lo;
        size_t koff = ck_block_offset(count, p2, klo);
        size_t kn = ck_block_offset(count, p2, klo + half) - koff;
        size_t soff = ck_block_offset(count, p2, slo);
        size_t sn = ck_block_offset(count, p2, slo + half) - soff;
        CK_TRY(rs_exchange(src, rbuf, tmp.buf, soff, sn, koff, kn, peer, ext, dt, op, tag,
                           comm));
        src = rbuf; /* later steps: all reduced data is in rbuf */
        lo = klo;
        w = half;
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");

    CK_SPAN_BEGIN("allgather");
    for (int mask = p2 / 2; mask > 0; mask >>= 1, step++) {
        CK_SPAN_BEGIN_STEP("step", step);
        const int vpeer = vrank ^ mask, peer = ck_fold_real(vpeer, rem, CK_FOLD_KEEP_ODD);
        const int plo = vrank < vpeer ? lo + w : lo - w;
        size_t moff = ck_block_offset(count, p2, lo);
        size_t mn = ck_block_offset(count, p2, lo + w) - moff;
        size_t poff = ck_block_offset(count, p2, plo);
        size_t pn = ck_block_offset(count, p2, plo + w) - poff;
        CK_TRY(ck_sendrecv(ck_elem(rbuf, moff, ext), mn, peer, ck_elem(rbuf, poff, ext), pn,
                           peer, dt, tag, comm));
        if (plo < lo) lo = plo;
        w *= 2;
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");

    CK_TRY(ck_fold_out(&f, rbuf, NULL, count, dt, tag, comm));
out:
    ck_tmp_free(&tmp);
    return rc;
}
