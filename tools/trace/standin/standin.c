/*
 * The in-process stand-in for MPI that ck_trace runs libcollkit against.
 *
 * It "executes one rank alone": MPI_COMM_WORLD has the simulated size and the
 * caller is the simulated rank; every send on it (MPI_Send, MPI_Isend, the
 * send half of MPI_Sendrecv) is appended to the trace with its destination,
 * bytes and step, and every receive completes at once without touching the
 * buffer.
 *
 * Why leaving receive buffers as they are is valid: the schedules of these
 * collectives (who sends how much to whom, in which order) are functions of
 * rank, size, root, count and datatype only, never of the values carried, so
 * the sends of rank r are the same whatever arrives in its buffers. Nothing
 * here reads a buffer either (reductions are no-ops), so stale or
 * uninitialised contents are never branched on. The equivalence test against
 * the PMPI recorder under real MPI (tests/trace/) is what keeps this claim
 * honest for every registered algorithm.
 *
 * Arguments are checked as a real MPI would (ranks in range, known datatypes
 * and ops, non-negative counts), so a schedule bug shows up as an error here
 * instead of a plausible-looking trace. MPI_COMM_SELF exists only for the
 * typed local copies of lib/core/buffer.c, which go through MPI_Sendrecv.
 *
 * Global state is fine here: ck_trace is single-threaded and runs one rank
 * at a time.
 */
#include "standin.h"

#include <limits.h>
#include <string.h>

char ck_standin_in_place;

static int cur_rank = 0, cur_size = 1;
static ck_msgs *cur_sink = NULL;
static int32_t next_step = 0;
static long pending = 0;

void ck_standin_begin(int rank, int size, ck_msgs *sink)
{
    cur_rank = rank;
    cur_size = size;
    cur_sink = sink;
    next_step = 0;
    pending = 0;
}

long ck_standin_end(void)
{
    cur_sink = NULL;
    return pending;
}

/* Derived datatypes (MPI_Type_create_hindexed_block) by handle: their size
 * in bytes while they exist, 0 once freed. A collective frees each one
 * before it returns; more than DERIVED_MAX alive at once is an error. */
#define DERIVED_BASE 100
#define DERIVED_MAX 64
static uint64_t derived_bytes[DERIVED_MAX];

static int is_derived(MPI_Datatype dt)
{
    return dt >= DERIVED_BASE && dt < DERIVED_BASE + DERIVED_MAX && derived_bytes[dt - DERIVED_BASE] > 0;
}

/* Bytes of one element; 0 for an unknown datatype. */
static uint64_t type_bytes(MPI_Datatype dt)
{
    switch (dt) {
    case MPI_INT8_T: return 1;
    case MPI_INT32_T: return 4;
    case MPI_INT64_T: return 8;
    case MPI_FLOAT: return 4;
    case MPI_DOUBLE: return 8;
    default: return is_derived(dt) ? derived_bytes[dt - DERIVED_BASE] : 0;
    }
}

static int comm_size(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD) return cur_size;
    if (comm == MPI_COMM_SELF) return 1;
    return 0;
}

/* The checks every point-to-point call shares. */
static int check_p2p(const void *buf, int count, MPI_Datatype dt, int peer, int tag,
                     MPI_Comm comm)
{
    int size = comm_size(comm);
    if (size == 0) return MPI_ERR_COMM;
    if (count < 0) return MPI_ERR_COUNT;
    if (type_bytes(dt) == 0) return MPI_ERR_TYPE;
    if (peer < 0 || peer >= size) return MPI_ERR_RANK;
    if (tag < 0) return MPI_ERR_TAG;
    if (buf == NULL && count > 0) return MPI_ERR_BUFFER;
    return MPI_SUCCESS;
}

MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
    return addr1 - addr2;
}

int MPI_Get_address(const void *location, MPI_Aint *address)
{
    if (address == NULL) return MPI_ERR_ARG;
    *address = (MPI_Aint)(const char *)location;
    return MPI_SUCCESS;
}

int MPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint displacements[],
                                   MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    if (count < 0 || blocklength < 0) return MPI_ERR_COUNT;
    if (newtype == NULL || (count > 0 && displacements == NULL)) return MPI_ERR_ARG;
    uint64_t each = type_bytes(oldtype);
    if (each == 0) return MPI_ERR_TYPE;
    for (int i = 0; i < DERIVED_MAX; i++) {
        if (derived_bytes[i] == 0) {
            /* an empty type still needs a live handle: one byte marks it, never sent */
            uint64_t bytes = (uint64_t)count * (uint64_t)blocklength * each;
            if (bytes == 0) return MPI_ERR_COUNT;
            derived_bytes[i] = bytes;
            *newtype = DERIVED_BASE + i;
            return MPI_SUCCESS;
        }
    }
    return MPI_ERR_NO_MEM;
}

