/* Argument checks shared by every algorithm. */
#include "ck_core.h"

int ck_check_args(MPI_Comm comm, MPI_Datatype dt, size_t count, int *rank, int *size)
{
    if (comm == MPI_COMM_NULL) return MPI_ERR_COMM;
    if (dt == MPI_DATATYPE_NULL) return MPI_ERR_TYPE;
    if (count > CK_MAX_COUNT) return MPI_ERR_COUNT;
    int rc = MPI_Comm_rank(comm, rank);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_Comm_size(comm, size);
    if (rc != MPI_SUCCESS) return rc;
    /* Intercommunicators are out of scope: all algorithms assume one group. */
    int inter = 0;
    rc = MPI_Comm_test_inter(comm, &inter);
    if (rc != MPI_SUCCESS) return rc;
    if (inter) return MPI_ERR_COMM;
    MPI_Aint extent;
    rc = ck_type_extent(dt, &extent);
    if (rc != MPI_SUCCESS) return rc;
    if (extent <= 0) return MPI_ERR_TYPE;
    return MPI_SUCCESS;
}

/* The predefined reduction ops, all commutative (MPI 4.1, 6.9.2): for them
 * nothing needs asking MPI. MPI_REPLACE and MPI_NO_OP, the accumulate ops,
 * are left to MPI. */
static int reduction_op_predefined(MPI_Op op)
{
    const ck_op_desc *d = ck_op_of(op);
    return d != NULL && d->reduction;
}

int ck_check_root(int root, int size)
{
    return (root < 0 || root >= size) ? MPI_ERR_ROOT : MPI_SUCCESS;
}

int ck_check_op(MPI_Op op, int need_commutative, int *commutative)
{
    if (op == MPI_OP_NULL) return MPI_ERR_OP;
    int commute = 1;
    if (!reduction_op_predefined(op)) {
        int rc = MPI_Op_commutative(op, &commute);
        if (rc != MPI_SUCCESS) return rc;
    }
    if (commutative) *commutative = commute;
    if (need_commutative && !commute) return MPI_ERR_OP;
    return MPI_SUCCESS;
}

int ck_check_op_type(MPI_Op op, MPI_Datatype dt)
{
#ifdef CK_MPI_STANDIN
    /* ck_trace's stand-in MPI has predefined datatypes only: nothing to refuse. */
    (void)op;
    (void)dt;
    return MPI_SUCCESS;
#else
    MPI_Aint size;
    if (ck_type_named_dense(dt, &size)) return MPI_SUCCESS;   /* named: any op applies */
    const int is_predefined = ck_op_of(op) != NULL;
    if (!is_predefined) return MPI_SUCCESS;
    int ni, na, nd, combiner;
    int rc = MPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner);
    if (rc != MPI_SUCCESS) return rc;
    return combiner == MPI_COMBINER_NAMED ? MPI_SUCCESS : MPI_ERR_OP;
#endif
}

int ck_check_buf(const void *buf, size_t count, MPI_Datatype dt)
{
    if (buf != NULL || count == 0) return MPI_SUCCESS;
    MPI_Aint true_lb, true_extent;
    if (MPI_Type_get_true_extent(dt, &true_lb, &true_extent) != MPI_SUCCESS) return MPI_ERR_BUFFER;
    return true_lb != 0 ? MPI_SUCCESS : MPI_ERR_BUFFER;
}

/* What every rooted opening checks after ck_check_args: the root, the op
 * (reductions only), then sbuf and rbuf on the ranks where they matter. */
typedef struct {
    int has_op, need_commutative;
    int *commutative;
    int sbuf_everywhere, rbuf_everywhere; /* else only at the root */
} rooted_shape;

static int check_rooted(const rooted_shape *sh, const void *sbuf, const void *rbuf,
                        size_t count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                        int *rank, int *size)
{
    int rc = ck_check_args(comm, dt, count, rank, size);
    if (rc == MPI_SUCCESS) rc = ck_check_root(root, *size);
    if (rc == MPI_SUCCESS && sh->has_op)
        rc = ck_check_op(op, sh->need_commutative, sh->commutative);
    if (rc == MPI_SUCCESS && sh->has_op) rc = ck_check_op_type(op, dt);
    if (rc == MPI_SUCCESS && (sh->sbuf_everywhere || *rank == root))
        rc = ck_check_buf(sbuf, count, dt);
    if (rc == MPI_SUCCESS && (sh->rbuf_everywhere || *rank == root))
        rc = ck_check_buf(rbuf, count, dt);
    return rc;
}

int ck_check_bcast(const void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm,
                   int *rank, int *size)
{
    /* One buffer, significant everywhere (checked twice at the root, alike). */
    const rooted_shape sh = {0, 0, NULL, 1, 0};
    return check_rooted(&sh, buf, buf, count, dt, MPI_OP_NULL, root, comm, rank, size);
}

int ck_check_gather(const void *sbuf, const void *rbuf, size_t count, MPI_Datatype dt,
                    int root, MPI_Comm comm, int *rank, int *size)
{
    const rooted_shape sh = {0, 0, NULL, 1, 0};
    return check_rooted(&sh, sbuf, rbuf, count, dt, MPI_OP_NULL, root, comm, rank, size);
}

int ck_check_scatter(const void *sbuf, const void *rbuf, size_t count, MPI_Datatype dt,
                     int root, MPI_Comm comm, int *rank, int *size)
{
    const rooted_shape sh = {0, 0, NULL, 0, 1};
    return check_rooted(&sh, sbuf, rbuf, count, dt, MPI_OP_NULL, root, comm, rank, size);
}

int ck_check_reduce(const void *sbuf, const void *rbuf, size_t count, MPI_Datatype dt,
                    MPI_Op op, int need_commutative, int *commutative, int root,
                    MPI_Comm comm, int *rank, int *size)
{
    const rooted_shape sh = {1, need_commutative, commutative, 1, 0};
    return check_rooted(&sh, sbuf, rbuf, count, dt, op, root, comm, rank, size);
}

int ck_check_exchange(const void *sbuf, const void *rbuf, size_t count, MPI_Datatype dt,
                      MPI_Comm comm, int *rank, int *size)
{
    int rc = ck_check_args(comm, dt, count, rank, size);
    if (rc == MPI_SUCCESS) rc = ck_check_buf(sbuf, count, dt);
    if (rc == MPI_SUCCESS) rc = ck_check_buf(rbuf, count, dt);
    return rc;
}

int ck_check_allreduce(const void *sbuf, const void *rbuf, size_t count, MPI_Datatype dt,
                       MPI_Op op, int need_commutative, int *commutative, MPI_Comm comm, int *rank,
                       int *size)
{
    int rc = ck_check_args(comm, dt, count, rank, size);
    if (rc == MPI_SUCCESS) rc = ck_check_op(op, need_commutative, commutative);
    if (rc == MPI_SUCCESS) rc = ck_check_op_type(op, dt);
    if (rc == MPI_SUCCESS) rc = ck_check_buf(sbuf, count, dt);
    if (rc == MPI_SUCCESS) rc = ck_check_buf(rbuf, count, dt);
    return rc;
}

int ck_check_blocks(size_t count, int size, MPI_Datatype dt, MPI_Aint *ext, int *done)
{
    *done = count == 0;
    if (*done) return MPI_SUCCESS;
    /* Every rank computes the same bound, so all of them refuse together. */
    if ((size_t)size * count > CK_MAX_COUNT) return MPI_ERR_COUNT;
    return ck_type_extent(dt, ext);
}
