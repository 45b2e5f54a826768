/* Rabenseifner's reduce: a reduce-scatter by recursive vector halving leaves
 * each of p' = 2^floor(log2 p) ranks with one fully reduced block (p' nearly
 * equal blocks, the first count % p' one element longer), and a gather
 * collects the blocks at the root. Every rank sends and reduces about n
 * instead of n*log2(p), at the price of 2*log2(p') steps. Two schedules:
 *
 *  rabenseifner          MPICH's MPIR_Reduce_intra_reduce_scatter_gather.
 *                        Ranks are taken as they are (not relative to the
 *                        root). Among the first 2(p-p') ranks each odd rank
 *                        sends its whole vector to the even rank below and
 *                        drops out (MPICH keeps the even ones so that root 0
 *                        needs no extra hop). The reduce-scatter starts at
 *                        distance 1 with n/2 and doubles the distance, so
 *                        virtual rank v ends with block bit_reverse(v); the
 *                        gather retraces it, distance p'/2 first with one
 *                        block, each pair's member outside the root's half
 *                        sending and leaving. A root that dropped out gets
 *                        block 0 from rank 0 and plays virtual rank 0.
 *  rabenseifner_halving  the order the Thakur/Rabenseifner/Gropp paper draws,
 *                        on ranks relative to the root: reduce-scatter at
 *                        distance p'/2 first, then a binomial gather at
 *                        distance 1, 2, 4, ... Non-powers of two fold the
 *                        last 2r relative ranks (first + 2j, first + 2j + 1),
 *                        the odd one sending its vector to the even one, so
 *                        the root (relative rank 0) always takes part and the
 *                        gather ends at the real root with no extra message.
 *
 * Pairs are combined in whichever order, hence CK_REQUIRES_COMMUTATIVE. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* Elements of blocks [a, b) out of nb blocks (b may equal nb). */
static size_t span(size_t count, int nb, int a, int b)
{
    return ck_block_offset(count, nb, b) - ck_block_offset(count, nb, a);
}

int ck_reduce_rabenseifner_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                   MPI_Op op, int root, MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint extent;
    ck_tmp acc_tmp = {0}, in_tmp = {0};
    ck_fold f;
    CK_TRY(ck_reduce_fold_open(sbuf, rbuf, count, dt, op, root, CK_FOLD_TAIL, comm, &rank, &size,
                               &f, &done));
    if (done) goto out;
    CK_TRY(ck_type_extent(dt, &extent));
    const int tag = CK_TAG(CK_REDUCE);
    const int pof2 = ck_pow2_floor(size), first = pof2 - ck_fold_rem(size);
    const int q = f.vrank;

    /* Only a fold receives a whole vector; the halving needs half of it. */
    char *acc;
    CK_TRY(ck_tmp_alloc(&in_tmp, f.partner >= 0 ? count : span(count, pof2, 0, pof2 / 2), dt));
    CK_TRY(ck_reduce_fold_acc(sbuf, rbuf, count, dt, op, rank == root, &f, tag, comm, &acc_tmp,
                              &in_tmp, &acc));

    /* Block mapping: new rank q ends the reduce-scatter owning block q, so
     * the group of new ranks [q, q + 2^k) owns one contiguous slice during
     * the gather, which ends at new rank 0 = the root. Recursive halving over
     * new ranks: keep the half of the current window
     * of blocks that contains block q, send the other half to the partner. */
    int lo = 0;
    CK_SPAN_BEGIN("reduce_scatter");
    for (int d = pof2 / 2; d >= 1; d /= 2) {
        int partner = q ^ d;
        int pv = ck_fold_tail_real(partner, first);
        int keep = (q & d) ? lo + d : lo, give = (q & d) ? lo : lo + d;
        size_t nkeep = span(count, pof2, keep, keep + d);
        CK_TRY(ck_sendrecv(ck_elem(acc, ck_block_offset(count, pof2, give), extent),
                           span(count, pof2, give, give + d), ck_abs_rank(pv, root, size),
                           in_tmp.buf, nkeep, ck_abs_rank(pv, root, size), dt, tag, comm));
        CK_TRY(ck_reduce_local(in_tmp.buf, ck_elem(acc, ck_block_offset(count, pof2, keep), extent),
                               nkeep, dt, op));
        lo = keep;
    }
    CK_SPAN_END("reduce_scatter");

    /* Binomial gather to new rank 0: before distance d, new rank q (a multiple
     * of d) holds the reduced blocks [q, q + d). */
    CK_SPAN_BEGIN("gather");
    for (int d = 1; d < pof2; d *= 2) {
        if (q & d) {
            CK_TRY(ck_send(ck_elem(acc, ck_block_offset(count, pof2, q), extent),
                           span(count, pof2, q, q + d), dt,
                           ck_abs_rank(ck_fold_tail_real(q - d, first), root, size), tag, comm));
            break;
        }
        int c = q + d;
        CK_TRY(ck_recv(ck_elem(acc, ck_block_offset(count, pof2, c), extent),
                       span(count, pof2, c, c + d), dt,
                       ck_abs_rank(ck_fold_tail_real(c, first), root, size),
                       tag, comm));
    }
    CK_SPAN_END("gather");
