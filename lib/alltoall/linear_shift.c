/* Linear-shift all-to-all (Prisacari et al., ICS'13, "LIN"): phase i =
 * 0..p-1 sends to (rank + i + shift) mod p and receives from (rank - i -
 * shift) mod p, one sendrecv per phase. The own block's phase, (p - shift)
 * mod p, is the same on every rank and sends nothing: the block is copied
 * locally after the exchange, so every rank sends once in each other phase
 * and a send's index among the sender's sends numbers the network phases
 * alike on every rank.
 *
 * The shift comes from COLLKIT_LINEAR_SHIFT (an integer, taken mod p; unset:
 * 0), read at the process's first call (a getenv per call was a fifth of a
 * small call's instructions): every rank must see the same value. Anything
 * but an integer is refused with MPI_ERR_ARG, at every call.
 *
 * With shift 0 the messages and the copy are those of Open MPI's pairwise
 * (ompi_coll_base_alltoall_intra_pairwise: step s = 1..p-1 sends to rank + s,
 * then copies the own block) and, for p not a power of two, the messages of
 * MPICH's pairwise (which copies the own block first). */
#include "../core/ck_core.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

/* The environment's shift, parsed once: state 0 unread, 1 read (value), 2
 * not an integer. Threads that race on the first read parse the same text
 * and store the same answer. */
static _Atomic int shift_state;
static _Atomic long long shift_value;

static int env_shift(long long *v)
{
    int state = atomic_load_explicit(&shift_state, memory_order_acquire);
    if (state == 0) {
        const char *env = getenv(CK_LINEAR_SHIFT_ENV);
        long long parsed = 0;
        state = 1;
        if (env != NULL && *env != '\0') {
            char *end;
            errno = 0;
            parsed = strtoll(env, &end, 10);
            if (errno != 0 || *end != '\0' || end == env) state = 2;
        }
        atomic_store_explicit(&shift_value, parsed, memory_order_relaxed);
        atomic_store_explicit(&shift_state, state, memory_order_release);
    }
    *v = atomic_load_explicit(&shift_value, memory_order_relaxed);
    return state == 1 ? MPI_SUCCESS : MPI_ERR_ARG;
}

/* The shift, reduced to 0..p-1. */
static int read_shift(int p, int *shift)
{
    long long v;
    *shift = 0;
    int rc = env_shift(&v);
    if (rc == MPI_SUCCESS) *shift = (int)(((v % p) + p) % p);
    return rc;
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
