/* The allreduce algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_allreduce_algorithms[] = {
    {CK_ALLREDUCE, "recursive_doubling",
     "whole vector exchanged with rank XOR 2^k; non-power-of-two p by folding; any op",
     "Thakur, Rabenseifner, Gropp 2005 (MPICH)", 0, 0,
     {.allreduce = ck_allreduce_recursive_doubling}},
    {CK_ALLREDUCE, "rabenseifner",
     "reduce-scatter by recursive halving + allgather by recursive doubling; folding for non-power-of-two p",
     "Rabenseifner 2004; Thakur, Rabenseifner, Gropp 2005 (MPICH)", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_rabenseifner}},
    {CK_ALLREDUCE, "ring",
     "ring reduce-scatter + ring allgather, blocks moved in 1 MiB segments overlapping reduction",
     "Open MPI coll/base (ring_segmented)", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_ring}},
    {CK_ALLREDUCE, "reduce_bcast",
     "binomial reduce to rank 0 then binomial broadcast from rank 0; any op",
     "MPICH / Open MPI coll/base (basic)", 0, 0,
     {.allreduce = ck_allreduce_reduce_bcast}},
    {CK_ALLREDUCE, "binary_blocks",
     "power-of-two blocks per binary digit of p, each halving/doubling, partials handed between blocks",
     "Rabenseifner & Träff 2004", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_binary_blocks}},
    {CK_ALLREDUCE, "swing_latency",
     "Swing butterfly, whole vector each step with partner at distance |rho(k)| = 1, 1, 3, 5, 11, ...; folding of neighbour pairs for non-power-of-two p",
     "De Sensi et al., Swing (NSDI'24)", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_swing_latency}},
    {CK_ALLREDUCE, "swing_bandwidth",
     "Swing reduce-scatter (halving, nearest partners first) + Swing allgather, non-contiguous block sets packed; folding for non-power-of-two p",
     "De Sensi et al., Swing (NSDI'24)", CK_REQUIRES_COMMUTATIVE, 0,
     {.allreduce = ck_allreduce_swing_bandwidth}},
};
const size_t ck_allreduce_algorithms_n = CK_TABLE_SIZE(ck_allreduce_algorithms);
