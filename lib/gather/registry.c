/* The gather algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_gather_algorithms[] = {
    {CK_GATHER, "linear", "root posts a receive from every rank and waits for all",
     "MPICH / Open MPI coll/base (basic_linear)", 0, 0, {.gather = ck_gather_linear}},
    {CK_GATHER, "binomial",
     "binomial tree on ranks relative to the root; subtrees forward their blocks in one message",
     "MPICH (Thakur, Rabenseifner, Gropp 2005)", 0, 0, {.gather = ck_gather_binomial}},
    {CK_GATHER, "bine",
     "distance-doubling Bine tree backwards; subtrees send their blocks in bit-reversed-nu order",
     "De Sensi et al., Bine Trees, SC'25", 0, 0, {.gather = ck_gather_bine}},
    {CK_GATHER, "bine_halving",
     "distance-halving Bine tree backwards (bcast's bine); subtrees are circular runs of ranks, forwarded in one message",
     "De Sensi et al., Bine Trees, SC'25", 0, 0, {.gather = ck_gather_bine_halving}},
};
const size_t ck_gather_algorithms_n = CK_TABLE_SIZE(ck_gather_algorithms);
