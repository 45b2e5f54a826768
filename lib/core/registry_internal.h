/* Each collective keeps its table of algorithms in lib/<collective>/registry.c;
 * lib/core/registry.c stitches them into the one registry of the C API. */
#ifndef COLLKIT_REGISTRY_INTERNAL_H
#define COLLKIT_REGISTRY_INTERNAL_H

#include "collkit/collkit.h"

extern const ck_algorithm ck_bcast_algorithms[];
extern const size_t ck_bcast_algorithms_n;
extern const ck_algorithm ck_reduce_algorithms[];
extern const size_t ck_reduce_algorithms_n;
extern const ck_algorithm ck_gather_algorithms[];
extern const size_t ck_gather_algorithms_n;
extern const ck_algorithm ck_scatter_algorithms[];
extern const size_t ck_scatter_algorithms_n;
extern const ck_algorithm ck_allgather_algorithms[];
extern const size_t ck_allgather_algorithms_n;
extern const ck_algorithm ck_reduce_scatter_algorithms[];
extern const size_t ck_reduce_scatter_algorithms_n;
extern const ck_algorithm ck_allreduce_algorithms[];
extern const size_t ck_allreduce_algorithms_n;
extern const ck_algorithm ck_alltoall_algorithms[];
extern const size_t ck_alltoall_algorithms_n;

#define CK_TABLE_SIZE(t) (sizeof(t) / sizeof((t)[0]))

#endif
