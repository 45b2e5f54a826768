/* Bine gather on the distance-halving Bine tree (De Sensi et al., "Bine
 * Trees: Enhancing Collective Operations by Optimizing Communication
 * Locality", SC'25): the Bine broadcast's tree (lib/bcast/bine.c) run
 * backwards.
 *
 * Every subtree of that tree is a circular run of ranks relative to the
 * root, so a rank collects its subtree's blocks in rank order and forwards
 * them to its parent in one message, as MPICH's binomial gather does: the
 * same steps, message sizes and order (smallest subtree first), the biggest
 * message the farthest, but at Bine distances, the root's half-the-blocks
 * child |rho(s-1)| ~ p/3 ranks away instead of p/2. Where the ranks of a job
 * are laid out group after group, fewer blocks cross groups. The other Bine
 * gather (lib/gather/bine.c) runs the distance-doubling tree: the biggest
 * message travels to the root's neighbour, at the price of subtrees that
 * are not runs of ranks and a reordering at the root.
 *
 * The walk, the runs and the fold for non-power-of-two p are shared with the
 * scatter (lib/core/bine_halving_blocks.c). */
#include "../core/bine_tree.h"
#include "../core/ck_core.h"

int ck_gather_bine_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root,
                           MPI_Comm comm)
{
    return ck_bine_halving_blocks(1, sbuf, rbuf, count, dt, root, comm);
}
