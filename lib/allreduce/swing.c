/* Swing allreduce (De Sensi et al., "Swing: Short-cutting Rings for Higher
 * Bandwidth Allreduce", NSDI'24). Butterflies whose step-k partner sits at
 * distance |rho(k)| = 1, 1, 3, 5, 11, ... (v + rho(k) for even v, v - rho(k)
 * for odd v) instead of 2^k: on a ring or torus the partners are about a third
 * closer than recursive doubling's, for the same step count and volume.
 *   - swing_latency: the whole vector every step, log2 p' steps, n per step.
 *   - swing_bandwidth: reduce-scatter (steps 0..s-1, halving the data, so the
 *     biggest messages go to the nearest partners) then allgather (steps
 *     s-1..0, doubling); the blocks of a step are not contiguous and travel
 *     packed (lib/core/swing.c). 2 log2 p' steps, 2n(p'-1)/p' bytes.
 * Non-power-of-two p: the neighbouring pairs (2i, 2i+1), i < p - p', fold
 * into rank 2i before the butterfly and 2i+1 gets the result after it (see
 * lib/core/swing.h): two more steps and n more bytes for those pairs.
 * Partners combine sums of interleaved rank sets: commutative ops only. */
#include "../core/ck_core.h"
#include "../core/bine.h"
#include "../core/swing.h"
#include "collkit/spans.h"

/* Common prologue: checks, local copy, folding in. Returns MPI_SUCCESS with
 * *done set when this rank has nothing more to do. */
static int fold_in(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                   MPI_Comm comm, int *rank, int *size, int *done)
{
    int rc;
    ck_tmp tmp = {0};
    *done = 1;
    CK_TRY(ck_check_args(comm, dt, count, rank, size));
    CK_TRY(ck_check_op(op, 1, NULL));
    CK_TRY(ck_check_buf(sbuf, count));
    CK_TRY(ck_check_buf(rbuf, count));
    if (count == 0) goto out;
    if (sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
    if (*size == 1) goto out;

    const int tag = CK_TAG(CK_ALLREDUCE), r = *rank;
    if (ck_swing_vrank(r, *size) < 0) {
        /* Folded rank: its neighbour r-1 reduces for both and returns the
         * result. */
        CK_SPAN_BEGIN("fold");
        CK_TRY(ck_send(rbuf, count, dt, r - 1, tag, comm));
        CK_SPAN_END("fold");
        CK_SPAN_BEGIN("unfold");
        CK_TRY(ck_recv(rbuf, count, dt, r - 1, tag, comm));
        CK_SPAN_END("unfold");
        goto out;
    }
    if (ck_swing_width(ck_swing_vrank(r, *size), *size) == 2) {
        CK_TRY(ck_tmp_alloc(&tmp, count, dt));
        CK_SPAN_BEGIN("fold");
        CK_TRY(ck_recv(tmp.buf, count, dt, r + 1, tag, comm));
        CK_TRY(ck_reduce_local(tmp.buf, rbuf, count, dt, op));
        CK_SPAN_END("fold");
    }
    *done = 0;
out:
    ck_tmp_free(&tmp);
    return rc;
}

static int fold_out(void *rbuf, size_t count, MPI_Datatype dt, int rank, int size,
                    MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    if (ck_swing_width(ck_swing_vrank(rank, size), size) == 2) {
        CK_SPAN_BEGIN("unfold");
        rc = ck_send(rbuf, count, dt, rank + 1, CK_TAG(CK_ALLREDUCE), comm);
        CK_SPAN_END("unfold");
    }
    return rc;
}

int ck_allreduce_swing_latency(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                               MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size, done;
    ck_tmp tmp = {0};
    CK_TRY(fold_in(sbuf, rbuf, count, dt, op, comm, &rank, &size, &done));
    if (done) goto out;

    const int tag = CK_TAG(CK_ALLREDUCE), p2 = ck_pow2_floor(size), s = ck_log2_ceil(p2);
    const int v = ck_swing_vrank(rank, size);
    CK_TRY(ck_tmp_alloc(&tmp, count, dt));
    CK_SPAN_BEGIN("butterfly");
    for (int k = 0; k < s; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        int q = ck_swing_real(ck_bine_partner(v, k, p2), size);
        CK_TRY(ck_sendrecv(rbuf, count, q, tmp.buf, count, q, dt, tag, comm));
        CK_TRY(ck_reduce_local(tmp.buf, rbuf, count, dt, op));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("butterfly");
    CK_TRY(fold_out(rbuf, count, dt, rank, size, comm));
out:
    ck_tmp_free(&tmp);
    return rc;
}

int ck_allreduce_swing_bandwidth(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                 MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size, done;
    size_t *off = NULL;
    CK_TRY(fold_in(sbuf, rbuf, count, dt, op, comm, &rank, &size, &done));
    if (done) goto out;

    const int tag = CK_TAG(CK_ALLREDUCE), p2 = ck_pow2_floor(size);
    /* The vector cut into p' nearly equal blocks, block v owned by virtual
     * rank v after the reduce-scatter (empty blocks when count < p'). */
    off = malloc(((size_t)p2 + 1) * sizeof *off);
    if (off == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    for (int v = 0; v <= p2; v++) off[v] = ck_block_offset(count, p2, v);
    /* Steps 0 .. s-1 reduce-scatter, s .. 2s-1 allgather (lib/core/swing.c). */
    CK_SPAN_BEGIN("reduce_scatter");
    CK_TRY(ck_swing_rs_phase(rbuf, off, dt, op, rank, size, tag, comm));
    CK_SPAN_END("reduce_scatter");
    CK_SPAN_BEGIN("allgather");
    CK_TRY(ck_swing_ag_phase(rbuf, off, dt, rank, size, tag, comm,
                             ck_log2_ceil(ck_pow2_floor(size))));
    CK_SPAN_END("allgather");
    CK_TRY(fold_out(rbuf, count, dt, rank, size, comm));
out:
    free(off);
    return rc;
}
