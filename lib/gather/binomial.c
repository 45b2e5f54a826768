/* Binomial-tree gather (MPICH; Thakur, Rabenseifner, Gropp 2005).
 *
 * Ranks are renumbered relative to the root (vr = rank - root mod p). Rank vr
 * owns the subtree of relative ranks [vr, vr + min(lowbit(vr), p - vr)): its
 * children are vr + 1, vr + 2, vr + 4, ... below lowbit(vr), and each child's
 * subtree is a contiguous run of relative ranks. So an inner rank collects its
 * subtree's blocks contiguously, in relative order, in a temporary buffer and
 * forwards them to its parent vr - lowbit(vr) in one message: ceil(log2 p)
 * rounds, and every block crosses each tree level once.
 *
 * At the root relative order is real rank order rotated by root. The children's
 * runs are received straight into their place in rbuf; only the one run that
 * crosses the end of rbuf (relative ranks mapping past p-1 back to 0) goes
 * through a temporary buffer and is split in two. Leaves send sbuf directly. */
#include "../core/ck_core.h"

/* The tree walk is shared with the binomial scatter (lib/core/binomial_blocks.c). */
int ck_gather_binomial(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root,
                       MPI_Comm comm)
{
    return ck_binomial_blocks(1, sbuf, rbuf, count, dt, root, comm);
}
