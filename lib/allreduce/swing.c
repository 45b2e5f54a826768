/* Swing allreduce (De Sensi et al., "Swing: Short-cutting Rings for Higher
 * Bandwidth Allreduce", NSDI'24). Butterflies whose step-k partner sits at
 * distance |rho(k)| = 1, 1, 3, 5, 11, ... (v + rho(k) for even v, v - rho(k)
 * for odd v) instead of 2^k: on a ring or torus the partners are about a third
 * closer than recursive doubling's, for the same step count and volume.
 *   - swing_latency: the whole vector every step, log2 p' steps, n per step
 *     (the paper's latency-optimal allreduce; floating-point sums may
 *     differ in their last bits between ranks from p' = 8 on);
 *     swing_latency_agreed adds the broadcast of one rank's result.
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

/* Swing's latency variants and Bine's are one schedule each: the same
 * butterfly partners ck_bine_partner(v, k, p') (the Swing paper's pi(r, k)),
 * the same fold, the whole vector each step; the _agreed ones add the same
 * broadcast of one rank's result that makes every rank return the same bits
 * (lib/core/bine_latency.c). */
int ck_allreduce_swing_latency(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                               MPI_Op op, MPI_Comm comm)
{
    return ck_allreduce_bine_latency(sbuf, rbuf, count, dt, op, comm);
}

int ck_allreduce_swing_latency_agreed(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                      MPI_Op op, MPI_Comm comm)
{
    return ck_allreduce_bine_latency_agreed(sbuf, rbuf, count, dt, op, comm);
}

int ck_allreduce_swing_bandwidth(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                 MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size;
    ck_fold f;
    size_t *off = NULL;
    CK_TRY(ck_allreduce_fold_open(sbuf, rbuf, count, dt, op, 1, CK_FOLD_KEEP_EVEN, comm, &rank,
                                  &size, &f));
    if (f.vrank < 0) goto out;

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
    CK_TRY(ck_fold_out(&f, rbuf, NULL, count, dt, tag, comm));
out:
    free(off);
    return rc;
}
