/* The collectives the shim only times, so that a profile shows all the time
 * a program spends in collectives: they always run the library (no
 * algorithm of libcollkit's covers them), and without COLLKIT_PROFILE they
 * cost one test. Their bytes (docs/application-loop.md):
 *   barrier 0; scan, exscan: count x type size (the whole vector);
 *   reduce_scatter_v (MPI_Reduce_scatter), allgatherv: the sum of recvcounts
 *     x type size, the whole vector, equal at every rank;
 *   gatherv: what this rank sends (its recvcounts[root] at an in-place root);
 *   scatterv: what this rank receives (sendcounts[root] at an in-place root);
 *   alltoallv: everything this rank sends (its receive side when in place).
 * The last three are one rank's own share: equal at every rank when the call
 * is regular; where ranks differ, each value is a class of its own.
 * MPI-4's large-count forms, at the end, count alike. */
#include "ck_preload.h"

/* count x size of type; -1 for a negative count (erroneous). An empty side's
 * datatype is not asked its size (it may be MPI_DATATYPE_NULL). */
static long long side_bytes(long long count, MPI_Datatype t)
{
    int size = 0;
    if (count < 0) return -1;
    if (count == 0) return 0;
    if (PMPI_Type_size(t, &size) != MPI_SUCCESS) return -1;
    return count * size;
}

static long long sum_bytes(const int *counts, int n, MPI_Datatype t)
{
    long long total = 0;
    for (int i = 0; i < n; i++) {
        if (counts[i] < 0) return -1;
        total += counts[i];
    }
    return side_bytes(total, t);
}

/* Counts the call; a negative `bytes` (erroneous arguments) is unclassified. */
static void count(ckp_profiled c, MPI_Comm comm, long long bytes, int root, MPI_Datatype dt, MPI_Op op,
                  int in_place, uint64_t t0, uint64_t t1)
{
    const ckp_call_key k = {(int)c, bytes < 0 ? 0 : (size_t)bytes, bytes < 0 ? -2 : root, dt, op, in_place};
    ckp_profile_call(comm, &k, t0, t1);
}

/* Whether to time this call, and this rank's place in comm when so (an
 * intercommunicator's arguments are never read: bytes 0, no root). */
static int timed(MPI_Comm comm, int *size, int *rank, int *inter)
{
    if (!ckp_profile_on || ckp_inside) return 0;
    *size = 0;
    *rank = 0;
    *inter = 1;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, inter) != MPI_SUCCESS) return 1;
    if (!*inter && (PMPI_Comm_size(comm, size) != MPI_SUCCESS || PMPI_Comm_rank(comm, rank) != MPI_SUCCESS))
        *inter = 1;
    return 1;
}

