/* The alltoall algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_alltoall_algorithms[] = {
};
const size_t ck_alltoall_algorithms_n = CK_TABLE_SIZE(ck_alltoall_algorithms);
