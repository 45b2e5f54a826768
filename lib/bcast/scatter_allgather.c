/* Van de Geijn broadcast: scatter the vector in p blocks down a binomial tree,
 * then allgather the blocks. For long vectors this moves about 2n bytes per
 * rank instead of the n*log2(p) of a binomial tree.
 *
 * Block b (ck_block_count/ck_block_offset over p blocks) belongs to the rank
 * with relative rank b; blocks are consecutive in the buffer, so any run of
 * relative ranks [a, b) owns one contiguous slice of it. Blocks may be empty
 * when count < p: the algorithms then exchange zero-element messages, which
 * keeps every rank's sequence of sends and receives independent of count. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

/* Elements held by the relative ranks [a, b) (b may equal p). */
static size_t span(size_t count, int p, int a, int b)
{
    return ck_block_offset(count, p, b) - ck_block_offset(count, p, a);
}

static char *block_at(void *buf, size_t count, int p, int b, MPI_Aint extent)
{
    return ck_elem(buf, ck_block_offset(count, p, b), extent);
}

/* End (exclusive) of the run of `len` ranks starting at `start`, cut at p. */
static int run_end(int start, int len, int p)
{
    return len < p - start ? start + len : p;
}

/* Binomial scatter on the distance-halving tree: relative rank r's subtree is
 * [r, r + lowbit(r)), so it receives exactly those blocks from its parent and
 * hands the upper halves on to its children, farthest first. Afterwards rank
 * r holds at least its own block r. The hop of distance 2^j is step
 * log2ceil(p) - 1 - j; the allgather's steps follow from log2ceil(p) on. */
static int binomial_scatter(void *buf, size_t count, MPI_Datatype dt, MPI_Aint extent, int r,
                            int root, int size, int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    int k = ck_log2_ceil(size);
    CK_SPAN_BEGIN("scatter");
    if (r != 0) {
        k = ck_low_bit(r);
        int hi = run_end(r, 1 << k, size);
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(size) - 1 - k);
        CK_TRY(ck_recv(block_at(buf, count, size, r, extent), span(count, size, r, hi), dt,
                       ck_abs_rank(r - (1 << k), root, size), tag, comm));
        CK_SPAN_END("step");
    }
    for (int j = k - 1; j >= 0; j--) {
        int d = 1 << j;
        if (d >= size - r) continue;
        int c = r + d, hi = run_end(c, d, size);
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(size) - 1 - j);
        CK_TRY(ck_send(block_at(buf, count, size, c, extent), span(count, size, c, hi), dt,
                       ck_abs_rank(c, root, size), tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("scatter");
out:
    return rc;
}

/* Shared start of both: the checks, then the scatter, after which relative
 * rank r holds its block. *done when there is nothing to do. */
static int scatter_open(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm,
                        int *size, int *r, MPI_Aint *extent, int *done)
{
    int rc, rank;
    *done = 1;
    CK_TRY(ck_check_bcast(buf, count, dt, root, comm, &rank, size));
    if (count == 0 || *size == 1) goto out;
    CK_TRY(ck_type_extent(dt, extent));
    *r = ck_rel_rank(rank, root, *size);
    CK_TRY(binomial_scatter(buf, count, dt, *extent, *r, root, *size, CK_TAG(CK_BCAST), comm));
    *done = 0;
out:
    return rc;
}

int ck_bcast_scatter_allgather_rd(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc, size, r, done;
    MPI_Aint extent;
    CK_TRY(scatter_open(buf, count, dt, root, comm, &size, &r, &extent, &done));
    if (done) goto out;
    const int tag = CK_TAG(CK_BCAST);

    /* Recursive doubling: before the step of distance m every rank holds the
     * blocks of its aligned group [base, base + m) (cut at p) and swaps them
     * with the partner r ^ m, which holds the neighbouring group.
     *
     * Non-power-of-two p: when the upper group [pbase, pbase + m) is cut short
     * by p, the lower group (always complete) has only nc = p - pbase members
     * whose partner exists; those nc got the upper blocks, the others did not.
     * Inside the lower group the blocks then spread by doubling (members
     * [0, c) feed [c, 2c), c = nc, 2nc, ...), ceil(log2(m / nc)) extra rounds
     * that only the ranks with a missing partner pay. The upper group is
     * never short of data: its partners all exist. */
    const int s = ck_log2_ceil(size);
    CK_SPAN_BEGIN("allgather");
    for (int k = 0; k < s; k++) {
        /* a step includes the catch-up rounds of ranks with no partner */
        CK_SPAN_BEGIN_STEP("step", s + k);
        int m = 1 << k;
        int base = r & ~(m - 1), pbase = base ^ m, partner = r ^ m;
        if (partner < size) {
            int hi = run_end(base, m, size), phi = run_end(pbase, m, size);
            CK_TRY(ck_sendrecv(block_at(buf, count, size, base, extent), span(count, size, base, hi),
                               ck_abs_rank(partner, root, size),
                               block_at(buf, count, size, pbase, extent),
                               span(count, size, pbase, phi), ck_abs_rank(partner, root, size), dt,
                               tag, comm));
        }
        if (!(r & m) && pbase < size && m > size - pbase) {
            int nc = size - pbase, j = r - base;
            char *upper = block_at(buf, count, size, pbase, extent);
            size_t n_upper = span(count, size, pbase, size);
            for (int c = nc; c < m; c *= 2) {
                if (j < c && c < m - j)
                    CK_TRY(ck_send(upper, n_upper, dt, ck_abs_rank(base + j + c, root, size), tag,
                                   comm));
                else if (j >= c && j - c < c)
                    CK_TRY(ck_recv(upper, n_upper, dt, ck_abs_rank(base + j - c, root, size), tag,
                                   comm));
            }
        }
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
out:
    return rc;
}

int ck_bcast_scatter_allgather_ring(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc, size, r, done;
    MPI_Aint extent;
    CK_TRY(scatter_open(buf, count, dt, root, comm, &size, &r, &extent, &done));
    if (done) goto out;
    const int tag = CK_TAG(CK_BCAST);

    /* Ring allgather: in step i each rank forwards the block it received in
     * step i - 1 (its own block first) to its right neighbour. */
    const int right = ck_abs_rank(r < size - 1 ? r + 1 : 0, root, size);
    const int left = ck_abs_rank(r > 0 ? r - 1 : size - 1, root, size);
    CK_SPAN_BEGIN("allgather");
    for (int i = 0; i < size - 1; i++) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(size) + i);
        int sb = r >= i ? r - i : r - i + size;
        int rb = sb > 0 ? sb - 1 : size - 1;
        CK_TRY(ck_sendrecv(block_at(buf, count, size, sb, extent), ck_block_count(count, size, sb),
                           right, block_at(buf, count, size, rb, extent),
                           ck_block_count(count, size, rb), left, dt, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
out:
    return rc;
}