int MPI_Type_commit(MPI_Datatype *datatype)
{
    return datatype != NULL && is_derived(*datatype) ? MPI_SUCCESS : MPI_ERR_TYPE;
}

int MPI_Type_free(MPI_Datatype *datatype)
{
    if (datatype == NULL || !is_derived(*datatype)) return MPI_ERR_TYPE;
    derived_bytes[*datatype - DERIVED_BASE] = 0;
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}

static int record_send(int count, MPI_Datatype dt, int dest)
{
    if (cur_sink == NULL) return MPI_ERR_OTHER;
    uint64_t bytes = (uint64_t)count * (uint64_t)type_bytes(dt);
    if (ck_msgs_push(cur_sink, dest, next_step, bytes) != 0) return MPI_ERR_NO_MEM;
    next_step++;
    return MPI_SUCCESS;
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
             MPI_Comm comm)
{
    int rc = check_p2p(buf, count, datatype, dest, tag, comm);
    if (rc != MPI_SUCCESS) return rc;
    /* libcollkit never messages itself on MPI_COMM_SELF except through
     * MPI_Sendrecv; anything else would block in a real MPI. */
    if (comm != MPI_COMM_WORLD) return MPI_ERR_COMM;
    return record_send(count, datatype, dest);
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
             MPI_Comm comm, MPI_Status *status)
{
    int rc = check_p2p(buf, count, datatype, source, tag, comm);
    if (rc != MPI_SUCCESS) return rc;
    if (comm != MPI_COMM_WORLD) return MPI_ERR_COMM;
    if (status != MPI_STATUS_IGNORE) {
        status->MPI_SOURCE = source;
        status->MPI_TAG = tag;
        status->MPI_ERROR = MPI_SUCCESS;
    }
    return MPI_SUCCESS;
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    int rc = check_p2p(sendbuf, sendcount, sendtype, dest, sendtag, comm);
    if (rc != MPI_SUCCESS) return rc;
    rc = check_p2p(recvbuf, recvcount, recvtype, source, recvtag, comm);
    if (rc != MPI_SUCCESS) return rc;
    if (status != MPI_STATUS_IGNORE) {
        status->MPI_SOURCE = source;
        status->MPI_TAG = recvtag;
        status->MPI_ERROR = MPI_SUCCESS;
    }
    if (comm == MPI_COMM_SELF) {
        /* A typed local copy (lib/core/buffer.c): do it, it is not traffic. */
        size_t sbytes = (size_t)sendcount * (size_t)type_bytes(sendtype);
        size_t rbytes = (size_t)recvcount * (size_t)type_bytes(recvtype);
        if (sbytes > rbytes) return MPI_ERR_COUNT;
        if (sbytes > 0) memmove(recvbuf, sendbuf, sbytes);
        return MPI_SUCCESS;
    }
    return record_send(sendcount, sendtype, dest);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm, MPI_Request *request)
{
    if (request == NULL) return MPI_ERR_REQUEST;
    int rc = check_p2p(buf, count, datatype, dest, tag, comm);
    if (rc != MPI_SUCCESS) return rc;
    if (comm != MPI_COMM_WORLD) return MPI_ERR_COMM;
    /* The message is traced when it is posted: that is its place in the
     * rank's call order, which is what the step counts. */
    rc = record_send(count, datatype, dest);
    if (rc != MPI_SUCCESS) return rc;
    *request = 1; /* any non-null handle: completion needs no state */
    pending++;
    return MPI_SUCCESS;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
              MPI_Comm comm, MPI_Request *request)
{
    if (request == NULL) return MPI_ERR_REQUEST;
    int rc = check_p2p(buf, count, datatype, source, tag, comm);
    if (rc != MPI_SUCCESS) return rc;
    if (comm != MPI_COMM_WORLD) return MPI_ERR_COMM;
    *request = 1;
    pending++;
    return MPI_SUCCESS;
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    if (count < 0 || (count > 0 && array_of_requests == NULL)) return MPI_ERR_ARG;
    for (int i = 0; i < count; i++) {
        /* As in MPI, null requests are allowed and complete at once. */
        if (array_of_requests[i] != MPI_REQUEST_NULL) {
            array_of_requests[i] = MPI_REQUEST_NULL;
            pending--;
        }
        if (array_of_statuses != MPI_STATUSES_IGNORE) {
            array_of_statuses[i].MPI_SOURCE = 0;
            array_of_statuses[i].MPI_TAG = 0;
            array_of_statuses[i].MPI_ERROR = MPI_SUCCESS;
        }
    }
    return MPI_SUCCESS;
}

