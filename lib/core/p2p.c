/* Point-to-point wrappers: size_t counts, one place for every message.
 * Being that one place, they are also where the instrumented build tags
 * every message as "comm" (nothing at all in the plain build). */
#include "ck_core.h"
#include "collkit/spans.h"

/* The local work charged so far goes first (SimGrid builds, buffer.c), then
 * the MPI call inside a "comm" tag; the count checks stay outside (they are
 * not communication, and an early return must not leave the tag open). */
#define CK_COMM(call)                                                           \
    do {                                                                        \
        ck_local_work_flush();                                                  \
        CK_SPAN_BEGIN("comm");                                                   \
        int ck_comm_rc_ = (call);                                               \
        CK_SPAN_END("comm");                                                     \
        return ck_comm_rc_;                                                     \
    } while (0)

#define CK_INT_COUNT(c)                                                         \
    do {                                                                        \
        if ((c) > CK_MAX_COUNT) return MPI_ERR_COUNT;                           \
    } while (0)

int ck_send(const void *buf, size_t count, MPI_Datatype dt, int dst, int tag, MPI_Comm comm)
{
    CK_INT_COUNT(count);
    CK_COMM(MPI_Send(buf, (int)count, dt, dst, tag, comm));
}

int ck_recv(void *buf, size_t count, MPI_Datatype dt, int src, int tag, MPI_Comm comm)
{
    CK_INT_COUNT(count);
    CK_COMM(MPI_Recv(buf, (int)count, dt, src, tag, comm, MPI_STATUS_IGNORE));
}

int ck_sendrecv(const void *sbuf, size_t scount, int dst,
                void *rbuf, size_t rcount, int src,
                MPI_Datatype dt, int tag, MPI_Comm comm)
{
    CK_INT_COUNT(scount);
    CK_INT_COUNT(rcount);
    CK_COMM(MPI_Sendrecv(sbuf, (int)scount, dt, dst, tag, rbuf, (int)rcount, dt, src, tag,
                         comm, MPI_STATUS_IGNORE));
}

int ck_isend(const void *buf, size_t count, MPI_Datatype dt, int dst, int tag,
             MPI_Comm comm, MPI_Request *req)
{
    CK_INT_COUNT(count);
    CK_COMM(MPI_Isend(buf, (int)count, dt, dst, tag, comm, req));
}

int ck_irecv(void *buf, size_t count, MPI_Datatype dt, int src, int tag,
             MPI_Comm comm, MPI_Request *req)
{
    CK_INT_COUNT(count);
    CK_COMM(MPI_Irecv(buf, (int)count, dt, src, tag, comm, req));
}

int ck_waitall(int n, MPI_Request *reqs)
{
    if (n == 0) return MPI_SUCCESS;
    CK_COMM(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
}
