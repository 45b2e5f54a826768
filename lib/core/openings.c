/* The openings that several algorithms of one collective share: the checks,
 * the calls with nothing to do, the own data put in place and, for the
 * algorithms on a folded power-of-two core, the fold-in. */
#include "ck_core.h"
#include "collkit/spans.h"

/* Reductions with nothing to send: count 0, or p 1 (rbuf = sbuf). */
static int alone(const void *sbuf, void *rbuf, size_t count, int size, MPI_Datatype dt,
                 int *done)
{
    *done = count == 0 || size == 1;
    if (count == 0 || size > 1 || sbuf == MPI_IN_PLACE) return MPI_SUCCESS;
    return ck_copy(sbuf, rbuf, count, dt);
}

int ck_allreduce_fold_open_src(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                               MPI_Op op, int need_commutative, ck_fold_keep keep,
                               MPI_Comm comm, int *rank, int *size, ck_fold *f,
                               const void **src)
{
    int rc;
    ck_tmp tmp = {0};
    f->vrank = -1;
    f->partner = -1;
    *src = rbuf;
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, need_commutative, NULL, comm, rank, size));
    int done;
    CK_TRY(alone(sbuf, rbuf, count, *size, dt, &done));
    if (done) goto out;
    const int in_place = sbuf == MPI_IN_PLACE;
    const void *own = in_place ? rbuf : sbuf;
    const int tag = CK_TAG(CK_ALLREDUCE);
    const ck_fold me = ck_fold_of(*rank, 0, *size, keep);
    if (me.vrank < 0) {
        /* Dropped out: the partner reduces for both and returns the result. */
        CK_TRY(ck_fold_in(&me, own, NULL, NULL, count, dt, op, tag, comm));
        CK_TRY(ck_fold_out(&me, NULL, rbuf, count, dt, tag, comm));
        goto out;
    }
    if (me.partner >= 0) {
        /* rbuf = partner's op own. Out of place, for a commutative op, the
         * partner's vector comes straight into rbuf and sbuf is reduced
         * into it (the operands in the other order); otherwise through a
         * temporary. */
        if (in_place || !need_commutative) {
            CK_TRY(ck_tmp_alloc(&tmp, count, dt));
            if (!in_place) CK_TRY(ck_copy(sbuf, rbuf, count, dt));
            CK_TRY(ck_fold_in(&me, NULL, tmp.buf, rbuf, count, dt, op, tag, comm));
        } else {
            CK_SPAN_BEGIN("fold");
            CK_TRY(ck_recv(rbuf, count, dt, me.partner, tag, comm));
            CK_TRY(ck_reduce_local(sbuf, rbuf, count, dt, op));
            CK_SPAN_END("fold");
        }
    } else {
        *src = own;
    }
    *f = me;
out:
    ck_tmp_free(&tmp);
    return rc;
}

int ck_allreduce_fold_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                           MPI_Op op, int need_commutative, ck_fold_keep keep, MPI_Comm comm,
                           int *rank, int *size, ck_fold *f)
{
    int rc;
    const void *src;
    CK_TRY(ck_allreduce_fold_open_src(sbuf, rbuf, count, dt, op, need_commutative, keep, comm,
                                      rank, size, f, &src));
    if (f->vrank >= 0 && src != rbuf) CK_TRY(ck_copy(src, rbuf, count, dt));
out:
    return rc;
}

int ck_allgather_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                      MPI_Comm comm, int *rank, int *size, MPI_Aint *ext, int *done)
{
    int rc;
    *done = 1;
    CK_TRY(ck_check_exchange(sbuf, rbuf, count, dt, comm, rank, size));
    if (count == 0) goto out;
    CK_TRY(ck_type_extent(dt, ext));
    if (sbuf != MPI_IN_PLACE)
        CK_TRY(ck_copy(sbuf, ck_elem(rbuf, (size_t)*rank * count, *ext), count, dt));
    *done = *size == 1;
out:
    return rc;
}

