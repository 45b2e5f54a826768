/* The bcast algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_bcast_algorithms[] = {
    {CK_BCAST, "linear", "root sends the whole buffer to each rank in turn",
     "MPICH / Open MPI coll/base (basic_linear)", CK_TRAIT_WHOLE_VECTOR, 0, {.bcast = ck_bcast_linear}},
    {CK_BCAST, "binomial_doubling",
     "binomial tree, root serves distance 1 first, then 2, 4, ...",
     "Open MPI coll/base (binomial)", CK_TRAIT_WHOLE_VECTOR, 0, {.bcast = ck_bcast_binomial_doubling}},
    {CK_BCAST, "binomial_halving",
     "binomial tree, root serves the farthest rank first, then half the distance, ...",
     "Thakur, Rabenseifner, Gropp 2005 (MPICH)", CK_TRAIT_WHOLE_VECTOR, 0, {.bcast = ck_bcast_binomial_halving}},
    {CK_BCAST, "scatter_allgather_rd",
     "binomial scatter of p blocks, then recursive-doubling allgather",
     "Van de Geijn 1997 / MPICH", 0, 0, {.bcast = ck_bcast_scatter_allgather_rd}},
    {CK_BCAST, "scatter_allgather_ring",
     "binomial scatter of p blocks, then ring allgather",
     "Van de Geijn 1997 / MPICH", 0, 0, {.bcast = ck_bcast_scatter_allgather_ring}},
    {CK_BCAST, "chain",
     "pipelined chain along relative ranks in 64 KiB segments",
     "Open MPI coll/base (pipeline/chain)", CK_TRAIT_WHOLE_VECTOR, 0, {.bcast = ck_bcast_chain}},
    {CK_BCAST, "bine",
     "distance-halving Bine tree (binomial tree on negabinary positions, shorter hops)",
     "De Sensi et al., Bine Trees, SC'25", CK_TRAIT_WHOLE_VECTOR, 0, {.bcast = ck_bcast_bine}},
    {CK_BCAST, "bine_scatter_allgather",
     "distance-doubling Bine scatter of p' blocks, then distance-halving Bine allgather",
     "De Sensi et al., Bine Trees, SC'25", 0, 0, {.bcast = ck_bcast_bine_scatter_allgather}},
};
const size_t ck_bcast_algorithms_n = CK_TABLE_SIZE(ck_bcast_algorithms);
