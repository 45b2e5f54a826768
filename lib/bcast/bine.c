/* Bine broadcasts (De Sensi et al., "Bine Trees: Enhancing Collective
 * Operations by Optimizing Communication Locality", SC'25).
 *
 * bine: the distance-halving Bine tree, i.e. the distance-halving binomial
 * tree with rank r at position gray(nb(r)) (lib/core/bine.h). Same steps and
 * volume as the binomial tree; the hops are |rho| long (..., 5, 3, 1, 1)
 * instead of (..., 8, 4, 2, 1), about 2/3 of the total distance.
 *
 * bine_scatter_allgather: Van de Geijn's scatter + allgather on Bine
 * patterns. The vector is cut into p' blocks; virtual rank v owns block
 * sigma(v) = bit_reverse(nu(v)) (lib/core/bine_tree.h). A distance-doubling
 * Bine scatter hands each subtree its sigma range (half the vector goes to
 * the root's nearest neighbour first), then a distance-halving Bine allgather
 * doubles every rank's aligned sigma range per step, the largest exchange
 * last and between neighbours. Every message is one contiguous run of blocks
 * in place in buf: no packing, no reordering.
 *
 * Non-power-of-two p (both): ranks relative to the root are folded onto the
 * p' = 2^floor(log2 p) core (bine_tree.h): pair (2i, 2i+1), i < e = p - p',
 * is virtual rank i. The core runs the power-of-two algorithm and each 2i
 * finally passes the whole vector to its neighbour 2i+1. That is one extra
 * step of n bytes between neighbouring ranks; for the tree the step count
 * stays ceil(log2 p), as for a binomial tree. */
#include "../core/bine.h"
#include "../core/bine_tree.h"
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* Shared start of both: the checks; a rank that drops out of the fold only
 * gets the data from its partner. *done when nothing is left to do. */
static int fold_open(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm, int *size,
                     ck_fold *f, int *done)
{
    int rc, rank;
    *done = 1;
    CK_TRY(ck_check_bcast(buf, count, dt, root, comm, &rank, size));
    if (count == 0 || *size == 1) goto out;
    *f = ck_fold_of(rank, root, *size, CK_FOLD_KEEP_EVEN);
    if (f->vrank < 0) {
        rc = ck_fold_out(f, NULL, buf, count, dt, CK_TAG(CK_BCAST), comm);
        goto out;
    }
    *done = 0;
out:
    return rc;
}

int ck_bcast_bine(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc, size, done;
    ck_fold f;
    CK_TRY(fold_open(buf, count, dt, root, comm, &size, &f, &done));
    if (done) goto out;
    const int tag = CK_TAG(CK_BCAST), v = f.vrank;

    const int pof2 = ck_pow2_floor(size), s = ck_log2_ceil(pof2);
    const int pos = ck_bine_tree_position(v, pof2, s);
    /* The hop to position distance 2^i is step s - 1 - i. */
    int j = s;
    CK_SPAN_BEGIN("tree");
    if (pos != 0) {
        j = ck_low_bit(pos);
        int parent = ck_bine_tree_rank(pos - (1 << j), pof2, s);
        CK_SPAN_BEGIN_STEP("step", s - 1 - j);
        CK_TRY(ck_recv(buf, count, dt, ck_fold_rank_of(parent, CK_FOLD_KEEP_EVEN, root, size), tag,
                       comm));
        CK_SPAN_END("step");
    }
    for (int i = j - 1; i >= 0; i--) {
        int child = ck_bine_tree_rank(pos + (1 << i), pof2, s);
        CK_SPAN_BEGIN_STEP("step", s - 1 - i);
        CK_TRY(ck_send(buf, count, dt, ck_fold_rank_of(child, CK_FOLD_KEEP_EVEN, root, size), tag,
                       comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("tree");
    CK_TRY(ck_fold_out(&f, buf, NULL, count, dt, tag, comm));
out:
    return rc;
}

/* Elements of blocks [a, a + len) out of nb blocks. */
static size_t span(size_t count, int nb, int a, int len)
{
    return ck_block_offset(count, nb, a + len) - ck_block_offset(count, nb, a);
}

int ck_bcast_bine_scatter_allgather(void *buf, size_t count, MPI_Datatype dt, int root,
                                    MPI_Comm comm)
{
    int rc, size, done;
    MPI_Aint extent;
    ck_fold f;
    CK_TRY(fold_open(buf, count, dt, root, comm, &size, &f, &done));
    if (done) goto out;
    CK_TRY(ck_type_extent(dt, &extent));
    const int tag = CK_TAG(CK_BCAST), v = f.vrank;

    const int pof2 = ck_pow2_floor(size), s = ck_log2_ceil(pof2);
    const int nu = ck_bine_nu(v, pof2, s);
    const int sigma = (int)ck_bit_reverse((uint32_t)nu, s);
#define BLOCK(b) ck_elem(buf, ck_block_offset(count, pof2, (b)), extent)

    /* Scatter: v is reached at the step of nu's highest bit and receives its
     * whole subtree range; it then serves steps h+1.., each child's range
     * being the upper half of what v still has. */
    int first = 0;
    CK_SPAN_BEGIN("scatter");
    if (v != 0) {
        int h = ck_high_bit(nu), len = 1 << (s - 1 - h);
        CK_SPAN_BEGIN_STEP("step", h);
        CK_TRY(ck_recv(BLOCK(sigma), span(count, pof2, sigma, len), dt,
                       ck_bine_fold_peer(v, h, pof2, root, size), tag, comm));
        CK_SPAN_END("step");
        first = h + 1;
    }
    for (int k = first; k < s; k++) {
        int len = 1 << (s - 1 - k), c = sigma + len;
        CK_SPAN_BEGIN_STEP("step", k);
        CK_TRY(ck_send(BLOCK(c), span(count, pof2, c, len), dt,
                       ck_bine_fold_peer(v, k, pof2, root, size), tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("scatter");

    /* Allgather: before step k, v holds the aligned sigma range of length
     * 2^(s-1-k) around its block and the partner the adjacent one. Steps
     * s .. 2s-1, after the scatter's 0 .. s-1. */
    CK_SPAN_BEGIN("allgather");
    for (int k = s - 1; k >= 0; k--) {
        CK_SPAN_BEGIN_STEP("step", 2 * s - 1 - k);
        int len = 1 << (s - 1 - k), base = sigma & ~(len - 1), pbase = base ^ len;
        int partner = ck_bine_fold_peer(v, k, pof2, root, size);
        CK_TRY(ck_sendrecv(BLOCK(base), span(count, pof2, base, len), partner, BLOCK(pbase),
                           span(count, pof2, pbase, len), partner, dt, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
#undef BLOCK
    CK_TRY(ck_fold_out(&f, buf, NULL, count, dt, tag, comm));
out:
    return rc;
}
