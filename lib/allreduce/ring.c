/* Ring allreduce (Patarasuk & Yuan's bandwidth-optimal ring), two variants:
 *
 * - `ring`: Open MPI's ompi_coll_base_allreduce_intra_ring message for
 *   message. The vector is cut into p blocks (the first count % p one element
 *   longer). A ring reduce-scatter (p-1 steps: send one block to rank+1,
 *   reduce the block from rank-1 into place) leaves rank r with block r+1
 *   complete; a ring allgather (p-1 steps) circulates the complete blocks.
 *   Every block moves as one message. Each rank sends 2n(p-1)/p.
 * - `ring_seg`: the same blocks and steps, but a reduce-scatter block larger
 *   than one segment (1 MiB) moves as a train of segment-sized messages with
 *   the receive of the next segment posted before the current one is
 *   reduced, so reduction overlaps transfer. This is not Open MPI's
 *   ring_segmented, which runs one whole ring reduce-scatter per segment
 *   phase (phase-major order) and splits blocks into phases, not 1 MiB
 *   pieces; so it keeps a name of its own (docs/algorithms.md, parity table).
 *
 * The partial sums wrap around the ring, breaking rank order: commutative ops
 * only.
 *
 * Local work and posting, as Open MPI's ring does it (the messages, their
 * peers, sizes and send order are unchanged by it): every receive from the
 * left is posted one message ahead, across step and phase boundaries, so a
 * message never waits unexpected for its receive (the first one before the
 * first send); a block that is one message goes out with a blocking send,
 * which cannot deadlock because its receive is always already posted or
 * about to be without waiting on anything of ours.
 * Out of place, the reduce-scatter receives straight into rbuf and reduces
 * this rank's own element from sbuf into it (own op received: commutative
 * ops only, which the ring requires anyway), so neither the copy of sbuf
 * into rbuf nor a temporary is needed: block `rank` of rbuf is never read
 * before the allgather fills it, every other block is received first. In
 * place the own data sits where the message would land, so the receives go
 * to two alternating segment buffers, as before. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* Bytes per segment of ring_seg; whole elements, at least one. Overridable
 * to exercise segmentation with small test vectors. */
#ifndef CK_ALLREDUCE_RING_SEG_BYTES
#define CK_ALLREDUCE_RING_SEG_BYTES ((size_t)1 << 20)
#endif

/* Send requests held on the stack: enough for every block of at most this
 * many segments (blocks up to 4 MiB at the default segment size), so the
 * common call allocates no request array. */
#define RING_SREQ_STACK 4

static size_t nsegs(size_t n, size_t seg) { return (n + seg - 1) / seg; }

/* The stream of reduce-scatter receives from the left: segment `next` of the
 * stream is posted while segment `next - 1` is awaited, at most two are
 * outstanding. Segment i of the step whose receive block is b lands in
 * slot[i & 1] (in place) or at its place in rbuf. */
typedef struct {
    const char *sbuf; /* own data, NULL in place (then it is in rbuf) */
    char *rbuf;
    char *slot[2];    /* in place: the two segment buffers */
    MPI_Request req[2];
    size_t seq;       /* receives posted so far */
    size_t count, seg;
    MPI_Aint ext;
    int size, rank, left, tag;
    MPI_Datatype dt;
    MPI_Comm comm;
} rs_stream;

/* Receive block of reduce-scatter step s. */
static int rs_recv_block(const rs_stream *q, int s)
{
    return ((q->rank - s - 1) % q->size + q->size) % q->size;
}

/* Post segment i of step s's receive. */
static int rs_post(rs_stream *q, int s, size_t i)
{
    const int b = rs_recv_block(q, s);
    const size_t off = ck_block_offset(q->count, q->size, b) + i * q->seg;
    const size_t bn = ck_block_count(q->count, q->size, b) - i * q->seg;
    const size_t n = bn < q->seg ? bn : q->seg;
    char *to = q->sbuf != NULL ? ck_elem(q->rbuf, off, q->ext) : q->slot[q->seq & 1];
    int rc = ck_irecv(to, n, q->dt, q->left, q->tag, q->comm, &q->req[q->seq & 1]);
    if (rc == MPI_SUCCESS) q->seq++;
    return rc;
}

