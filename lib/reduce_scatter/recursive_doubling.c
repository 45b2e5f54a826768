/* Recursive-doubling reduce-scatter for non-commutative ops (the MPICH
 * algorithm of Thakur, Rabenseifner & Gropp 2005).
 * At distance 1, 2, 4, ... a rank and its partner merge their two aligned,
 * adjacent groups of ranks into one. Each keeps, reduced over its group, only
 * the blocks it still needs: its own and those of ranks outside the group (the
 * blocks of other group members are finished by them). So a step sends the
 * partner's block plus every block outside the merged group, and the two
 * partial results are combined with the lower group's as the first operand,
 * which keeps rank order. log2 p steps sending (log2 p - 2 + (log2 p + 2)/p) n
 * in all (n = the p-block input) instead of the (p-1)/p n of recursive
 * halving: the price of keeping groups contiguous in rank order.
 * Non-power-of-two p: among the first 2(p-p') ranks (p' = 2^floor(log2 p))
 * rank 2i hands its vector to 2i+1, which reduces a_2i op a_2i+1 and acts as
 * one virtual rank owning both blocks, so virtual ranks cover consecutive,
 * ordered rank ranges; at the end 2i+1 returns block 2i. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* Element range [off, off+n) of the blocks of virtual ranks [vlo, vhi). */
typedef struct {
    size_t off, n;
} range;

static range vrange(int vlo, int vhi, int rem, size_t count)
{
    range r;
    r.off = (size_t)ck_fold_first(vlo, rem) * count;
    r.n = (size_t)ck_fold_first(vhi, rem) * count - r.off;
    return r;
}

int ck_reduce_scatter_recursive_doubling(const void *sbuf, void *rbuf, size_t count,
                                         MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size, done;
    ck_tmp acc = {0}, sp = {0}, rp = {0};
    MPI_Aint ext;
    const void *in;
    CK_TRY(ck_reduce_scatter_open(sbuf, rbuf, count, dt, op, 0, comm, &rank, &size, &done));
    if (done) goto out;
    in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;

    const int tag = CK_TAG(CK_REDUCE_SCATTER);
    const size_t total = (size_t)size * count;
    const int p2 = ck_pow2_floor(size), rem = size - p2;
    CK_TRY(ck_type_extent(dt, &ext));

    const ck_fold f = ck_fold_of(rank, 0, size, CK_FOLD_KEEP_ODD);
    CK_TRY(ck_reduce_scatter_fold_in(&f, in, rbuf, count, size, dt, op, comm, &acc, &rp));
    if (f.vrank < 0) goto out;
    CK_TRY(ck_tmp_alloc(&sp, total, dt));

    const int vrank = f.vrank;
    CK_SPAN_BEGIN("reduce_scatter");
    for (int mask = 1; mask < p2; mask <<= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(mask));
        int vpeer = vrank ^ mask, peer = ck_fold_real(vpeer, rem, CK_FOLD_KEEP_ODD);
        int glo = vrank & ~(2 * mask - 1), ghi = glo + 2 * mask;
        /* Both sides agree on the outer ranges; the middle one is the block
         * of the receiving side. Packed in ascending block order. */
        range snd[3] = {vrange(0, glo, rem, count), vrange(vpeer, vpeer + 1, rem, count),
                        vrange(ghi, p2, rem, count)};
        range rcv[3] = {snd[0], vrange(vrank, vrank + 1, rem, count), snd[2]};
        size_t sn = 0, rn = 0;
        for (int i = 0; i < 3; i++) {
            CK_TRY(ck_copy(ck_elem(acc.buf, snd[i].off, ext), ck_elem(sp.buf, sn, ext),
                           snd[i].n, dt));
            sn += snd[i].n;
        }
        for (int i = 0; i < 3; i++) rn += rcv[i].n;
        CK_TRY(ck_sendrecv(sp.buf, sn, peer, rp.buf, rn, peer, dt, tag, comm));
        size_t at = 0;
        for (int i = 0; i < 3; i++) {
            char *mine = ck_elem(acc.buf, rcv[i].off, ext), *theirs = ck_elem(rp.buf, at, ext);
            if (vpeer < vrank) {
                CK_TRY(ck_reduce_local(theirs, mine, rcv[i].n, dt, op));
            } else {
                /* This group comes first: reduce into the received copy, then move it back. */
                CK_TRY(ck_reduce_local(mine, theirs, rcv[i].n, dt, op));
                CK_TRY(ck_copy(theirs, mine, rcv[i].n, dt));
            }
            at += rcv[i].n;
        }
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");

    CK_TRY(ck_reduce_scatter_fold_out(&f, acc.buf, rbuf, rank, count, dt, comm));
out:
    ck_tmp_free(&acc);
    ck_tmp_free(&sp);
    ck_tmp_free(&rp);
    return rc;
}
