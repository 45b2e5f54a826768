/*
 * PMPI interposition: the ground truth for ck_trace.
 *
 * These definitions of MPI_Send, MPI_Isend and MPI_Sendrecv (the only
 * sending calls in libcollkit's MPI surface; the stand-in's mpi.h declares
 * nothing else, so a new one would break the ck_trace build first) are
 * linked into ck_trace_mpi ahead of the MPI library, so libcollkit's calls
 * land here; each forwards to its PMPI_ twin and, while recording is on and
 * the communicator is the traced one, appends (destination, bytes, step) to
 * this process's buffer. MPI_Irecv and MPI_Waitall are wrapped only to count
 * requests left incomplete, which ck_trace reports the same way.
 *
 * Recording is per process, so plain globals suffice. Portable C and the
 * standard PMPI profiling interface only: the same file builds with SimGrid's
 * smpicc, where wrappers compiled into the program are what works (see
 * ../shared/REFERENCE.md, "Message records"; SMPI privatises these globals
 * per simulated rank).
 */
#include "recorder.h"

static int recording = 0;
static MPI_Comm rec_comm;
static ck_msgs *rec_sink = NULL;
static int32_t rec_step = 0;
static long rec_pending = 0;

void ck_recorder_start(MPI_Comm comm, ck_msgs *sink)
{
    rec_comm = comm;
    rec_sink = sink;
    rec_step = 0;
    rec_pending = 0;
    recording = 1;
}

long ck_recorder_stop(void)
{
    recording = 0;
    rec_sink = NULL;
    return rec_pending;
}

/* Called before the PMPI call: the record's place is the call order. A send
 * the MPI then refuses is still recorded; the algorithm's error code is
 * what the caller looks at, and the trace is discarded on error. */
static void record(int count, MPI_Datatype dt, int dest, MPI_Comm comm)
{
    if (!recording || comm != rec_comm || dest == MPI_PROC_NULL) return;
    int size = 0;
    if (PMPI_Type_size(dt, &size) != MPI_SUCCESS) size = 0;
    uint64_t bytes = count > 0 && size > 0 ? (uint64_t)count * (uint64_t)size : 0;
    /* A failed push sets rec_sink->oom, which ck_trace_mpi checks. */
    (void)ck_msgs_push(rec_sink, dest, rec_step, bytes);
    rec_step++;
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
             MPI_Comm comm)
{
    record(count, datatype, dest, comm);
    return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm, MPI_Request *request)
{
    record(count, datatype, dest, comm);
    int rc = PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
    if (recording && rc == MPI_SUCCESS) rec_pending++;
    return rc;
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    record(sendcount, sendtype, dest, comm);
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                         recvtype, source, recvtag, comm, status);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
              MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
    if (recording && rc == MPI_SUCCESS) rec_pending++;
    return rc;
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    if (recording)
        for (int i = 0; i < count; i++)
            if (array_of_requests[i] != MPI_REQUEST_NULL) rec_pending--;
    return PMPI_Waitall(count, array_of_requests, array_of_statuses);
}
