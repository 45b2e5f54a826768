/* XOR all-to-all (Prisacari et al., ICS'13, "XOR"): phase i = 0..P-1, P the
 * power of two at or above p, pairs rank with rank XOR i, one sendrecv per
 * phase, phases in order. Phase 0 is the rank's own block, sent to itself, so
 * that for p = 2^k every rank sends exactly once per phase and the sender's
 * send index (the step of ck_trace) is the phase.
 *
 * For p not a power of two a partner rank ^ i >= p does not exist: the rank
 * idles in that phase (the pairing stays a matching of the existing ranks,
 * every pair meets once, in phase a XOR b). Its later sends then have send
 * indices below their phase numbers.
 *
 * Unlike `pairwise` (MPICH's: XOR only when p = 2^k, a local copy instead of
 * phase 0), this is the paper's XOR exchange at every p. */
#include "../core/ck_core.h"

static int xor_setup(int size, void *ctx, int *phases)
{
    (void)ctx;
    *phases = 1 << ck_log2_ceil(size);
    return MPI_SUCCESS;
}

static int xor_peers(const void *ctx, int rank, int size, int phase, int *to, int *from)
{
    (void)ctx;
    *to = *from = rank ^ phase;
    return *to < size;
}

int ck_alltoall_xor(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm)
{
    return ck_alltoall_phases(sbuf, rbuf, count, dt, comm, xor_setup, xor_peers, NULL, 0);
}
