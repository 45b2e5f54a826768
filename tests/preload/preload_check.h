/* What the preload's C tests share. They run under LD_PRELOAD and are not
 * linked with the shim, so its counters are looked up with dlsym; the
 * fallback reasons and their count are the shim's own enum (ck_preload.h),
 * never a copy; CHECK counts failures and names the rank; alg_index gives the
 * shim's numbering of an algorithm (its index among its collective's
 * registry entries). One translation unit per test: the state is static. */
#ifndef CK_TEST_PRELOAD_CHECK_H
#define CK_TEST_PRELOAD_CHECK_H

#include "ck_preload.h"

#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static long (*calls_fn)(int, int);
static long (*fallbacks_fn)(int, int);
static int rank, size, failures;

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            failures++;                                                                           \
            fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__);                      \
            fprintf(stderr, __VA_ARGS__);                                                         \
            fputc('\n', stderr);                                                                  \
        }                                                                                         \
    } while (0)

static inline int alg_index(ck_collective c, const char *name)
{
    int k = 0;
    for (size_t i = 0; i < ck_algorithm_count(); i++) {
        const ck_algorithm *a = ck_algorithm_at(i);
        if (a->collective != c) continue;
        if (strcmp(a->name, name) == 0) return k;
        k++;
    }
    return -1;
}

/* After MPI_Init: rank, size and the shim's counters; not under the shim,
 * every rank aborts with `code`. */
static inline void preload_check_begin(int code)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    calls_fn = (long (*)(int, int))dlsym(RTLD_DEFAULT, "collkit_preload_calls");
    fallbacks_fn = (long (*)(int, int))dlsym(RTLD_DEFAULT, "collkit_preload_fallbacks");
    if (!calls_fn || !fallbacks_fn) {
        if (rank == 0) fprintf(stderr, "not running under libcollkit-preload (LD_PRELOAD)\n");
        MPI_Abort(MPI_COMM_WORLD, code);
    }
}

#endif
