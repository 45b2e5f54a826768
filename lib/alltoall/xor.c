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
#include "collkit/spans.h"

int ck_alltoall_xor(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm)
{
    int rc, rank, size;
    MPI_Aint extent;
    ck_tmp tmp = {0};
    const void *src;

    CK_TRY(ck_alltoall_open(sbuf, rbuf, count, dt, comm, &rank, &size, &extent, &tmp, &src));
    if (src == NULL) goto out;
    const int tag = CK_TAG(CK_ALLTOALL);
    const int phases = 1 << ck_log2_ceil(size);
    CK_SPAN_BEGIN("exchange");
    for (int i = 0; i < phases; i++) {
        const int peer = rank ^ i;
        if (peer >= size) continue;
        CK_SPAN_BEGIN_STEP("phase", i);
        CK_TRY(ck_sendrecv(ck_elem(src, (size_t)peer * count, extent), count, peer,
                           ck_elem(rbuf, (size_t)peer * count, extent), count, peer, dt, tag,
                           comm));
        CK_SPAN_END("phase");
    }
    CK_SPAN_END("exchange");
out:
    ck_tmp_free(&tmp);
    return rc;
}
