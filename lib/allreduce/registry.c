/* The allreduce algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_allreduce_algorithms[] = {
};
const size_t ck_allreduce_algorithms_n = CK_TABLE_SIZE(ck_allreduce_algorithms);
