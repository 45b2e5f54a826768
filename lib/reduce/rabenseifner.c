/* Rabenseifner's reduce: a reduce-scatter by recursive halving leaves each of
 * p' = 2^floor(log2 p) ranks with one fully reduced block, and a binomial
 * gather collects the blocks at the root. Every rank sends and reduces about
 * n instead of n*log2(p), at the price of 2*log2(p') steps.
 *
 * Non-power-of-two p (Thakur, Rabenseifner, Gropp 2005): the r = p - p' extra
 * ranks are folded away first. Working on ranks relative to the root, the
 * first p' - r relative ranks stay as they are; the last 2r form pairs
 * (first + 2j, first + 2j + 1) in which the odd one sends its whole vector to
 * the even one and drops out. Folding the tail rather than the head keeps the
 * root (relative rank 0) inside the power-of-two group, so the gather ends at
 * the real root with no extra message. Pairs are combined in whichever order,
 * hence CK_REQUIRES_COMMUTATIVE.
 *
 * Block mapping: the vector is cut into p' blocks (ck_block_count over p');
 * new rank q ends the reduce-scatter owning block q, so the group of new
 * ranks [q, q + 2^k) owns one contiguous slice during the gather, which ends
 * at new rank 0 = the root. Blocks may be empty when count < p'. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* Elements of blocks [a, b) out of nb blocks (b may equal nb). */
static size_t span(size_t count, int nb, int a, int b)
{
    return ck_block_offset(count, nb, b) - ck_block_offset(count, nb, a);
}

int ck_reduce_rabenseifner(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                           int root, MPI_Comm comm)
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

    /* Recursive halving over new ranks: keep the half of the current window
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
