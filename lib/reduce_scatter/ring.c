/* Ring ("pairwise") reduce-scatter, as in Open MPI coll/base and MPICH.
 * p-1 steps: every rank passes one partially reduced block to rank+1 and folds
 * the block arriving from rank-1 into its own contribution to that block, so
 * after the last step rank r holds block r reduced over all ranks. Each rank
 * sends (p-1) blocks, the bandwidth minimum; the partial results wrap around
 * the ring, so rank order is lost and the op must be commutative. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_reduce_scatter_ring(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                           MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size;
    ck_tmp t0 = {0}, t1 = {0};
    MPI_Aint ext;
    const void *in;
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, 1, NULL, comm, &rank, &size));
    /* Whole-vector local operations take int counts too. */
    if ((size_t)size * count > CK_MAX_COUNT) return MPI_ERR_COUNT;
    if (count == 0) return MPI_SUCCESS;
    in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    if (size == 1) return ck_copy(in, rbuf, count, dt);

    const int tag = CK_TAG(CK_REDUCE_SCATTER);
    const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    CK_TRY(ck_type_extent(dt, &ext));
    CK_TRY(ck_tmp_alloc(&t0, count, dt));
    CK_TRY(ck_tmp_alloc(&t1, count, dt));

    /* The first block on its way is this rank's raw contribution to the left
     * neighbour's block; it travels p-1 hops and ends at its owner. */
    const char *out_blk = ck_elem(in, (size_t)left * count, ext);
    char *acc = t0.buf, *spare = t1.buf;
    CK_SPAN_BEGIN("reduce_scatter");
    for (int s = 0; s < size - 1; s++) {
        CK_SPAN_BEGIN_STEP("step", s);
        int blk = ((rank - s - 2) % size + size) % size;
        CK_TRY(ck_sendrecv(out_blk, count, right, spare, count, left, dt, tag, comm));
        CK_TRY(ck_reduce_local(ck_elem(in, (size_t)blk * count, ext), spare, count, dt, op));
        /* The block just sent is no longer needed: its buffer takes the next arrival. */
        char *x = acc;
        acc = spare;
        spare = x;
        out_blk = acc;
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");
    /* Written only now: with MPI_IN_PLACE block 0 of the input lives there. */
    CK_TRY(ck_copy(acc, rbuf, count, dt));
out:
    ck_tmp_free(&t0);
    ck_tmp_free(&t1);
    return rc;
}