/* Post the first segment of the first step from t on whose block is not
 * empty (empty blocks move no message), if any. */
static int rs_post_from(rs_stream *q, int t)
{
    for (; t < q->size - 1; t++)
        if (ck_block_count(q->count, q->size, rs_recv_block(q, t)) > 0) return rs_post(q, t, 0);
    return MPI_SUCCESS;
}

/* Post the receive that follows segment i of step s in the stream, if any:
 * the next segment of the step, else the first of a later step. */
static int rs_post_next(rs_stream *q, int s, size_t i)
{
    size_t nr = nsegs(ck_block_count(q->count, q->size, rs_recv_block(q, s)), q->seg);
    if (i + 1 < nr) return rs_post(q, s, i + 1);
    return rs_post_from(q, s + 1);
}

/* Wait for segment i of step s (stream number `k`) and reduce it into rbuf. */
static int rs_finish(rs_stream *q, size_t k, int s, size_t i, MPI_Datatype dt, MPI_Op op)
{
    const int b = rs_recv_block(q, s);
    const size_t off = ck_block_offset(q->count, q->size, b) + i * q->seg;
    const size_t bn = ck_block_count(q->count, q->size, b) - i * q->seg;
    const size_t n = bn < q->seg ? bn : q->seg;
    int rc = ck_waitall(1, &q->req[k & 1]);
    if (rc != MPI_SUCCESS) return rc;
    if (q->sbuf != NULL)
        return ck_reduce_local(ck_elem(q->sbuf, off, q->ext), ck_elem(q->rbuf, off, q->ext), n,
                               dt, op);
    return ck_reduce_local(q->slot[k & 1], ck_elem(q->rbuf, off, q->ext), n, dt, op);
}

/* Post the receive of allgather step s: block rank - s, into its place. */
static int ag_post(char *rbuf, size_t count, int size, int rank, int s, MPI_Aint ext,
                   MPI_Datatype dt, int left, int tag, MPI_Comm comm, MPI_Request areq[2])
{
    const int rb = ((rank - s) % size + size) % size;
    return ck_irecv(ck_elem(rbuf, ck_block_offset(count, size, rb), ext),
                    ck_block_count(count, size, rb), dt, left, tag, comm, &areq[s & 1]);
}

/* The ring with reduce-scatter blocks cut into seg_bytes pieces (SIZE_MAX:
 * whole blocks). */