int ck_reduce_fold_acc(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                       int is_root, const ck_fold *f, int tag, MPI_Comm comm, ck_tmp *acc_tmp,
                       ck_tmp *in_tmp, char **acc)
{
    int rc = MPI_SUCCESS;
    if (is_root) {
        *acc = rbuf;
        if (sbuf != MPI_IN_PLACE) CK_TRY(ck_copy(sbuf, *acc, count, dt));
    } else {
        CK_TRY(ck_tmp_alloc(acc_tmp, count, dt));
        *acc = acc_tmp->buf;
        CK_TRY(ck_copy(sbuf, *acc, count, dt));
    }
    CK_TRY(ck_fold_in(f, NULL, in_tmp->buf, *acc, count, dt, op, tag, comm));
out:
    return rc;
}

int ck_reduce_scatter_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                           MPI_Op op, int need_commutative, MPI_Comm comm, int *rank, int *size,
                           int *done)
{
    int rc;
    *done = 1;
    CK_TRY(ck_check_allreduce(sbuf, rbuf, count, dt, op, need_commutative, NULL, comm, rank, size));
    /* Whole-vector local operations and messages take int counts too. */
    if ((size_t)*size * count > CK_MAX_COUNT) return MPI_ERR_COUNT;
    rc = alone(sbuf, rbuf, count, *size, dt, done);
out:
    return rc;
}

int ck_reduce_scatter_fold_in(const ck_fold *f, const void *in, void *rbuf, size_t count,
                              int size, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, ck_tmp *acc,
                              ck_tmp *tmp)
{
    int rc;
    const int tag = CK_TAG(CK_REDUCE_SCATTER);
    const size_t total = (size_t)size * count;
    if (f->vrank < 0) {
        /* The send completes before the receive may overwrite an in-place input. */
        CK_TRY(ck_fold_in(f, in, NULL, NULL, total, dt, op, tag, comm));
        CK_TRY(ck_fold_out(f, NULL, rbuf, count, dt, tag, comm));
        goto out;
    }
    CK_TRY(ck_tmp_alloc(acc, total, dt));
    CK_TRY(ck_tmp_alloc(tmp, total, dt));
    CK_TRY(ck_copy(in, acc->buf, total, dt));
    CK_TRY(ck_fold_in(f, NULL, tmp->buf, acc->buf, total, dt, op, tag, comm));
out:
    return rc;
}

int ck_alltoall_source(const void *sbuf, void *rbuf, size_t count, int size, MPI_Datatype dt,
                       ck_tmp *tmp, const void **src)
{
    int rc = MPI_SUCCESS;
    *src = sbuf;
    if (sbuf != MPI_IN_PLACE) return MPI_SUCCESS;
    *src = NULL;
    if (size == 1) return MPI_SUCCESS;
    CK_TRY(ck_tmp_alloc(tmp, (size_t)size * count, dt));
    CK_TRY(ck_copy(rbuf, tmp->buf, (size_t)size * count, dt));
    *src = tmp->buf;
out:
    return rc;
}

int ck_root_fan(int fan_in, void *blocks, void *own, size_t count, MPI_Datatype dt, int root,
                int size, int tag, MPI_Comm comm)
{
    int rc, n = 0;
    MPI_Aint extent;
    MPI_Request stack[CK_STACK_REQS], *reqs = NULL;
    CK_TRY(ck_type_extent(dt, &extent));
    if (size > 1) {
        reqs = ck_reqs_get(stack, (size_t)(size - 1));
        if (reqs == NULL) CK_TRY(MPI_ERR_NO_MEM);
        for (int i = 1; i < size; i++) {
            int r = ck_abs_rank(i, root, size);
            char *blk = ck_elem(blocks, (size_t)r * count, extent);
            if (fan_in)
                CK_TRY(ck_irecv(blk, count, dt, r, tag, comm, &reqs[n]));
            else
                CK_TRY(ck_isend(blk, count, dt, r, tag, comm, &reqs[n]));
            n++;
        }
    }
    /* The local copy overlaps with the messages in flight. */
    char *mine = ck_elem(blocks, (size_t)root * count, extent);
    if (own != MPI_IN_PLACE)
        CK_TRY(fan_in ? ck_copy(own, mine, count, dt) : ck_copy(mine, own, count, dt));
    CK_TRY(ck_waitall(n, reqs));
out:
    ck_reqs_put(stack, reqs);
    return rc;
}

