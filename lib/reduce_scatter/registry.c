/* The reduce_scatter algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_reduce_scatter_algorithms[] = {
    {CK_REDUCE_SCATTER, "recursive_halving",
     "log2 p steps halving the blocks exchanged with rank XOR distance; non-power-of-two p by folding",
     "Thakur, Rabenseifner, Gropp 2005 (MPICH)", CK_REQUIRES_COMMUTATIVE, 0,
     {.reduce_scatter = ck_reduce_scatter_recursive_halving}},
    {CK_REDUCE_SCATTER, "ring",
     "p-1 steps passing one partially reduced block to rank+1 around a ring",
     "Open MPI coll/base (ring)", CK_REQUIRES_COMMUTATIVE, 0,
     {.reduce_scatter = ck_reduce_scatter_ring}},
    {CK_REDUCE_SCATTER, "recursive_doubling",
     "log2 p steps merging rank-ordered groups, sending the blocks still needed; any op",
     "Thakur, Rabenseifner, Gropp 2005 (MPICH)", 0, 0,
     {.reduce_scatter = ck_reduce_scatter_recursive_doubling}},
    {CK_REDUCE_SCATTER, "bine_permute",
     "Bine distance-doubling butterfly on a slot-ordered accumulator (contiguous sends); folding for non-power-of-two p",
     "De Sensi et al., Bine Trees (SC'25)", CK_REQUIRES_COMMUTATIVE, 0,
     {.reduce_scatter = ck_reduce_scatter_bine_permute}},
    {CK_REDUCE_SCATTER, "bine_remap",
     "Bine distance-doubling butterfly on remapped positions (contiguous sends), then a fix-up exchange of the result blocks; folding for non-power-of-two p",
     "De Sensi et al., Bine Trees (SC'25)", CK_REQUIRES_COMMUTATIVE, 0,
     {.reduce_scatter = ck_reduce_scatter_bine_remap}},
    {CK_REDUCE_SCATTER, "bine_noncontig",
     "Bine distance-doubling butterfly in rank order, non-contiguous block sets packed per step; folding for non-power-of-two p",
     "De Sensi et al., Bine Trees (SC'25)", CK_REQUIRES_COMMUTATIVE, 0,
     {.reduce_scatter = ck_reduce_scatter_bine_noncontig}},
    {CK_REDUCE_SCATTER, "swing",
     "Swing butterfly, steps at distance 1, 1, 3, 5, 11, ... halving the data, non-contiguous block sets packed; folding for non-power-of-two p",
     "De Sensi et al., Swing (NSDI'24)", CK_REQUIRES_COMMUTATIVE, 0,
     {.reduce_scatter = ck_reduce_scatter_swing}},
};
const size_t ck_reduce_scatter_algorithms_n = CK_TABLE_SIZE(ck_reduce_scatter_algorithms);
