/* The bcast algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_bcast_algorithms[] = {
    {CK_BCAST, "linear", "root sends the whole buffer to each rank in turn",
     "MPICH / Open MPI coll/base (basic_linear)", 0, 0, {.bcast = ck_bcast_linear}},
};
const size_t ck_bcast_algorithms_n = CK_TABLE_SIZE(ck_bcast_algorithms);