int ck_reduce_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                   int need_commutative, int *commutative, int root, MPI_Comm comm, int *rank,
                   int *size, int *done)
{
    int rc;
    *done = 1;
    CK_TRY(ck_check_reduce(sbuf, rbuf, count, dt, op, need_commutative, commutative, root, comm,
                           rank, size));
    rc = alone(sbuf, rbuf, count, *size, dt, done);
out:
    return rc;
}

int ck_reduce_fold_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                        int root, ck_fold_keep keep, MPI_Comm comm, int *rank, int *size,
                        ck_fold *f, int *done)
{
    int rc;
    CK_TRY(ck_reduce_open(sbuf, rbuf, count, dt, op, 1, NULL, root, comm, rank, size, done));
    if (*done) goto out;
    *f = ck_fold_of(*rank, root, *size, keep);
    /* A rank that drops out contributes its input and is done. */
    if (f->vrank < 0) {
        *done = 1;
        rc = ck_fold_in(f, sbuf, NULL, NULL, count, dt, op, CK_TAG(CK_REDUCE), comm);
    }
out:
    return rc;
}

int ck_reduce_scatter_fold_out(const ck_fold *f, const void *acc, void *rbuf, int rank,
                               size_t count, MPI_Datatype dt, MPI_Comm comm)
{
    int rc;
    MPI_Aint ext;
    CK_TRY(ck_type_extent(dt, &ext));
    if (f->partner >= 0)
        CK_TRY(ck_fold_out(f, ck_elem(acc, (size_t)f->partner * count, ext), NULL, count, dt,
                           CK_TAG(CK_REDUCE_SCATTER), comm));
    CK_TRY(ck_copy(ck_elem(acc, (size_t)rank * count, ext), rbuf, count, dt));
out:
    return rc;
}

int ck_alltoall_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm,
                     int *rank, int *size, MPI_Aint *ext, ck_tmp *tmp, const void **src)
{
    int rc;
    *src = NULL;
    CK_TRY(ck_check_exchange(sbuf, rbuf, count, dt, comm, rank, size));
    if (count == 0) goto out;
    CK_TRY(ck_type_extent(dt, ext));
    CK_TRY(ck_alltoall_source(sbuf, rbuf, count, *size, dt, tmp, src));
out:
    return rc;
}

int ck_rooted_blocks_open(int gather, const void *sbuf, const void *rbuf, size_t count,
                          MPI_Datatype dt, int root, MPI_Comm comm, int *rank, int *size,
                          MPI_Aint *ext, int *done)
{
    int rc;
    *done = 1;
    if (gather)
        CK_TRY(ck_check_gather(sbuf, rbuf, count, dt, root, comm, rank, size));
    else
        CK_TRY(ck_check_scatter(sbuf, rbuf, count, dt, root, comm, rank, size));
    CK_TRY(ck_check_blocks(count, *size, dt, ext, done));
out:
    return rc;
}

int ck_alltoall_blocks_open(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                            MPI_Comm comm, int *rank, int *size, MPI_Aint *ext,
                            const void **src, int *done)
{
    int rc;
    *done = 1;
    CK_TRY(ck_check_exchange(sbuf, rbuf, count, dt, comm, rank, size));
    CK_TRY(ck_check_blocks(count, *size, dt, ext, done));
    if (*done) goto out;
    *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    *done = *size == 1;
    if (*done && *src != rbuf) CK_TRY(ck_copy(*src, rbuf, count, dt));
out:
    return rc;
}
