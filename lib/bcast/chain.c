/* Pipelined chain broadcast: relative rank r receives from r - 1 and forwards
 * to r + 1, segment by segment. Once the pipeline is full every link carries
 * a segment at the same time, so for long vectors the time approaches n / B
 * plus (p - 2) segment latencies, independent of log p. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* Segment size: large enough that per-message overhead is small, small enough
 * that the pipeline fills quickly. Rounded down to whole elements, at least 1. */
#define CK_BCAST_CHAIN_SEGMENT_BYTES ((size_t)64 * 1024)

int ck_bcast_chain(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc, rank, size;
    MPI_Aint extent;
    /* Receives of segments i and i + 1 alternate between rreq[i % 2] and
     * rreq[(i + 1) % 2]; sreq is the one send in flight. */
    MPI_Request rreq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, sreq = MPI_REQUEST_NULL;
    CK_TRY(ck_check_bcast(buf, count, dt, root, comm, &rank, &size));
    if (count == 0 || size == 1) return MPI_SUCCESS;
    CK_TRY(ck_type_extent(dt, &extent));

    const int tag = CK_TAG(CK_BCAST);
    const int r = ck_rel_rank(rank, root, size);
    const int has_prev = r > 0, has_next = r < size - 1;
    const int prev = ck_abs_rank(r - 1 + (has_prev ? 0 : size), root, size);
    const int next = ck_abs_rank(has_next ? r + 1 : 0, root, size);

    size_t seg = CK_BCAST_CHAIN_SEGMENT_BYTES / (size_t)extent;
    if (seg == 0) seg = 1;
    const size_t nseg = (count + seg - 1) / seg;

    /* The receive of segment i + 1 is posted before segment i is forwarded,
     * so the incoming and outgoing links work at the same time; at most one
     * send is in flight per rank. It is also posted before this rank waits
     * for segment i, as Open MPI's generic tree bcast does for its pipeline
     * (coll_base_bcast.c, ompi_coll_base_bcast_intra_generic): two receives
     * are then open, so segment i + 1 finds its receive posted (no
     * unexpected-message copy, no handshake waiting for this rank) even
     * when it arrives while this rank is still waiting for segment i. Only
     * the wait moved: the posting order (irecv 0, irecv 1, isend 0, irecv 2,
     * isend 1, ...) is the one of waiting for segment i first. */
    /* Step i: segment i passes this rank (received, then forwarded). */
    CK_SPAN_BEGIN("pipeline");
    if (has_prev) CK_TRY(ck_irecv(buf, count < seg ? count : seg, dt, prev, tag, comm, &rreq[0]));
    for (size_t i = 0; i < nseg; i++) {
        CK_SPAN_BEGIN_STEP("step", i);
        size_t off = i * seg, n = count - off < seg ? count - off : seg;
        if (has_prev) {
            if (i + 1 < nseg) {
                size_t noff = off + seg, nn = count - noff < seg ? count - noff : seg;
                CK_TRY(ck_irecv(ck_elem(buf, noff, extent), nn, dt, prev, tag, comm,
                                &rreq[(i + 1) & 1]));
            }
            CK_TRY(ck_waitall(1, &rreq[i & 1]));
        }
        if (has_next) {
            /* No wait on the first segment: there is no send yet (a wait on
             * a null request is one more MPI call for nothing on short
             * vectors). */
            if (sreq != MPI_REQUEST_NULL) CK_TRY(ck_waitall(1, &sreq));
            CK_TRY(ck_isend(ck_elem(buf, off, extent), n, dt, next, tag, comm, &sreq));
        }
        CK_SPAN_END("step");
    }
    if (sreq != MPI_REQUEST_NULL) CK_TRY(ck_waitall(1, &sreq));
    CK_SPAN_END("pipeline");
out:
    /* After an error, still complete what was started so that no request
     * outlives the call (the pattern of allreduce/ring.c): the neighbours run
     * the same schedule, so every posted message is matched. The first error
     * code is the one reported. */
    if (rc != MPI_SUCCESS) {
        for (int k = 0; k < 2; k++)
            if (rreq[k] != MPI_REQUEST_NULL) (void)ck_waitall(1, &rreq[k]);
        if (sreq != MPI_REQUEST_NULL) (void)ck_waitall(1, &sreq);
    }
    return rc;
}
