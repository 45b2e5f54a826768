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

typedef struct {
    int m[CK_FATTREE_MAX_LEVELS + 1];
    int levels;
} tree;

static int tree_setup(int size, void *ctx, int *phases)
{
    tree *t = ctx;
    *phases = size;
    return ck_fattree_radices(size, t->m, &t->levels);
}

static int tree_peers(const void *ctx, int rank, int size, int phase, int *to, int *from)
{
    const tree *t = ctx;
    (void)size;
    *to = ck_fattree_opt_dest(rank, phase, t->m, t->levels);
    *from = ck_fattree_opt_source(rank, phase, t->m, t->levels);
    return 1;
}

int ck_alltoall_fattree_opt(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                            MPI_Comm comm)
{
    tree t = {.levels = 0};
    return ck_alltoall_phases(sbuf, rbuf, count, dt, comm, tree_setup, tree_peers, &t, 0);
}
