/* The gather algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_gather_algorithms[] = {
};
const size_t ck_gather_algorithms_n = CK_TABLE_SIZE(ck_gather_algorithms);
