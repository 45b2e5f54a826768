/* Bine scatter on the distance-halving Bine tree (De Sensi et al., "Bine
 * Trees", SC'25): the mirror image of the gather bine_halving
 * (lib/gather/bine_halving.c). The root sends each child its subtree's
 * circular run of blocks, the biggest (half of them, |rho(s-1)| ~ p/3 ranks
 * away) first, and every rank passes the runs of its children's subtrees
 * down: MPICH's binomial scatter at Bine distances, no reordering.
 *
 * The walk is shared with the gather (lib/core/bine_halving_blocks.c). */
#include "../core/bine_tree.h"
#include "../core/ck_core.h"

int ck_scatter_bine_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, int root,
                            MPI_Comm comm)
{
    return ck_bine_halving_blocks(0, sbuf, rbuf, count, dt, root, comm);
}
