/* The reduce algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_reduce_algorithms[] = {
};
const size_t ck_reduce_algorithms_n = CK_TABLE_SIZE(ck_reduce_algorithms);