int MPI_Barrier(MPI_Comm comm)
{
    if (!ckp_profile_on || ckp_inside) return PMPI_Barrier(comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Barrier(comm);
    const uint64_t t1 = ckp_profile_now();
    count(CKP_P_BARRIER, comm, 0, -1, MPI_DATATYPE_NULL, MPI_OP_NULL, 0, t0, t1);
    return rc;
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                   const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    int p, rank, inter;
    if (!timed(comm, &p, &rank, &inter))
        return PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
    const uint64_t t1 = ckp_profile_now();
    count(CKP_P_ALLGATHERV, comm, inter ? 0 : sum_bytes(rcounts, p, rtype), -1, inter ? MPI_DATATYPE_NULL : rtype,
          MPI_OP_NULL, sbuf == MPI_IN_PLACE, t0, t1);
    return rc;
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf,
                  const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
    int p, rank, inter;
    if (!timed(comm, &p, &rank, &inter))
        return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
    const uint64_t t1 = ckp_profile_now();
    const int ip = sbuf == MPI_IN_PLACE;
    long long bytes = 0;
    if (!inter) bytes = ip ? sum_bytes(rcounts, p, rtype) : sum_bytes(scounts, p, stype);
    count(CKP_P_ALLTOALLV, comm, bytes, -1, inter ? MPI_DATATYPE_NULL : ip ? rtype : stype, MPI_OP_NULL, ip, t0, t1);
    return rc;
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
    int p, rank, inter;
    if (!timed(comm, &p, &rank, &inter))
        return PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
    const uint64_t t1 = ckp_profile_now();
    const int ip = !inter && rank == root && sbuf == MPI_IN_PLACE;
    long long bytes = 0;
    if (!inter && (root < 0 || root >= p)) bytes = -1;
    else if (!inter) bytes = ip ? side_bytes(rcounts[root], rtype) : side_bytes(scount, stype);
    count(CKP_P_GATHERV, comm, bytes, inter ? -1 : root, inter ? MPI_DATATYPE_NULL : ip ? rtype : stype,
          MPI_OP_NULL, ip, t0, t1);
    return rc;
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype, void *rbuf,
                 int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    int p, rank, inter;
    if (!timed(comm, &p, &rank, &inter))
        return PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
    const uint64_t t1 = ckp_profile_now();
    const int ip = !inter && rank == root && rbuf == MPI_IN_PLACE;
    long long bytes = 0;
    if (!inter && (root < 0 || root >= p)) bytes = -1;
    else if (!inter) bytes = ip ? side_bytes(scounts[root], stype) : side_bytes(rcount, rtype);
    count(CKP_P_SCATTERV, comm, bytes, inter ? -1 : root, inter ? MPI_DATATYPE_NULL : ip ? stype : rtype,
          MPI_OP_NULL, ip, t0, t1);
    return rc;
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm)
{
    int p, rank, inter;
    if (!timed(comm, &p, &rank, &inter)) return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm);
    const uint64_t t1 = ckp_profile_now();
    count(CKP_P_REDUCE_SCATTER_V, comm, inter ? 0 : sum_bytes(rcounts, p, dt), -1, dt, op, sbuf == MPI_IN_PLACE,
          t0, t1);
    return rc;
}

