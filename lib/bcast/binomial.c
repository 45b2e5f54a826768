/* Binomial-tree broadcasts on ranks relative to the root. Both trees have the
 * same shape (every rank receives the whole buffer once, the root sends it
 * ceil(log2 p) times); they differ in the order the root serves its subtrees,
 * which changes which links are busy at the same time:
 *   doubling: the root first sends to distance 1, then 2, 4, ... (Open MPI
 *             coll/base), so early steps use short hops;
 *   halving:  the root first sends to the farthest rank, p/2 away, then half
 *             that distance, ... (MPICH), so the big subtrees start first.
 * Distances are compared as `d < size - r` rather than `r + d < size` so that
 * nothing overflows near INT_MAX ranks.
 *
 * How the sends are issued follows the library each tree comes from, at the
 * same messages in the same order:
 *   doubling: a rank posts the sends to all its children and then waits for
 *             them together, as Open MPI's generic tree bcast does
 *             (coll_base_bcast.c, ompi_coll_base_bcast_intra_generic, which
 *             its binomial runs on the in-order tree built by
 *             ompi_coll_base_topo_build_bmtree), so that a child that is late
 *             or a rendezvous handshake does not hold back its siblings;
 *   halving:  blocking sends, one after the other, as MPICH's
 *             MPIR_Bcast_intra_binomial does (MPIC_Send per child). */
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* One request per child at most: a rank has at most ceil(log2 p) <= 31
 * children, so the requests fit on the stack and nothing is allocated. */
#define CK_BCAST_BINOMIAL_MAX_CHILDREN 32

int ck_bcast_binomial_doubling(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc, rank, size;
    CK_TRY(ck_check_bcast(buf, count, dt, root, comm, &rank, &size));
    if (count == 0 || size == 1) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_BCAST);
    const int s = ck_log2_ceil(size);
    const int r = ck_rel_rank(rank, root, size);

    /* At step k the ranks r < 2^k hold the data and send to r + 2^k, so rank
     * r receives at the step of its highest bit and sends in every later one.
     * A receive's step times the receive; a send's step times only its post:
     * the sends to the children overlap, so their transfers fall in the one
     * wait after the posts, inside "tree" but in no step. */
    MPI_Request reqs[CK_BCAST_BINOMIAL_MAX_CHILDREN];
    int posted = 0, k = 0;
    CK_SPAN_BEGIN("tree");
    if (r != 0) {
        int h = ck_high_bit(r);
        CK_SPAN_BEGIN_STEP("step", h);
        rc = ck_recv(buf, count, dt, ck_abs_rank(r - (1 << h), root, size), tag, comm);
        CK_SPAN_END("step");
        k = h + 1;
    }
    for (; k < s && rc == MPI_SUCCESS; k++) {
        int d = 1 << k;
        if (d >= size - r) continue;
        CK_SPAN_BEGIN_STEP("step", k);
        rc = ck_isend(buf, count, dt, ck_abs_rank(r + d, root, size), tag, comm, &reqs[posted]);
        CK_SPAN_END("step");
        if (rc == MPI_SUCCESS) posted++;
    }
    /* After a failed post the sends already started are still waited for, so
     * that none outlives this call: the children run the same schedule, so
     * every one is matched. The first error is the one reported. */
    if (posted > 0) {
        int wrc = ck_waitall(posted, reqs);
        if (rc == MPI_SUCCESS) rc = wrc;
    }
    CK_SPAN_END("tree");
out:
    return rc;
}

int ck_bcast_binomial_halving(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc, rank, size;
    CK_TRY(ck_check_bcast(buf, count, dt, root, comm, &rank, &size));
    if (count == 0 || size == 1) return MPI_SUCCESS;

    const int tag = CK_TAG(CK_BCAST);
    const int r = ck_rel_rank(rank, root, size);

    /* Senders at distance 2^j are the multiples of 2^(j+1), so rank r hears
     * from r minus its lowest bit and then serves every smaller distance. */
    /* The step at distance 2^j is step log2ceil(p) - 1 - j. */
    int k = ck_log2_ceil(size);
    CK_SPAN_BEGIN("tree");
    if (r != 0) {
        k = ck_low_bit(r);
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(size) - 1 - k);
        CK_TRY(ck_recv(buf, count, dt, ck_abs_rank(r - (1 << k), root, size), tag, comm));
        CK_SPAN_END("step");
    }
    for (int j = k - 1; j >= 0; j--) {
        int d = 1 << j;
        if (d >= size - r) continue;
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(size) - 1 - j);
        CK_TRY(ck_send(buf, count, dt, ck_abs_rank(r + d, root, size), tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("tree");
out:
    return rc;
}
