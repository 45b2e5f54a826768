/* Segmented ring allreduce (Open MPI coll/base "ring_segmented"; Patarasuk &
 * Yuan's bandwidth-optimal ring). The vector is cut into p blocks. A ring
 * reduce-scatter (p-1 steps: send one block to rank+1, reduce the block from
 * rank-1 into place) leaves rank r with block r+1 complete; a ring allgather
 * (p-1 steps) circulates the complete blocks. Each rank sends 2n(p-1)/p.
 * A block larger than one segment moves as a train of segment-sized messages
 * with the receive of the next segment posted before the current one is
 * reduced, so reduction overlaps transfer. The partial sums wrap around the
 * ring, breaking rank order: commutative ops only. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* Bytes per segment; whole elements, at least one. Overridable to exercise
 * segmentation with small test vectors. */
#ifndef CK_ALLREDUCE_RING_SEG_BYTES
#define CK_ALLREDUCE_RING_SEG_BYTES ((size_t)1 << 20)
#endif

static size_t nsegs(size_t n, size_t seg) { return (n + seg - 1) / seg; }

/* One reduce-scatter step: send the sn elements at sblk to `right` and reduce
 * the rn elements arriving from `left` into rblk, both in segments of `seg`
 * elements, through two alternating receive buffers buf0/buf1. */
static int rs_step(const char *sblk, size_t sn, char *rblk, size_t rn, size_t seg,
                   char *buf[2], MPI_Request *sreq, int right, int left,
                   MPI_Aint ext, MPI_Datatype dt, MPI_Op op, int tag, MPI_Comm comm)
{
    int rc;
    size_t ns = nsegs(sn, seg), nr = nsegs(rn, seg), posted = 0;
    MPI_Request rreq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    for (size_t i = 0; i < ns; i++) sreq[i] = MPI_REQUEST_NULL;
    for (size_t i = 0; i < ns; i++) {
        size_t off = i * seg, n = sn - off < seg ? sn - off : seg;
        CK_TRY(ck_isend(ck_elem(sblk, off, ext), n, dt, right, tag, comm, &sreq[i]));
        posted = i + 1;
    }
    if (nr > 0) {
        CK_TRY(ck_irecv(buf[0], rn < seg ? rn : seg, dt, left, tag, comm, &rreq[0]));
    }
    for (size_t i = 0; i < nr; i++) {
        if (i + 1 < nr) {
            size_t off = (i + 1) * seg, n = rn - off < seg ? rn - off : seg;
            CK_TRY(ck_irecv(buf[(i + 1) & 1], n, dt, left, tag, comm, &rreq[(i + 1) & 1]));
        }
        CK_TRY(ck_waitall(1, &rreq[i & 1]));
        size_t off = i * seg, n = rn - off < seg ? rn - off : seg;
        CK_TRY(ck_reduce_local(buf[i & 1], ck_elem(rblk, off, ext), n, dt, op));
    }
    rc = ck_waitall((int)posted, sreq);
    posted = 0;
out:
    /* After an error, still complete what was started so that no request
     * outlives its buffer: the peers run the same schedule, so every posted
     * message is matched. The first error code is the one reported. */
    if (rc != MPI_SUCCESS) {
        for (int k = 0; k < 2; k++)
            if (rreq[k] != MPI_REQUEST_NULL) (void)ck_waitall(1, &rreq[k]);
        if (posted > 0) (void)ck_waitall((int)posted, sreq);
    }
    return rc;
}

int ck_allreduce_ring(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                      MPI_Op op, MPI_Comm comm)
{
    int rc, rank, size;
    ck_tmp tmp = {0};
    MPI_Request *sreq = NULL;
    MPI_Aint ext;
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, 1, comm, &rank, &size));
    if (count == 0) return MPI_SUCCESS;
    if (sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
    if (size == 1) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_ALLREDUCE);
    const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    CK_TRY(ck_type_extent(dt, &ext));
    size_t seg = CK_ALLREDUCE_RING_SEG_BYTES / (size_t)ext;
    if (seg == 0) seg = 1;
    const size_t maxblk = ck_block_count(count, size, 0);
    if (seg > maxblk) seg = maxblk;
    const size_t maxseg = nsegs(maxblk, seg);

    CK_TRY(ck_tmp_alloc(&tmp, 2 * seg, dt));
    sreq = malloc(maxseg * sizeof *sreq);
    if (sreq == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    char *buf[2] = {tmp.buf, ck_elem(tmp.buf, seg, ext)};

    /* Steps 0 .. p-2 reduce-scatter, p-1 .. 2p-3 allgather. */
    CK_SPAN_BEGIN("reduce_scatter");
    for (int s = 0; s < size - 1; s++) {
        CK_SPAN_BEGIN_STEP("step", s);
        int sb = ((rank - s) % size + size) % size, rb = (sb - 1 + size) % size;
        CK_TRY(rs_step(ck_elem(rbuf, ck_block_offset(count, size, sb), ext),
                       ck_block_count(count, size, sb),
                       ck_elem(rbuf, ck_block_offset(count, size, rb), ext),
                       ck_block_count(count, size, rb), seg, buf, sreq, right, left, ext, dt,
                       op, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");
    /* Rank r now holds block r+1 complete; pass the complete blocks around. */
    CK_SPAN_BEGIN("allgather");
    for (int s = 0; s < size - 1; s++) {
        CK_SPAN_BEGIN_STEP("step", size - 1 + s);
        int sb = ((rank + 1 - s) % size + size) % size, rb = (sb - 1 + size) % size;
        CK_TRY(ck_sendrecv(ck_elem(rbuf, ck_block_offset(count, size, sb), ext),
                           ck_block_count(count, size, sb), right,
                           ck_elem(rbuf, ck_block_offset(count, size, rb), ext),
                           ck_block_count(count, size, rb), left, dt, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
out:
    free(sreq);
    ck_tmp_free(&tmp);
    return rc;
}
