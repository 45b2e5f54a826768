/* The allgather algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_allgather_algorithms[] = {
    {CK_ALLGATHER, "ring",
     "p-1 steps, each rank forwards the block received last to its right neighbour",
     "Thakur, Rabenseifner, Gropp 2005 (MPICH)", 0, 0, {.allgather = ck_allgather_ring}},
    {CK_ALLGATHER, "recursive_doubling",
     "log2 p steps swapping doubling block ranges with rank XOR 2^k; folding for non-power-of-two p",
     "Thakur, Rabenseifner, Gropp 2005 (MPICH)", 0, 0,
     {.allgather = ck_allgather_recursive_doubling}},
    {CK_ALLGATHER, "bruck",
     "ceil(log2 p) steps gathering into a rotated buffer, then one local rotation",
     "Bruck et al. 1997", 0, 0, {.allgather = ck_allgather_bruck}},
    {CK_ALLGATHER, "neighbor_exchange",
     "p/2 steps exchanging two-block pairs with alternating neighbours; ring for odd p",
     "Chen et al. 2005 (Open MPI)", 0, 0, {.allgather = ck_allgather_neighbor_exchange}},
    {CK_ALLGATHER, "sparbit",
     "ceil(log2 p) distance-halving steps, blocks stay in place, duplicate blocks ignored for non-power-of-two p",
     "Loch & Koslovski 2021 (Open MPI 5)", 0, 0, {.allgather = ck_allgather_sparbit}},
    {CK_ALLGATHER, "bine_permute",
     "Bine distance-halving butterfly in a slot-ordered buffer (contiguous sends), blocks put back in rank order at the end; folding for non-power-of-two p",
     "De Sensi et al., Bine Trees (SC'25)", 0, 0, {.allgather = ck_allgather_bine_permute}},
    {CK_ALLGATHER, "bine_remap",
     "Bine distance-halving butterfly on remapped positions (contiguous sends in rbuf) after a fix-up exchange of the own blocks; folding for non-power-of-two p",
     "De Sensi et al., Bine Trees (SC'25)", 0, 0, {.allgather = ck_allgather_bine_remap}},
    {CK_ALLGATHER, "bine_noncontig",
     "Bine distance-halving butterfly in rank order, non-contiguous block sets packed per step; folding for non-power-of-two p",
     "De Sensi et al., Bine Trees (SC'25)", 0, 0, {.allgather = ck_allgather_bine_noncontig}},
    {CK_ALLGATHER, "swing",
     "Swing butterfly, steps at distance ..., 11, 5, 3, 1, 1 doubling the data, non-contiguous block sets packed; folding for non-power-of-two p",
     "De Sensi et al., Swing (NSDI'24)", 0, 0, {.allgather = ck_allgather_swing}},
};
const size_t ck_allgather_algorithms_n = CK_TABLE_SIZE(ck_allgather_algorithms);
