/* Bruck allgather (Bruck et al. 1997): ceil(log2 p) steps for any p. At step
 * k (distance 2^k) a rank sends the first min(2^k, p-2^k) blocks it holds,
 * counted from its own (blocks rank, rank+1, ... mod p), to rank-2^k, and
 * receives as many from rank+2^k, the blocks that follow them; after the last
 * step it holds all p: logarithmic latency without power-of-two
 * restrictions.
 *
 * Where the blocks go (the messages are the same either way):
 *
 * - Small blocks are gathered in a temporary rotated so that this rank's
 *   block comes first (a step's blocks are then one run), and one copy puts
 *   them in place at the end.
 * - Blocks of CK_SCATTERED_MIN_BYTES or more go straight to their places in
 *   rbuf: a step's blocks are one run there, or two where they wrap past
 *   block p-1, and a wrapping run travels as a datatype of its blocks'
 *   addresses (scattered.h). No temporary and no copy but the own block's;
 *   the libraries gather rotated and copy every block once more (Open MPI
 *   coll/base rotates rbuf through a temporary of p-rank blocks, MPICH
 *   through one of p). */
#include "../core/ck_core.h"
#include "../core/scattered.h"
#include "collkit/spans.h"

/* The nblk blocks first, first+1, ... (mod p) of rbuf as one message side. */
static int blocks_from(char *rbuf, int first, size_t nblk, int size, size_t count, MPI_Datatype dt,
                       MPI_Aint ext, char **starts, MPI_Aint *disp, ck_scattered *out)
{
    if ((size_t)first + nblk <= (size_t)size)
        return ck_scattered_run(ck_elem(rbuf, (size_t)first * count, ext), nblk * count, dt, out);
    for (size_t i = 0; i < nblk; i++)
        starts[i] = ck_elem(rbuf, ((size_t)first + i) % (size_t)size * count, ext);
    return ck_scattered_make((int)nblk, starts, disp, count, dt, out);
}

static int gather_in_place(char *rbuf, int rank, int size, size_t count, MPI_Datatype dt, MPI_Aint ext,
                           int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    char **starts = malloc((size_t)size * sizeof *starts);
    MPI_Aint *disp = malloc((size_t)size * sizeof *disp);
    if (starts == NULL || disp == NULL) rc = MPI_ERR_NO_MEM;
    const int steps = ck_log2_ceil(size);
    for (int k = 0; k < steps && rc == MPI_SUCCESS; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        const int dist = 1 << k;
        const size_t nblk = (size_t)(dist < size - dist ? dist : size - dist);
        ck_scattered s = {NULL, 1, MPI_DATATYPE_NULL, 0}, r = {NULL, 1, MPI_DATATYPE_NULL, 0};
        rc = blocks_from(rbuf, rank, nblk, size, count, dt, ext, starts, disp, &s);
        if (rc == MPI_SUCCESS)
            rc = blocks_from(rbuf, (rank + dist) % size, nblk, size, count, dt, ext, starts, disp, &r);
        if (rc == MPI_SUCCESS)
            rc = ck_sendrecv_scattered(&s, (rank - dist + size) % size, &r, (rank + dist) % size, tag, comm);
        ck_scattered_free(&s);
        ck_scattered_free(&r);
        CK_SPAN_END("step");
    }
    free(starts);
    free(disp);
    return rc;
}

static int gather_rotated(char *rbuf, int rank, int size, size_t count, MPI_Datatype dt, MPI_Aint ext,
                          int tag, MPI_Comm comm)
{
    int rc;
    ck_tmp tmp = {0};
    char *own = ck_elem(rbuf, (size_t)rank * count, ext);
    CK_TRY(ck_tmp_alloc(&tmp, (size_t)size * count, dt));
    CK_TRY(ck_copy(own, tmp.buf, count, dt));
    const int steps = ck_log2_ceil(size);
    for (int k = 0; k < steps; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        const int dist = 1 << k;
        const size_t nblk = (size_t)(dist < size - dist ? dist : size - dist);
        CK_TRY(ck_sendrecv(tmp.buf, nblk * count, (rank - dist + size) % size,
                           ck_elem(tmp.buf, (size_t)dist * count, ext), nblk * count,
                           (rank + dist) % size, dt, tag, comm));
        CK_SPAN_END("step");
    }
    /* tmp block i is block (rank+i) mod p; block 0 is already in place */
    CK_SPAN_BEGIN("unrotate");
    const size_t upper = (size_t)(size - rank);
    CK_TRY(ck_copy(ck_elem(tmp.buf, count, ext), ck_elem(own, count, ext), (upper - 1) * count, dt));
    CK_TRY(ck_copy(ck_elem(tmp.buf, upper * count, ext), rbuf, (size_t)rank * count, dt));
    CK_SPAN_END("unrotate");
out:
    ck_tmp_free(&tmp);
    return rc;
}

int ck_allgather_bruck(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                       MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint ext;
    /* leaves this rank's block in its place in rbuf */
    CK_TRY(ck_allgather_open(sbuf, rbuf, count, dt, comm, &rank, &size, &ext, &done));
    if (done) goto out;
    const int tag = CK_TAG(CK_ALLGATHER);
    CK_SPAN_BEGIN("allgather");
    /* one block's bytes decide, equal on every rank */
    if (ck_scattered_pays(1, count, dt))
        rc = gather_in_place(rbuf, rank, size, count, dt, ext, tag, comm);
    else
        rc = gather_rotated(rbuf, rank, size, count, dt, ext, tag, comm);
    CK_SPAN_END("allgather");
out:
    return rc;
}
