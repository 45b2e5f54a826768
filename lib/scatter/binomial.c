/* Binomial-tree scatter (MPICH; Thakur, Rabenseifner, Gropp 2005): the mirror
 * image of the binomial gather.
 *
 * Ranks are renumbered relative to the root (vr = rank - root mod p). Rank vr
 * owns the subtree of relative ranks [vr, vr + min(lowbit(vr), p - vr)) and
 * receives that subtree's blocks, in relative order, in one message from its
 * parent vr - lowbit(vr). It then hands each child vr + mask (mask = largest
 * power of two below lowbit(vr) first, so the biggest subtree starts
 * forwarding earliest) the child's contiguous run, and keeps the first block:
 * ceil(log2 p) rounds.
 *
 * At the root relative order is real rank order rotated by root, so each
 * child's run is sent straight from sbuf; only the one run that crosses the
 * end of sbuf (relative ranks wrapping past p-1 to 0) is first packed into a
 * temporary buffer. Leaves receive directly into rbuf. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

static int lowbit(int v) { return v & -v; }

int ck_scatter_binomial(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                        int root, MPI_Comm comm)
{
    int rc, rank, size;
    MPI_Aint extent;
    ck_tmp tmp = {0};

    CK_TRY(ck_check_args(comm, dt, count, &rank, &size));
    CK_TRY(ck_check_root(root, size));
    if (rank == root) CK_TRY(ck_check_buf(sbuf, count));
    CK_TRY(ck_check_buf(rbuf, count));
    if (count == 0) return MPI_SUCCESS;
    /* Subtree runs travel as one message of up to p/2 blocks. Every rank
     * computes the same bound, so all of them refuse together. */
    if ((size_t)size * count > CK_MAX_COUNT) return MPI_ERR_COUNT;

    CK_TRY(ck_type_extent(dt, &extent));
    const int tag = CK_TAG(CK_SCATTER);
    const int vr = ck_rel_rank(rank, root, size);

    CK_SPAN_BEGIN("tree");
    if (vr == 0) {
        for (int mask = size > 1 ? ck_pow2_floor(size - 1) : 0; mask > 0; mask >>= 1) {
            int nb = mask < size - mask ? mask : size - mask;
            int first = ck_abs_rank(mask, root, size); /* the child's own rank */
            if (first + nb <= size) {
                CK_TRY(ck_send(ck_elem(sbuf, (size_t)first * count, extent),
                               (size_t)nb * count, dt, first, tag, comm));
            } else {
                int head = size - first; /* blocks first..p-1; the rest wrap to 0.. */
                CK_TRY(ck_tmp_alloc(&tmp, (size_t)nb * count, dt));
                CK_TRY(ck_copy(ck_elem(sbuf, (size_t)first * count, extent), tmp.buf,
                               (size_t)head * count, dt));
                CK_TRY(ck_copy(sbuf, ck_elem(tmp.buf, (size_t)head * count, extent),
                               (size_t)(nb - head) * count, dt));
                CK_TRY(ck_send(tmp.buf, (size_t)nb * count, dt, first, tag, comm));
                ck_tmp_free(&tmp);
            }
        }
        if (rbuf != MPI_IN_PLACE)
            CK_TRY(ck_copy(ck_elem(sbuf, (size_t)root * count, extent), rbuf, count, dt));
        CK_SPAN_END("tree");
        goto out;
    }

    const int low = lowbit(vr);
    const int parent = ck_abs_rank(vr - low, root, size);
    const int nsub = low < size - vr ? low : size - vr;
    if (nsub == 1) {
        CK_TRY(ck_recv(rbuf, count, dt, parent, tag, comm));
        CK_SPAN_END("tree");
        goto out;
    }
    CK_TRY(ck_tmp_alloc(&tmp, (size_t)nsub * count, dt));
    CK_TRY(ck_recv(tmp.buf, (size_t)nsub * count, dt, parent, tag, comm));
    for (int mask = low >> 1; mask > 0; mask >>= 1) {
        if (vr + mask >= size) continue;
        int nb = mask < size - vr - mask ? mask : size - vr - mask;
        CK_TRY(ck_send(ck_elem(tmp.buf, (size_t)mask * count, extent), (size_t)nb * count,
                       dt, ck_abs_rank(vr + mask, root, size), tag, comm));
    }
    CK_TRY(ck_copy(tmp.buf, rbuf, count, dt));
    CK_SPAN_END("tree");
out:
    ck_tmp_free(&tmp);
    return rc;
}
