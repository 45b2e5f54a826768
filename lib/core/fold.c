/* The two phases of folding a non-power-of-two p onto its power-of-two core
 * (the rank maps are inline in ck_core.h). */
#include "ck_core.h"

#include "collkit/spans.h"

ck_fold ck_fold_of(int rank, int root, int size, ck_fold_keep keep)
{
    const int rem = ck_fold_rem(size), p2 = size - rem, rel = ck_rel_rank(rank, root, size);
    ck_fold f = {rel, -1};
    int mate = -1; /* relative rank of the other half of the pair */
    if (keep == CK_FOLD_HIGH) {
        if (rel >= p2) {
            f.vrank = -1;
            mate = rel - p2;
        } else if (rel < rem) {
            mate = rel + p2;
        }
    } else if (keep == CK_FOLD_TAIL) {
        const int first = p2 - rem, off = rel - first;
        if (off >= 0) {
            f.vrank = off % 2 ? -1 : first + off / 2;
            mate = off % 2 ? rel - 1 : rel + 1;
        }
    } else {
        f.vrank = ck_fold_vrank(rel, rem, keep);
        if (rel < 2 * rem) mate = rel % 2 ? rel - 1 : rel + 1;
    }
    if (mate >= 0) f.partner = ck_abs_rank(mate, root, size);
    return f;
}

int ck_fold_in(const ck_fold *f, const void *give, void *take, void *acc, size_t n,
               MPI_Datatype dt, MPI_Op op, int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    if (f->partner < 0) return MPI_SUCCESS;
    CK_SPAN_BEGIN("fold");
    if (f->vrank < 0) {
        rc = ck_send(give, n, dt, f->partner, tag, comm);
    } else {
        rc = ck_recv(take, n, dt, f->partner, tag, comm);
        /* take holds the partner's data as the first operand: rank order for
         * the MPICH pairing, swapped (commutative ops only) for the other. */
        if (rc == MPI_SUCCESS && acc != NULL) rc = ck_reduce_local(take, acc, n, dt, op);
    }
    CK_SPAN_END("fold");
    return rc;
}

int ck_fold_out(const ck_fold *f, const void *give, void *take, size_t n, MPI_Datatype dt,
                int tag, MPI_Comm comm)
{
    int rc;
    if (f->partner < 0) return MPI_SUCCESS;
    CK_SPAN_BEGIN("unfold");
    if (f->vrank < 0)
        rc = ck_recv(take, n, dt, f->partner, tag, comm);
    else
        rc = ck_send(give, n, dt, f->partner, tag, comm);
    CK_SPAN_END("unfold");
    return rc;
}