out:
    ck_tmp_free(&acc_tmp);
    ck_tmp_free(&in_tmp);
    return rc;
}

int ck_reduce_rabenseifner(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                           int root, MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint extent;
    ck_tmp acc_tmp = {0}, in_tmp = {0};
    char *acc = NULL;
    CK_TRY(ck_reduce_open(sbuf, rbuf, count, dt, op, 1, NULL, root, comm, &rank, &size, &done));
    if (done) goto out;
    CK_TRY(ck_type_extent(dt, &extent));
    const int tag = CK_TAG(CK_REDUCE);
    const int pof2 = ck_pow2_floor(size), rem = size - pof2;
    const ck_fold f = ck_fold_of(rank, 0, size, CK_FOLD_KEEP_EVEN);
    /* An odd root below 2r drops out of the reduce-scatter like any odd rank
     * there; virtual rank 0 (rank 0) then hands it block 0 and it takes
     * virtual rank 0's place in the gather. */
    const int root_out = root < 2 * rem && root % 2 != 0;
    const int vroot = root_out ? 0 : ck_fold_vrank(root, rem, CK_FOLD_KEEP_EVEN);
    int v = f.vrank, lo = 0, w = pof2; /* window of blocks held (gather) or reduced */

    if (v < 0) {
        const void *mine = rank == root && sbuf == MPI_IN_PLACE ? rbuf : sbuf;
        CK_TRY(ck_fold_in(&f, mine, NULL, NULL, count, dt, op, tag, comm));
        if (rank != root) goto out;
        acc = rbuf;
        CK_TRY(ck_recv(acc, span(count, pof2, 0, 1), dt, 0, tag, comm));
        v = 0;
        w = 1;
    } else {
        /* Only a fold receives a whole vector; the halving needs half of it. */
        CK_TRY(ck_tmp_alloc(&in_tmp, f.partner >= 0 ? count : span(count, pof2, 0, pof2 / 2), dt));
        CK_TRY(ck_reduce_fold_acc(sbuf, rbuf, count, dt, op, rank == root, &f, tag, comm, &acc_tmp,
                                  &in_tmp, &acc));
        /* As in MPICH's allreduce: the lower virtual rank of a pair keeps
         * the first half of the window both still reduce. */
        CK_SPAN_BEGIN("reduce_scatter");
        for (int mask = 1; mask < pof2; mask <<= 1) {
            const int vpeer = v ^ mask, half = w / 2, lower = v < vpeer;
            const int peer = ck_fold_real(vpeer, rem, CK_FOLD_KEEP_EVEN);
            const int keep = lower ? lo : lo + half, give = lower ? lo + half : lo;
            size_t nkeep = span(count, pof2, keep, keep + half);
            CK_TRY(ck_sendrecv(ck_elem(acc, ck_block_offset(count, pof2, give), extent),
                               span(count, pof2, give, give + half), peer, in_tmp.buf, nkeep, peer,
                               dt, tag, comm));
            CK_TRY(ck_reduce_local(in_tmp.buf,
                                   ck_elem(acc, ck_block_offset(count, pof2, keep), extent), nkeep,
                                   dt, op));
            lo = keep;
            w = half;
        }
        CK_SPAN_END("reduce_scatter");
        if (root_out && v == 0) {
            /* Block 0 is virtual rank 0's (bit_reverse(0) = 0). */
            CK_TRY(ck_send(acc, span(count, pof2, 0, 1), dt, root, tag, comm));
            goto out;
        }
    }

    /* Gather, distance pof2/2 first: of a pair the member whose bits from
     * this distance up differ from the root's sends its window and leaves,
     * the other appends the adjacent window it receives. */
    CK_SPAN_BEGIN("gather");
    for (int mask = pof2 / 2; mask > 0; mask >>= 1) {
        const int vpeer = v ^ mask;
        const int peer = vpeer == 0 && root_out ? root : ck_fold_real(vpeer, rem, CK_FOLD_KEEP_EVEN);
        if (((vpeer ^ vroot) & ~(mask - 1)) == 0) {
            CK_TRY(ck_send(ck_elem(acc, ck_block_offset(count, pof2, lo), extent),
                           span(count, pof2, lo, lo + w), dt, peer, tag, comm));
            break;
        }
        const int plo = v < vpeer ? lo + w : lo - w;
        CK_TRY(ck_recv(ck_elem(acc, ck_block_offset(count, pof2, plo), extent),
                       span(count, pof2, plo, plo + w), dt, peer, tag, comm));
        if (plo < lo) lo = plo;
        w *= 2;
    }
    CK_SPAN_END("gather");
out:
    ck_tmp_free(&acc_tmp);
    ck_tmp_free(&in_tmp);
    return rc;
}
