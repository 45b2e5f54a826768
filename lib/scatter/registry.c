/* The scatter algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_scatter_algorithms[] = {
    {CK_SCATTER, "linear", "root starts a send to every rank and waits for all",
     "MPICH / Open MPI coll/base (basic_linear)", 0, 0, {.scatter = ck_scatter_linear}},
    {CK_SCATTER, "binomial",
     "binomial tree on ranks relative to the root; each rank passes its subtree's blocks down",
     "MPICH (Thakur, Rabenseifner, Gropp 2005)", 0, 0, {.scatter = ck_scatter_binomial}},
    {CK_SCATTER, "bine",
     "distance-doubling Bine tree; each rank passes its subtree's blocks (bit-reversed-nu order) down",
     "De Sensi et al., Bine Trees, SC'25", 0, 0, {.scatter = ck_scatter_bine}},
    {CK_SCATTER, "bine_halving",
     "distance-halving Bine tree (bcast's bine); each rank passes its subtree's circular run of blocks down",
     "De Sensi et al., Bine Trees, SC'25", 0, 0, {.scatter = ck_scatter_bine_halving}},
};
const size_t ck_scatter_algorithms_n = CK_TABLE_SIZE(ck_scatter_algorithms);
