/* Linear-shift all-to-all (Prisacari et al., ICS'13, "LIN"): phase i =
 * 0..p-1 sends to (rank + i + shift) mod p and receives from (rank - i -
 * shift) mod p, one sendrecv per phase. The own block's phase, (p - shift)
 * mod p, is the same on every rank; it copies the block locally (no message),
 * so every rank sends once in each other phase and a send's index among the
 * sender's sends numbers the network phases alike on every rank.
 *
 * The shift comes from COLLKIT_LINEAR_SHIFT (an integer, taken mod p; unset:
 * 0), read at every call: every rank must see the same value. Anything but an
 * integer is refused with MPI_ERR_ARG.
 *
 * With shift 0 the messages are those of Open MPI's pairwise
 * (ompi_coll_base_alltoall_intra_pairwise: step s = 1..p-1 sends to rank + s,
 * then copies the own block) and, for p not a power of two, of MPICH's
 * pairwise; the own block is copied first here, last there. */
#include "../core/ck_core.h"

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

static int shift_setup(int size, void *ctx, int *phases)
{
    *phases = size;
    return read_shift(size, (int *)ctx);
}

static int shift_peers(const void *ctx, int rank, int size, int phase, int *to, int *from)
{
    const long long off = (long long)phase + *(const int *)ctx;
    *to = (int)((rank + off) % size);
    *from = (int)(((rank - off) % size + size) % size);
    return 1;
}

int ck_alltoall_linear_shift(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                             MPI_Comm comm)
{
    int shift = 0;
    return ck_alltoall_phases(sbuf, rbuf, count, dt, comm, shift_setup, shift_peers, &shift, 1);
}
