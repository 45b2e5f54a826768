/* The scatter algorithms of libcollkit. */
#include "../core/registry_internal.h"

const ck_algorithm ck_scatter_algorithms[] = {
};
const size_t ck_scatter_algorithms_n = CK_TABLE_SIZE(ck_scatter_algorithms);
