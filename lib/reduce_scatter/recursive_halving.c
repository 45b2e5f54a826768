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

/* First original rank (= first block) that virtual rank v stands for. */
static int first_block(int v, int rem) { return v < rem ? 2 * v : v + rem; }

/* Real rank of virtual rank v. */
static int real_rank(int v, int rem) { return v < rem ? 2 * v + 1 : v + rem; }

int ck_reduce_scatter_recursive_halving(const void *sbuf, void *rbuf, size_t count,
                                        MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size;
    ck_tmp acc = {0}, tmp = {0};
    MPI_Aint ext;
    const void *in;
    CK_TRY(ck_check_args(comm, dt, count, &rank, &size));
    CK_TRY(ck_check_op(op, 1, NULL));
    CK_TRY(ck_check_buf(sbuf, count));
    CK_TRY(ck_check_buf(rbuf, count));
    if ((size_t)size * count > CK_MAX_COUNT) return MPI_ERR_COUNT;
    if (count == 0) return MPI_SUCCESS;
    in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    if (size == 1) return ck_copy(in, rbuf, count, dt);

    const int tag = CK_TAG(CK_REDUCE_SCATTER);
    const size_t total = (size_t)size * count;
    const int p2 = ck_pow2_floor(size), rem = size - p2;
    CK_TRY(ck_type_extent(dt, &ext));

    if (rank < 2 * rem && rank % 2 == 0) {
        /* The send completes before the receive may overwrite an in-place input. */
        CK_SPAN_BEGIN("fold");
        CK_TRY(ck_send(in, total, dt, rank + 1, tag, comm));
        CK_SPAN_END("fold");
        CK_SPAN_BEGIN("unfold");
        CK_TRY(ck_recv(rbuf, count, dt, rank + 1, tag, comm));
        CK_SPAN_END("unfold");
        goto out;
    }

    CK_TRY(ck_tmp_alloc(&acc, total, dt));
    CK_TRY(ck_tmp_alloc(&tmp, total, dt));
    CK_TRY(ck_copy(in, acc.buf, total, dt));
    if (rank < 2 * rem) {
        CK_SPAN_BEGIN("fold");
        CK_TRY(ck_recv(tmp.buf, total, dt, rank - 1, tag, comm));
        CK_TRY(ck_reduce_local(tmp.buf, acc.buf, total, dt, op));
        CK_SPAN_END("fold");
    }

    const int vrank = rank < 2 * rem ? rank / 2 : rank - rem;
    int lo = 0, hi = p2; /* virtual ranks whose blocks this rank still reduces */
    CK_SPAN_BEGIN("reduce_scatter");
    for (int mask = p2 / 2; mask > 0; mask >>= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(p2 / mask) - 1);
        int vpeer = vrank ^ mask, mid = lo + mask;
        int klo = vrank < vpeer ? lo : mid, khi = vrank < vpeer ? mid : hi;
        int slo = vrank < vpeer ? mid : lo, shi = vrank < vpeer ? hi : mid;
        size_t koff = (size_t)first_block(klo, rem) * count;
        size_t kn = (size_t)first_block(khi, rem) * count - koff;
        size_t soff = (size_t)first_block(slo, rem) * count;
        size_t sn = (size_t)first_block(shi, rem) * count - soff;
        int peer = real_rank(vpeer, rem);
        CK_TRY(ck_sendrecv(ck_elem(acc.buf, soff, ext), sn, peer, tmp.buf, kn, peer, dt, tag,
                           comm));
        CK_TRY(ck_reduce_local(tmp.buf, ck_elem(acc.buf, koff, ext), kn, dt, op));
        lo = klo;
        hi = khi;
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");

    if (rank < 2 * rem) {
        CK_SPAN_BEGIN("unfold");
        CK_TRY(ck_send(ck_elem(acc.buf, (size_t)(rank - 1) * count, ext), count, dt, rank - 1,
                       tag, comm));
        CK_SPAN_END("unfold");
    }
    CK_TRY(ck_copy(ck_elem(acc.buf, (size_t)rank * count, ext), rbuf, count, dt));
out:
    ck_tmp_free(&acc);
    ck_tmp_free(&tmp);
    return rc;
}
