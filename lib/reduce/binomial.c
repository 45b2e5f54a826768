/* Binomial-tree reduces, each the mirror image of a binomial broadcast:
 *   doubling: at distance 1, 2, 4, ... a rank with that bit set in its
 *             relative rank sends its partial result down and stops (MPICH's
 *             binomial reduce, mirror of the halving bcast). A partial result
 *             always covers a contiguous run [r, r + 2^k) of tree ranks.
 *   halving:  distances p/2, p/4, ..., 1 (mirror of Open MPI's doubling
 *             bcast). Rank 0 combines ranks {0, p/2}, then adds {p/4, 3p/4},
 *             ...: partial results are not contiguous, so the op must be
 *             commutative.
 * Both take ceil(log2 p) steps at the root and send the whole vector once
 * from every other rank. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

enum tree_order { TREE_DOUBLING, TREE_HALVING };

/* Children of tree rank v, in the order their partial results arrive, and
 * v's parent (-1 for the tree root). Returns the number of children. */
static int tree_links(enum tree_order order, int v, int size, int children[32], int *parent)
{
    int n = 0, s = ck_log2_ceil(size);
    *parent = -1;
    if (order == TREE_DOUBLING) {
        for (int k = 0; k < s; k++) {
            int m = 1 << k;
            if (v & m) {
                *parent = v - m;
                break;
            }
            if (m < size - v) children[n++] = v + m;
        }
    } else {
        int h = v == 0 ? -1 : ck_high_bit(v);
        for (int k = s - 1; k > h; k--)
            if ((1 << k) < size - v) children[n++] = v + (1 << k);
        if (v != 0) *parent = v - (1 << h);
    }
    return n;
}

#ifdef CK_INSTRUMENT
/* Step of the tree edge of length d = 2^k (for the step tags only): the
 * doubling tree uses it at step k, the halving tree at ceil(log2 p) - 1 - k. */
static int edge_step(enum tree_order order, int d, int size)
{
    return order == TREE_DOUBLING ? ck_log2_ceil(d) : ck_log2_ceil(size) - 1 - ck_log2_ceil(d);
}
#endif

/* The reduction proper, on a tree rooted at `troot`. When troot differs from
 * the real root, troot forwards the result to it at the end (this is how the
 * doubling tree keeps non-commutative ops in rank order for any root).
 *
 * Partials never get copied: each incoming vector is received into a free
 * writable buffer R and combined as R = acc op R, so the lower-ranked operand
 * stays first, and R becomes the accumulator. Two writable buffers suffice;
 * the root uses rbuf as one of them, so the result usually lands in place. */
static int binomial_reduce(enum tree_order order, const void *sbuf, void *rbuf, size_t count,
                           MPI_Datatype dt, MPI_Op op, int root, int troot, int rank, int size,
                           MPI_Comm comm)
{
    int rc = MPI_SUCCESS, parent, children[32];
    ck_tmp t0 = {0}, t1 = {0};
    const int tag = CK_TAG(CK_REDUCE);
    const int v = ck_rel_rank(rank, troot, size);
    const int nch = tree_links(order, v, size, children, &parent);
    const int is_root = rank == root;

    char *b0 = NULL, *b1 = NULL;
    if (is_root) {
        b0 = rbuf;
    } else if (nch >= 1) {
        CK_TRY(ck_tmp_alloc(&t0, count, dt));
        b0 = t0.buf;
    }
    if (nch >= 2 || (is_root && nch >= 1)) {
        CK_TRY(ck_tmp_alloc(&t1, count, dt));
        b1 = t1.buf;
    }

    const void *acc = (is_root && sbuf == MPI_IN_PLACE) ? rbuf : sbuf;
    CK_SPAN_BEGIN("tree");
    for (int i = 0; i < nch; i++) {
        char *in = acc == b0 ? b1 : b0;
        CK_SPAN_BEGIN_STEP("step", edge_step(order, children[i] - v, size));
        CK_TRY(ck_recv(in, count, dt, ck_abs_rank(children[i], troot, size), tag, comm));
        CK_TRY(ck_reduce_local(acc, in, count, dt, op));
        CK_SPAN_END("step");
        acc = in;
    }

    if (parent >= 0) {
        CK_SPAN_BEGIN_STEP("step", edge_step(order, v - parent, size));
        CK_TRY(ck_send(acc, count, dt, ck_abs_rank(parent, troot, size), tag, comm));
        CK_SPAN_END("step");
    } else if (is_root) {
        if (acc != rbuf) CK_TRY(ck_copy(acc, rbuf, count, dt));
    } else {
        CK_TRY(ck_send(acc, count, dt, root, tag, comm));
    }
    /* troot sends nothing else to the root, so this cannot match a partial. */
    if (is_root && rank != troot) CK_TRY(ck_recv(rbuf, count, dt, troot, tag, comm));
    CK_SPAN_END("tree");
out:
    ck_tmp_free(&t0);
    ck_tmp_free(&t1);
    return rc;
}

int ck_reduce_binomial_doubling(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                MPI_Op op, int root, MPI_Comm comm)
{
    int rc, rank, size, commutative, done;
    CK_TRY(ck_reduce_open(sbuf, rbuf, count, dt, op, 0, &commutative, root, comm, &rank, &size, &done));
    if (done) goto out;

    /* Relative ranks wrap around at p, so a contiguous run of them is not a
     * run of communicator ranks unless the tree is rooted at rank 0. For a
     * non-commutative op root the tree there and pay one extra message. */
    CK_TRY(binomial_reduce(TREE_DOUBLING, sbuf, rbuf, count, dt, op, root,
                           commutative ? root : 0, rank, size, comm));
out:
    return rc;
}

int ck_reduce_binomial_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                               MPI_Op op, int root, MPI_Comm comm)
{
    int rc, rank, size, done;
    CK_TRY(ck_reduce_open(sbuf, rbuf, count, dt, op, 1, NULL, root, comm, &rank, &size, &done));
    if (done) goto out;

    CK_TRY(binomial_reduce(TREE_HALVING, sbuf, rbuf, count, dt, op, root, root, rank, size, comm));
out:
    return rc;
}
