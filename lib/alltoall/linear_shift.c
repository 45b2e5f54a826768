/* Linear-shift all-to-all (Prisacari et al., ICS'13, "LIN"): phase i =
 * 0..p-1 sends to (rank + i + shift) mod p and receives from (rank - i -
 * shift) mod p, one sendrecv per phase, the own block included (sent to
 * itself in its phase), so the sender's send index is the phase.
 *
 * The shift comes from COLLKIT_LINEAR_SHIFT (an integer, taken mod p; unset:
 * 0), read at every call: every rank must see the same value. Anything but an
 * integer is refused with MPI_ERR_ARG.
 *
 * With shift 0 the messages are those of Open MPI's pairwise
 * (ompi_coll_base_alltoall_intra_pairwise: step s sends to rank + s, its own
 * block last) and, for p not a power of two, of MPICH's pairwise; only where
 * the own block moves differs. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

#include <errno.h>
#include <stdlib.h>

/* The shift, reduced to 0..p-1. */
static int read_shift(int p, int *shift)
{
    const char *env = getenv(CK_LINEAR_SHIFT_ENV);
    *shift = 0;
    if (env == NULL || *env == '\0') return MPI_SUCCESS;
    char *end;
    errno = 0;
    long long v = strtoll(env, &end, 10);
    if (errno != 0 || *end != '\0' || end == env) return MPI_ERR_ARG;
    *shift = (int)(((v % p) + p) % p);
    return MPI_SUCCESS;
}

int ck_alltoall_linear_shift(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                             MPI_Comm comm)
{
    int rc, rank, size, shift;
    MPI_Aint extent;
    ck_tmp tmp = {0};
    const void *src;

    CK_TRY(ck_alltoall_open(sbuf, rbuf, count, dt, comm, &rank, &size, &extent, &tmp, &src));
    CK_TRY(read_shift(size, &shift));
    if (src == NULL) goto out;
    const int tag = CK_TAG(CK_ALLTOALL);
    CK_SPAN_BEGIN("exchange");
    for (int i = 0; i < size; i++) {
        const long long off = (long long)i + shift;
        const int to = (int)((rank + off) % size);
        const int from = (int)(((rank - off) % size + size) % size);
        CK_SPAN_BEGIN_STEP("phase", i);
        CK_TRY(ck_sendrecv(ck_elem(src, (size_t)to * count, extent), count, to,
                           ck_elem(rbuf, (size_t)from * count, extent), count, from, dt, tag,
                           comm));
        CK_SPAN_END("phase");
    }
    CK_SPAN_END("exchange");
out:
    ck_tmp_free(&tmp);
    return rc;
}
