/* The reduce algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_reduce_algorithms[] = {
    {CK_REDUCE, "linear", "every rank sends to the root, which combines in rank order",
     "MPICH / Open MPI coll/base (basic_linear)", CK_TRAIT_WHOLE_VECTOR, 0, {.reduce = ck_reduce_linear}},
    {CK_REDUCE, "binomial_doubling",
     "binomial tree, distances 1, 2, 4, ...; rank order kept for non-commutative ops",
     "Thakur, Rabenseifner, Gropp 2005 (MPICH)", CK_TRAIT_WHOLE_VECTOR, 0, {.reduce = ck_reduce_binomial_doubling}},
    {CK_REDUCE, "binomial_halving",
     "binomial tree, distances p/2, p/4, ..., 1 (mirror of the doubling bcast)",
     "collkit: distance-halving counterpart of the MPICH / Open MPI binomial reduce", CK_REQUIRES_COMMUTATIVE | CK_TRAIT_WHOLE_VECTOR, 0,
     {.reduce = ck_reduce_binomial_halving}},
    {CK_REDUCE, "rabenseifner",
     "reduce-scatter by vector halving, distance doubling (n/2 to rank XOR 1 first), then gather retracing it to the root; MPICH's folding (odd ranks drop out)",
     "MPICH MPIR_Reduce_intra_reduce_scatter_gather (Rabenseifner 2004)", CK_REQUIRES_COMMUTATIVE, 0,
     {.reduce = ck_reduce_rabenseifner}},
    {CK_REDUCE, "rabenseifner_halving",
     "reduce-scatter by vector and distance halving (n/2 to relative rank XOR p'/2 first), then binomial gather (distance 1, 2, 4, ...); tail folding keeps the root in",
     "Thakur, Rabenseifner, Gropp 2005 (the paper's order; collkit's folding)", CK_REQUIRES_COMMUTATIVE, 0,
     {.reduce = ck_reduce_rabenseifner_halving}},
    {CK_REDUCE, "bine",
     "distance-halving Bine tree run backwards (mirror of the Bine bcast)",
     "De Sensi et al., Bine Trees, SC'25", CK_REQUIRES_COMMUTATIVE | CK_TRAIT_WHOLE_VECTOR, 0,
     {.reduce = ck_reduce_bine}},
    {CK_REDUCE, "bine_rsag",
     "distance-doubling Bine reduce-scatter, then Bine-tree gather to the root",
     "De Sensi et al., Bine Trees, SC'25", CK_REQUIRES_COMMUTATIVE, 0,
     {.reduce = ck_reduce_bine_rsag}},
};
const size_t ck_reduce_algorithms_n = CK_TABLE_SIZE(ck_reduce_algorithms);
