/* Bruck allgather (Bruck et al. 1997): ceil(log2 p) steps for any p. Blocks
 * are gathered in rbuf rotated so that this rank's block comes first; at
 * step k (distance 2^k) a rank sends its first min(2^k, p-2^k) blocks to
 * rank-2^k and appends the same number received from rank+2^k. Every rank
 * then holds blocks rank, rank+1, ..., rank+p-1 (mod p), and one local
 * rotation puts them in place: logarithmic latency without power-of-two
 * restrictions.
 *
 * The steps work in rbuf itself (as Open MPI's coll/base does), and the
 * rotation moves each block once along the cycles of the rotation, through
 * a one-block temporary: p + gcd(p, rank) block copies and no p-block
 * temporary, whose fresh pages (a malloc of p blocks is an mmap past
 * glibc's threshold) cost more than the copies at large blocks. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

static int gcd(int a, int b)
{
    while (b != 0) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* rbuf block (i + shift) mod p = rbuf block i, for every i, in place. */
static int rotate_in_place(char *rbuf, int shift, int size, size_t count, MPI_Datatype dt,
                           MPI_Aint ext)
{
    int rc;
    ck_tmp held = {0};
    CK_TRY(ck_tmp_alloc(&held, count, dt));
    const int cycles = gcd(size, shift);
    for (int start = 0; start < cycles; start++) {
        /* along the cycle start, start - shift, start - 2 shift, ...: each
         * place takes the block shift places before it */
        CK_TRY(ck_copy(ck_elem(rbuf, (size_t)start * count, ext), held.buf, count, dt));
        int to = start;
        for (;;) {
            const int from = (to - shift + size) % size;
            if (from == start) break;
            CK_TRY(ck_copy(ck_elem(rbuf, (size_t)from * count, ext), ck_elem(rbuf, (size_t)to * count, ext),
                           count, dt));
            to = from;
        }
        CK_TRY(ck_copy(held.buf, ck_elem(rbuf, (size_t)to * count, ext), count, dt));
    }
out:
    ck_tmp_free(&held);
    return rc;
}

int ck_allgather_bruck(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                       MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint ext;
    CK_TRY(ck_allgather_open(sbuf, rbuf, count, dt, comm, &rank, &size, &ext, &done));
    if (done) goto out;
    char *base = rbuf;

    /* this rank's block (ck_allgather_open left it in its place) first */
    CK_TRY(ck_copy(ck_elem(base, (size_t)rank * count, ext), base, count, dt));

    const int tag = CK_TAG(CK_ALLGATHER);
    const int steps = ck_log2_ceil(size);
    CK_SPAN_BEGIN("allgather");
    for (int k = 0; k < steps; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        const int dist = 1 << k;
        const size_t nblk = (size_t)(dist < size - dist ? dist : size - dist);
        CK_TRY(ck_sendrecv(base, nblk * count, (rank - dist + size) % size,
                           ck_elem(base, (size_t)dist * count, ext), nblk * count,
                           (rank + dist) % size, dt, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");

    /* rbuf block i is block (rank+i) mod p: rotate it to block (rank+i) mod p */
    CK_SPAN_BEGIN("unrotate");
    if (rank != 0) CK_TRY(rotate_in_place(base, rank, size, count, dt, ext));
    CK_SPAN_END("unrotate");
out:
    return rc;
}