static int op_valid(MPI_Op op)
{
    return op == MPI_SUM || op == MPI_PROD || op == MPI_MAX || op == MPI_MIN ||
           op == CK_STANDIN_OP_NONCOMMUTATIVE;
}

int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                     MPI_Op op)
{
    if (count < 0) return MPI_ERR_COUNT;
    if (type_bytes(datatype) == 0) return MPI_ERR_TYPE;
    if (!op_valid(op)) return MPI_ERR_OP;
    if (count > 0 && (inbuf == NULL || inoutbuf == NULL)) return MPI_ERR_BUFFER;
    /* No arithmetic: values never influence a schedule (see the top). */
    return MPI_SUCCESS;
}

int MPI_Op_commutative(MPI_Op op, int *commute)
{
    if (!op_valid(op)) return MPI_ERR_OP;
    *commute = op != CK_STANDIN_OP_NONCOMMUTATIVE;
    return MPI_SUCCESS;
}

int MPI_Type_size(MPI_Datatype datatype, int *size)
{
    uint64_t b = type_bytes(datatype);
    if (b == 0) return MPI_ERR_TYPE;
    if (b > INT_MAX) return MPI_ERR_COUNT;
    *size = (int)b;
    return MPI_SUCCESS;
}

/* Of the predefined types only: no algorithm asks a derived type's extent. */
int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    MPI_Aint b = is_derived(datatype) ? 0 : (MPI_Aint)type_bytes(datatype);
    if (b == 0) return MPI_ERR_TYPE;
    *lb = 0;
    *extent = b;
    return MPI_SUCCESS;
}

int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    return MPI_Type_get_extent(datatype, true_lb, true_extent);
}

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    if (comm == MPI_COMM_WORLD) *rank = cur_rank;
    else if (comm == MPI_COMM_SELF) *rank = 0;
    else return MPI_ERR_COMM;
    return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    int s = comm_size(comm);
    if (s == 0) return MPI_ERR_COMM;
    *size = s;
    return MPI_SUCCESS;
}

int MPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
    if (comm_size(comm) == 0) return MPI_ERR_COMM;
    *flag = 0;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------- the library's collectives */

/* See mpi.h: present for the descriptors' ck_library_call, refused here. */
int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    (void)buf, (void)count, (void)dt, (void)root, (void)comm;
    return MPI_ERR_OTHER;
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm)
{
    (void)sbuf, (void)rbuf, (void)count, (void)dt, (void)op, (void)root, (void)comm;
    return MPI_ERR_OTHER;
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
               MPI_Datatype rdt, int root, MPI_Comm comm)
{
    (void)sbuf, (void)scount, (void)sdt, (void)rbuf, (void)rcount, (void)rdt, (void)root, (void)comm;
    return MPI_ERR_OTHER;
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                MPI_Datatype rdt, int root, MPI_Comm comm)
{
    (void)sbuf, (void)scount, (void)sdt, (void)rbuf, (void)rcount, (void)rdt, (void)root, (void)comm;
    return MPI_ERR_OTHER;
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                  MPI_Datatype rdt, MPI_Comm comm)
{
    (void)sbuf, (void)scount, (void)sdt, (void)rbuf, (void)rcount, (void)rdt, (void)comm;
    return MPI_ERR_OTHER;
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                             MPI_Op op, MPI_Comm comm)
{
    (void)sbuf, (void)rbuf, (void)count, (void)dt, (void)op, (void)comm;
    return MPI_ERR_OTHER;
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm)
{
    (void)sbuf, (void)rbuf, (void)count, (void)dt, (void)op, (void)comm;
    return MPI_ERR_OTHER;
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                 MPI_Datatype rdt, MPI_Comm comm)
{
    (void)sbuf, (void)scount, (void)sdt, (void)rbuf, (void)rcount, (void)rdt, (void)comm;
    return MPI_ERR_OTHER;
}