static int ring_allreduce(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                          MPI_Op op, MPI_Comm comm, size_t seg_bytes)
{
    int rc, rank, size;
    ck_tmp tmp = {0};
    MPI_Request sreq_stack[RING_SREQ_STACK], *sreq = sreq_stack, *sreq_mem = NULL;
    MPI_Request areq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    size_t posted = 0; /* send requests of the current step not yet completed */
    rs_stream q = {.req = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
    MPI_Aint ext;
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, 1, NULL, comm, &rank, &size));
    if (count == 0) return MPI_SUCCESS;
    if (size == 1) return sbuf != MPI_IN_PLACE ? ck_copy(sbuf, rbuf, count, dt) : MPI_SUCCESS;

    const int tag = CK_TAG(CK_ALLREDUCE);
    const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    CK_TRY(ck_type_extent(dt, &ext));
    size_t seg = seg_bytes / (size_t)ext;
    if (seg == 0) seg = 1;
    const size_t maxblk = ck_block_count(count, size, 0);
    if (seg > maxblk) seg = maxblk;
    const size_t maxseg = nsegs(maxblk, seg);

    /* The own data: sbuf, or rbuf in place. */
    const char *own = sbuf != MPI_IN_PLACE ? (const char *)sbuf : (const char *)rbuf;
    q = (rs_stream){.sbuf = sbuf != MPI_IN_PLACE ? (const char *)sbuf : NULL,
                    .rbuf = rbuf,
                    .req = {MPI_REQUEST_NULL, MPI_REQUEST_NULL},
                    .count = count,
                    .seg = seg,
                    .ext = ext,
                    .size = size,
                    .rank = rank,
                    .left = left,
                    .tag = tag,
                    .dt = dt,
                    .comm = comm};
    if (q.sbuf == NULL) {
        CK_TRY(ck_tmp_alloc(&tmp, 2 * seg, dt));
        q.slot[0] = tmp.buf;
        q.slot[1] = ck_elem(tmp.buf, seg, ext);
    }
    if (maxseg > RING_SREQ_STACK) {
        sreq_mem = malloc(maxseg * sizeof *sreq_mem);
        if (sreq_mem == NULL) {
            rc = MPI_ERR_NO_MEM;
            goto out;
        }
        sreq = sreq_mem;
    }

    /* Steps 0 .. p-2 reduce-scatter, p-1 .. 2p-3 allgather. */
    CK_SPAN_BEGIN("reduce_scatter");
    size_t done = 0; /* stream receives completed */
    for (int s = 0; s < size - 1; s++) {
        CK_SPAN_BEGIN_STEP("step", s);
        /* The first receive goes up before the first send. */
        if (s == 0) CK_TRY(rs_post_from(&q, 0));
        /* Step 0 sends the own block from the own data; later steps the
         * block reduced in the step before, which is in rbuf. */
        const int sb = ((rank - s) % size + size) % size;
        const size_t sn = ck_block_count(count, size, sb), ns = nsegs(sn, seg);
        const char *sblk = ck_elem(s == 0 ? own : (const char *)rbuf,
                                   ck_block_offset(count, size, sb), ext);
        if (ns == 1) {
            CK_TRY(ck_send(sblk, sn, dt, right, tag, comm));
        } else {
            for (size_t i = 0; i < ns; i++) {
                size_t off = i * seg, n = sn - off < seg ? sn - off : seg;
                CK_TRY(ck_isend(ck_elem(sblk, off, ext), n, dt, right, tag, comm, &sreq[i]));
                posted = i + 1;
            }
        }
        const size_t nr = nsegs(ck_block_count(count, size, rs_recv_block(&q, s)), seg);
        for (size_t i = 0; i < nr; i++) {
            CK_TRY(rs_post_next(&q, s, i));
            CK_TRY(rs_finish(&q, done, s, i, dt, op));
            done++;
        }
        if (posted > 0) {
            rc = ck_waitall((int)posted, sreq);
            posted = 0;
            if (rc != MPI_SUCCESS) goto out;
        }
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");

    /* Rank r now holds block r+1 complete; pass the complete blocks around,
     * each as one message (empty ones too), the receive of step s+1 posted
     * before step s's is awaited. */
    CK_SPAN_BEGIN("allgather");
    for (int s = 0; s < size - 1; s++) {
        CK_SPAN_BEGIN_STEP("step", size - 1 + s);
        if (s == 0) CK_TRY(ag_post(rbuf, count, size, rank, 0, ext, dt, left, tag, comm, areq));
        const int sb = ((rank + 1 - s) % size + size) % size;
        CK_TRY(ck_send(ck_elem(rbuf, ck_block_offset(count, size, sb), ext),
                       ck_block_count(count, size, sb), dt, right, tag, comm));
        if (s + 1 < size - 1)
            CK_TRY(ag_post(rbuf, count, size, rank, s + 1, ext, dt, left, tag, comm, areq));
        CK_TRY(ck_waitall(1, &areq[s & 1]));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
out:
    /* After an error, still complete what was started so that no request
     * outlives its buffer: the peers run the same schedule, so every posted
     * message is matched. The first error code is the one reported. */
    if (rc != MPI_SUCCESS) {
        for (int k = 0; k < 2; k++) {
            if (q.req[k] != MPI_REQUEST_NULL) (void)ck_waitall(1, &q.req[k]);
            if (areq[k] != MPI_REQUEST_NULL) (void)ck_waitall(1, &areq[k]);
        }
        if (posted > 0) (void)ck_waitall((int)posted, sreq);
    }
    free(sreq_mem);
    ck_tmp_free(&tmp);
    return rc;
}

int ck_allreduce_ring(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                      MPI_Op op, MPI_Comm comm)
{
    return ring_allreduce(sbuf, rbuf, count, dt, op, comm, SIZE_MAX);
}

int ck_allreduce_ring_seg(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                          MPI_Op op, MPI_Comm comm)
{
    return ring_allreduce(sbuf, rbuf, count, dt, op, comm, CK_ALLREDUCE_RING_SEG_BYTES);
}
