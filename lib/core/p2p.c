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

MPI_Request *ck_reqs_get(MPI_Request *stack, size_t n)
{
    return n <= CK_STACK_REQS ? stack : malloc(n * sizeof *stack);
}

void ck_reqs_put(MPI_Request *stack, MPI_Request *reqs)
{
    if (reqs != stack) free(reqs);
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

#ifdef SMPI_H
#include <stdio.h>

/* SimGrid 3.32's MPI_Waitall (Request::waitall, src/smpi/mpi/smpi_request.cpp)
 * calls Request::waitany(n, ...) once per request, and each waitany rescans
 * all n slots and blocks on every still-pending comm at once; when one of
 * them completes, the kernel unregisters that wait from all the others
 * (CommImpl::finish). That is O(n) host work per completed request, O(n^2)
 * per waitall: the host CPU of many-message algorithms at hundreds of ranks
 * (linear alltoall, sparbit) went there. MPI_Wait on one request at a time is
 * O(1) per request. The simulated time does not move: every request is
 * already posted (ck_isend/ck_irecv started it, so matching does not depend
 * on the order of the waits), waiting costs no simulated time
 * (smpi/simulate-computation:no), and the rank leaves the last MPI_Wait at the
 * latest completion, as it leaves MPI_Waitall.
 *
 * Except with a receive overhead (smpi/or, collkit's message_costs): SMPI
 * sleeps it in the waiting rank when a receive is finished. Waitall finishes
 * receives in completion order; MPI_Wait in index order can idle on a late
 * request while an earlier-completed one's overhead is still to be paid
 * (4 of the 330 fixed points of tests/python/test_sim_times.py moved, by up
 * to 0.33 us, with sim:lumi-like+loggp). So the in-order waits
 * are used only when the simulator's command line (where smpirun puts every
 * --cfg) has no non-zero smpi/or; when that cannot be read, MPI_Waitall. */
enum { CK_CMDLINE_MAX = 1 << 16 };

static int ck_sim_recv_overhead(void)
{
    static int known = -1;   /* per rank (SMPI privatizes globals); the cfg is the same for all */
    if (known >= 0) return known;
    known = 1;
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f) return known;
    char *buf = malloc(CK_CMDLINE_MAX);
    if (!buf) {
        fclose(f);
        return known;
    }
    size_t n = fread(buf, 1, CK_CMDLINE_MAX - 1, f);
    int complete = feof(f) && !ferror(f);
    fclose(f);
    if (complete) {
        buf[n] = '\0';
        static const char key[] = "--cfg=smpi/or:";
        known = 0;
        /* arguments are NUL-separated; any digit 1-9 in the value is a
         * possibly non-zero cost (conservative: "0e5" counts as one) */
        for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
            if (strncmp(buf + i, key, sizeof key - 1) == 0 && strpbrk(buf + i + sizeof key - 1, "123456789"))
                known = 1;
    }
    free(buf);
    return known;
}

static int ck_wait_each(int n, MPI_Request *reqs)
{
    if (ck_sim_recv_overhead()) return MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    int first_err = MPI_SUCCESS;
    for (int i = 0; i < n; i++) {
        int rc = MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS && first_err == MPI_SUCCESS) first_err = rc;
    }
    return first_err;
}
#endif

int ck_waitall(int n, MPI_Request *reqs)
{
    if (n == 0) return MPI_SUCCESS;
#ifdef SMPI_H
    CK_COMM(ck_wait_each(n, reqs));
#else
    CK_COMM(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
#endif
}
