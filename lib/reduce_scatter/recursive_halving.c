/* Recursive-halving reduce-scatter (Thakur, Rabenseifner & Gropp 2005, MPICH).
 * For p' = 2^floor(log2 p) ranks, log2 p' steps: at distance p'/2, p'/4, ...,
 * 1 each rank keeps the half of its current range of blocks that contains its
 * own block, sends the other half to rank XOR distance and reduces what it
 * receives into the kept half. Non-power-of-two p: among the first 2(p-p')
 * ranks each even rank first hands its whole vector to the odd rank above it
 * and sits out; the odd rank then stands for both, owning their two blocks,
 * and finally returns the even rank's block. The halving pairs ranks that are
 * not neighbours in rank order, so the op must be commutative. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_reduce_scatter_recursive_halving(const void *sbuf, void *rbuf, size_t count,
                                        MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size, done;
    ck_tmp acc = {0}, tmp = {0};
    MPI_Aint ext;
    const void *in;
    CK_TRY(ck_reduce_scatter_open(sbuf, rbuf, count, dt, op, 1, comm, &rank, &size, &done));
    if (done) goto out;
    in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;

    const int tag = CK_TAG(CK_REDUCE_SCATTER);
    const int p2 = ck_pow2_floor(size), rem = size - p2;
    CK_TRY(ck_type_extent(dt, &ext));

    const ck_fold f = ck_fold_of(rank, 0, size, CK_FOLD_KEEP_ODD);
    CK_TRY(ck_reduce_scatter_fold_in(&f, in, rbuf, count, size, dt, op, comm, &acc, &tmp));
    if (f.vrank < 0) goto out;

    const int vrank = f.vrank;
    int lo = 0, hi = p2; /* virtual ranks whose blocks this rank still reduces */
    CK_SPAN_BEGIN("reduce_scatter");
    for (int mask = p2 / 2; mask > 0; mask >>= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(p2 / mask) - 1);
        int vpeer = vrank ^ mask, slo, shi;
        ck_halve(vrank, mask, &lo, &hi, &slo, &shi);
        size_t koff = (size_t)ck_fold_first(lo, rem) * count;
        size_t kn = (size_t)ck_fold_first(hi, rem) * count - koff;
        size_t soff = (size_t)ck_fold_first(slo, rem) * count;
        size_t sn = (size_t)ck_fold_first(shi, rem) * count - soff;
        int peer = ck_fold_real(vpeer, rem, CK_FOLD_KEEP_ODD);
        CK_TRY(ck_sendrecv(ck_elem(acc.buf, soff, ext), sn, peer, tmp.buf, kn, peer, dt, tag,
                           comm));
        CK_TRY(ck_reduce_local(tmp.buf, ck_elem(acc.buf, koff, ext), kn, dt, op));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");

    CK_TRY(ck_reduce_scatter_fold_out(&f, acc.buf, rbuf, rank, count, dt, comm));
out:
    ck_tmp_free(&acc);
    ck_tmp_free(&tmp);
    return rc;
}
