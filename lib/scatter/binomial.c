/* Binomial-tree scatter (MPICH; Thakur, Rabenseifner, Gropp 2005): the mirror
 * image of the binomial gather.
 *
 * Ranks are renumbered relative to the root (vr = rank - root mod p). Rank vr
 * owns the subtree of relative ranks [vr, vr + min(lowbit(vr), p - vr)) and
 * receives that subtree's blocks, in relative order, in one message from its
 * parent vr - lowbit(vr). It then hands each child vr + mask (mask = largest
 * power of two below lowbit(vr) first, so the biggest subtree starts
 * forwarding earliest) the child's contiguous run, and keeps the first block:
 * ceil(log2 p) rounds.
 *
 * At the root relative order is real rank order rotated by root, so each
 * child's run is sent straight from sbuf; only the one run that crosses the
 * end of sbuf (relative ranks wrapping past p-1 to 0) is first packed into a
 * temporary buffer. Leaves receive directly into rbuf. */
#include "../core/ck_core.h"

/* The tree walk is shared with the binomial gather (lib/core/binomial_blocks.c). */
int ck_scatter_binomial(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root,
                        MPI_Comm comm)
{
    return ck_binomial_blocks(0, sbuf, rbuf, count, dt, root, comm);
}
