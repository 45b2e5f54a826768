/* Bandwidth-optimal all-to-all on a fat tree FT(L; M1..ML) (Prisacari,
 * Minkenberg, Rodriguez, Hoefler, ICS'13): the permuted-variable-base
 * exchange. Phase q = 0..p-1 writes the source s and q in the variable base
 * (M_L, ..., M_1), least significant digit first, adds digit by digit modulo
 * the radix, and reads the sums as the digits of the destination in the base
 * (M_1..M_L) in reverse order (lib/core/fattree.c). Each phase is a
 * permutation, and at most B_min(l) = Pi_l - floor(Pi_l / (M_{l+1}..M_L))
 * messages leave any level-l subtree in a phase: the lower bound, where XOR
 * and linear shift need the whole Pi_l in half of the phases.
 *
 * One sendrecv per phase, the own block included (sent to itself in its
 * phase), so the sender's send index is the phase. The radices come from
 * COLLKIT_FATTREE (ck_fattree_radices in collkit.h: unset means one switch,
 * where this is the linear shift; a product that does not divide p is refused
 * with MPI_ERR_ARG before anything is sent). */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_alltoall_fattree_opt(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                            MPI_Comm comm)
{
    int rc, rank, size, levels;
    int m[CK_FATTREE_MAX_LEVELS + 1];
    MPI_Aint extent;
    ck_tmp tmp = {0};
    const void *src;

    CK_TRY(ck_alltoall_open(sbuf, rbuf, count, dt, comm, &rank, &size, &extent, &tmp, &src));
    /* Refused at every count, so that a misconfigured job fails the same way
     * whatever it sends. */
    CK_TRY(ck_fattree_radices(size, m, &levels));
    if (src == NULL) goto out;
    const int tag = CK_TAG(CK_ALLTOALL);
    CK_SPAN_BEGIN("exchange");
    for (int q = 0; q < size; q++) {
        const int to = ck_fattree_opt_dest(rank, q, m, levels);
        const int from = ck_fattree_opt_source(rank, q, m, levels);
        CK_SPAN_BEGIN_STEP("phase", q);
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
