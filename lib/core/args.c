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
    MPI_Aint lb, extent;
    rc = MPI_Type_get_extent(dt, &lb, &extent);
    if (rc != MPI_SUCCESS) return rc;
    if (extent <= 0) return MPI_ERR_TYPE;
    return MPI_SUCCESS;
}

int ck_check_root(int root, int size)
{
    return (root < 0 || root >= size) ? MPI_ERR_ROOT : MPI_SUCCESS;
}

int ck_check_op(MPI_Op op, int need_commutative, int *commutative)
{
    if (op == MPI_OP_NULL) return MPI_ERR_OP;
    int commute = 0;
    int rc = MPI_Op_commutative(op, &commute);
    if (rc != MPI_SUCCESS) return rc;
    if (commutative) *commutative = commute;
    if (need_commutative && !commute) return MPI_ERR_OP;
    return MPI_SUCCESS;
}

int ck_check_buf(const void *buf, size_t count)
{
    return (buf == NULL && count > 0) ? MPI_ERR_BUFFER : MPI_SUCCESS;
}
