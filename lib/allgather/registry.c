/* The allgather algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_allgather_algorithms[] = {
};
const size_t ck_allgather_algorithms_n = CK_TABLE_SIZE(ck_allgather_algorithms);