int MPI_Scan(const void *sbuf, void *rbuf, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    if (!ckp_profile_on || ckp_inside) return PMPI_Scan(sbuf, rbuf, n, dt, op, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Scan(sbuf, rbuf, n, dt, op, comm);
    const uint64_t t1 = ckp_profile_now();
    count(CKP_P_SCAN, comm, side_bytes(n, dt), -1, dt, op, sbuf == MPI_IN_PLACE, t0, t1);
    return rc;
}

int MPI_Exscan(const void *sbuf, void *rbuf, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    if (!ckp_profile_on || ckp_inside) return PMPI_Exscan(sbuf, rbuf, n, dt, op, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Exscan(sbuf, rbuf, n, dt, op, comm);
    const uint64_t t1 = ckp_profile_now();
    count(CKP_P_EXSCAN, comm, side_bytes(n, dt), -1, dt, op, sbuf == MPI_IN_PLACE, t0, t1);
    return rc;
}

#if MPI_VERSION >= 4
/* MPI-4's large-count forms (mpi4py 4 under MPICH calls only these): the
 * same classes and bytes as the int forms above. */
static long long sum_bytes_c(const MPI_Count *counts, int n, MPI_Datatype t)
{
    long long total = 0;
    for (int i = 0; i < n; i++) {
        if (counts[i] < 0) return -1;
        total += (long long)counts[i];
    }
    return side_bytes(total, t);
}

int MPI_Allgatherv_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[],
                     const MPI_Aint displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    int p, rank, inter;
    if (!timed(comm, &p, &rank, &inter))
        return PMPI_Allgatherv_c(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Allgatherv_c(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
    const uint64_t t1 = ckp_profile_now();
    count(CKP_P_ALLGATHERV, comm, inter ? 0 : sum_bytes_c(rcounts, p, rtype), -1, inter ? MPI_DATATYPE_NULL : rtype,
          MPI_OP_NULL, sbuf == MPI_IN_PLACE, t0, t1);
    return rc;
}

int MPI_Alltoallv_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype stype,
                    void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
    int p, rank, inter;
    if (!timed(comm, &p, &rank, &inter))
        return PMPI_Alltoallv_c(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Alltoallv_c(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
    const uint64_t t1 = ckp_profile_now();
    const int ip = sbuf == MPI_IN_PLACE;
    long long bytes = 0;
    if (!inter) bytes = ip ? sum_bytes_c(rcounts, p, rtype) : sum_bytes_c(scounts, p, stype);
    count(CKP_P_ALLTOALLV, comm, bytes, -1, inter ? MPI_DATATYPE_NULL : ip ? rtype : stype, MPI_OP_NULL, ip, t0, t1);
    return rc;
}

int MPI_Gatherv_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[],
                  const MPI_Aint displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
    int p, rank, inter;
    if (!timed(comm, &p, &rank, &inter))
        return PMPI_Gatherv_c(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Gatherv_c(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
    const uint64_t t1 = ckp_profile_now();
    const int ip = !inter && rank == root && sbuf == MPI_IN_PLACE;
    long long bytes = 0;
    if (!inter && (root < 0 || root >= p)) bytes = -1;
    else if (!inter) bytes = ip ? side_bytes((long long)rcounts[root], rtype) : side_bytes((long long)scount, stype);
    count(CKP_P_GATHERV, comm, bytes, inter ? -1 : root, inter ? MPI_DATATYPE_NULL : ip ? rtype : stype,
          MPI_OP_NULL, ip, t0, t1);
    return rc;
}

int MPI_Scatterv_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[], MPI_Datatype stype,
                   void *rbuf, MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    int p, rank, inter;
    if (!timed(comm, &p, &rank, &inter))
        return PMPI_Scatterv_c(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Scatterv_c(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
    const uint64_t t1 = ckp_profile_now();
    const int ip = !inter && rank == root && rbuf == MPI_IN_PLACE;
    long long bytes = 0;
    if (!inter && (root < 0 || root >= p)) bytes = -1;
    else if (!inter) bytes = ip ? side_bytes((long long)scounts[root], stype) : side_bytes((long long)rcount, rtype);
    count(CKP_P_SCATTERV, comm, bytes, inter ? -1 : root, inter ? MPI_DATATYPE_NULL : ip ? stype : rtype,
          MPI_OP_NULL, ip, t0, t1);
    return rc;
}

int MPI_Reduce_scatter_c(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dt, MPI_Op op,
                         MPI_Comm comm)
{
    int p, rank, inter;
    if (!timed(comm, &p, &rank, &inter)) return PMPI_Reduce_scatter_c(sbuf, rbuf, rcounts, dt, op, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Reduce_scatter_c(sbuf, rbuf, rcounts, dt, op, comm);
    const uint64_t t1 = ckp_profile_now();
    count(CKP_P_REDUCE_SCATTER_V, comm, inter ? 0 : sum_bytes_c(rcounts, p, dt), -1, dt, op, sbuf == MPI_IN_PLACE,
          t0, t1);
    return rc;
}

int MPI_Scan_c(const void *sbuf, void *rbuf, MPI_Count n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    if (!ckp_profile_on || ckp_inside) return PMPI_Scan_c(sbuf, rbuf, n, dt, op, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Scan_c(sbuf, rbuf, n, dt, op, comm);
    const uint64_t t1 = ckp_profile_now();
    count(CKP_P_SCAN, comm, side_bytes((long long)n, dt), -1, dt, op, sbuf == MPI_IN_PLACE, t0, t1);
    return rc;
}

int MPI_Exscan_c(const void *sbuf, void *rbuf, MPI_Count n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    if (!ckp_profile_on || ckp_inside) return PMPI_Exscan_c(sbuf, rbuf, n, dt, op, comm);
    const uint64_t t0 = ckp_profile_now();
    const int rc = PMPI_Exscan_c(sbuf, rbuf, n, dt, op, comm);
    const uint64_t t1 = ckp_profile_now();
    count(CKP_P_EXSCAN, comm, side_bytes((long long)n, dt), -1, dt, op, sbuf == MPI_IN_PLACE, t0, t1);
    return rc;
}
#endif
