/* Binomial-tree gather (MPICH; Thakur, Rabenseifner, Gropp 2005).
 *
 * Ranks are renumbered relative to the root (vr = rank - root mod p). Rank vr
 * owns the subtree of relative ranks [vr, vr + min(lowbit(vr), p - vr)): its
 * children are vr + 1, vr + 2, vr + 4, ... below lowbit(vr), and each child's
 * subtree is a contiguous run of relative ranks. So an inner rank collects its
 * subtree's blocks contiguously, in relative order, in a temporary buffer and
 * forwards them to its parent vr - lowbit(vr) in one message: ceil(log2 p)
 * rounds, and every block crosses each tree level once.
 *
 * At the root relative order is real rank order rotated by root. The children's
 * runs are received straight into their place in rbuf; only the one run that
 * crosses the end of rbuf (relative ranks mapping past p-1 back to 0) goes
 * through a temporary buffer and is split in two. Leaves send sbuf directly. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

static int lowbit(int v) { return v & -v; }

int ck_gather_binomial(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                       int root, MPI_Comm comm)
{
    int rc, rank, size;
    MPI_Aint extent;
    ck_tmp tmp = {0};

    CK_TRY(ck_check_args(comm, dt, count, &rank, &size));
    CK_TRY(ck_check_root(root, size));
    CK_TRY(ck_check_buf(sbuf, count));
    if (rank == root) CK_TRY(ck_check_buf(rbuf, count));
    if (count == 0) return MPI_SUCCESS;
    /* Subtree runs travel as one message of up to p/2 blocks. Every rank
     * computes the same bound, so all of them refuse together. */
    if ((size_t)size * count > CK_MAX_COUNT) return MPI_ERR_COUNT;

    CK_TRY(ck_type_extent(dt, &extent));
    const int tag = CK_TAG(CK_GATHER);
    const int vr = ck_rel_rank(rank, root, size);

    CK_SPAN_BEGIN("tree");
    if (vr == 0) {
        if (sbuf != MPI_IN_PLACE)
            CK_TRY(ck_copy(sbuf, ck_elem(rbuf, (size_t)root * count, extent), count, dt));
        /* Smaller subtrees finish first, so take the children in that order. */
        for (int mask = 1; mask < size; mask <<= 1) {
            int nb = mask < size - mask ? mask : size - mask;
            int first = ck_abs_rank(mask, root, size); /* the child's own rank */
            if (first + nb <= size) {
                CK_TRY(ck_recv(ck_elem(rbuf, (size_t)first * count, extent),
                               (size_t)nb * count, dt, first, tag, comm));
            } else {
                int head = size - first; /* blocks first..p-1; the rest wrap to 0.. */
                CK_TRY(ck_tmp_alloc(&tmp, (size_t)nb * count, dt));
                CK_TRY(ck_recv(tmp.buf, (size_t)nb * count, dt, first, tag, comm));
                CK_TRY(ck_copy(tmp.buf, ck_elem(rbuf, (size_t)first * count, extent),
                               (size_t)head * count, dt));
                CK_TRY(ck_copy(ck_elem(tmp.buf, (size_t)head * count, extent), rbuf,
                               (size_t)(nb - head) * count, dt));
                ck_tmp_free(&tmp);
            }
        }
        rc = MPI_SUCCESS;
        CK_SPAN_END("tree");
        goto out;
    }

    const int low = lowbit(vr);
    const int parent = ck_abs_rank(vr - low, root, size);
    const int nsub = low < size - vr ? low : size - vr;
    if (nsub == 1) {
        CK_TRY(ck_send(sbuf, count, dt, parent, tag, comm));
        CK_SPAN_END("tree");
        goto out;
    }
    CK_TRY(ck_tmp_alloc(&tmp, (size_t)nsub * count, dt));
    CK_TRY(ck_copy(sbuf, tmp.buf, count, dt));
    for (int mask = 1; mask < low && vr + mask < size; mask <<= 1) {
        int nb = mask < size - vr - mask ? mask : size - vr - mask;
        CK_TRY(ck_recv(ck_elem(tmp.buf, (size_t)mask * count, extent), (size_t)nb * count,
                       dt, ck_abs_rank(vr + mask, root, size), tag, comm));
    }
    CK_TRY(ck_send(tmp.buf, (size_t)nsub * count, dt, parent, tag, comm));
    CK_SPAN_END("tree");
out:
    ck_tmp_free(&tmp);
    return rc;
}
