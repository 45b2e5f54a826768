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
};
const size_t ck_allgather_algorithms_n = CK_TABLE_SIZE(ck_allgather_algorithms);
