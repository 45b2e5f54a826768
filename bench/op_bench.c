/*
 * collkit-op-bench: the local reduction libcollkit's algorithms run between
 * messages (ck_reduce_local, lib/core/buffer.c) against the library's
 * MPI_Reduce_local, beside the machine's memory bandwidth (memcpy), on one
 * process. Issue #33 asks that libcollkit never be slower than the library's
 * own kernel by more than 5 %.
 *
 *   collkit-op-bench [--bytes N[,N...]] [--rounds R] [--min-ms T]
 *
 * For every datatype of the collkit table, op (sum, prod, max, min) and size:
 * R rounds; in each round both sides are timed over a block of calls lasting at
 * least T ms (the block size found once per case), the side that goes first
 * alternating A B B A. One JSON line per case, the per-round times in ns per
 * call of both sides and of a memcpy of the same bytes:
 *   {"dtype": "int32", "op": "sum", "bytes": 262144,
 *    "collkit_ns": [...], "library_ns": [...], "memcpy_ns": [...]}
 * scripts/bench_op.py turns them into the table of docs/benchmarks.md.
 * Exit status 2 with one line for a bad argument.
 */
#include "ck_core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_SIZES = 16, MAX_ROUNDS = 64 };

static const char usage[] = "usage: collkit-op-bench [--bytes N[,N...]] [--rounds R] [--min-ms T]";

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef enum { SIDE_COLLKIT, SIDE_LIBRARY, SIDE_MEMCPY } side;

typedef struct {
    const void *in;
    void *inout;
    size_t count, bytes;
    MPI_Datatype dt;
    MPI_Op op;
} kase;

/* Seconds for `reps` calls of one side; -1 on an MPI error. */
static double block(const kase *k, side s, long reps)
{
    int rc = MPI_SUCCESS;
    double t0 = now_s();
    for (long i = 0; i < reps && rc == MPI_SUCCESS; i++) {
        switch (s) {
        case SIDE_COLLKIT: rc = ck_reduce_local(k->in, k->inout, k->count, k->dt, k->op); break;
        case SIDE_LIBRARY: rc = MPI_Reduce_local(k->in, k->inout, (int)k->count, k->dt, k->op); break;
        case SIDE_MEMCPY: memcpy(k->inout, k->in, k->bytes); break;
        }
    }
    double t = now_s() - t0;
    return rc == MPI_SUCCESS ? t : -1.0;
}

/* Ones everywhere: sums grow slowly, products stay 1, nothing overflows
 * into a slow path (denormals, NaN) in any type. */
static void fill_ones(void *buf, size_t count, const ck_datatype_desc *d)
{
    for (size_t e = 0; e < count; e++) {
        if (d->is_float && d->size == sizeof(float)) ((float *)buf)[e] = 1.0f;
        else if (d->is_float) ((double *)buf)[e] = 1.0;
        else if (d->size == 1) ((int8_t *)buf)[e] = 1;
        else if (d->size == 4) ((int32_t *)buf)[e] = 1;
        else ((int64_t *)buf)[e] = 1;
    }
}

/* Digits only, at least min, at most max. */
static int parse_ull(const char *v, unsigned long long min, unsigned long long max, unsigned long long *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 || x < min || x > max) return -1;
    *out = x;
    return 0;
}

static int parse_sizes(char *list, size_t *sizes, int *n)
{
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned long long v;
        if (*n == MAX_SIZES || parse_ull(tok, 1, (unsigned long long)1 << 32, &v) != 0) return -1;
        sizes[(*n)++] = (size_t)v;
    }
    return *n > 0 ? 0 : -1;
}

static void print_series(const char *name, const double *ns, int rounds, int last)
{
    printf("\"%s\": [", name);
    for (int r = 0; r < rounds; r++) printf("%s%.3f", r ? ", " : "", ns[r]);
    printf("]%s", last ? "}\n" : ", ");
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES] = {4096, 262144, 16777216};
    int nsizes = 3;
    unsigned long long rounds = 8, min_ms = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = v == NULL;
        if (!bad && strcmp(a, "--bytes") == 0) {
            char copy[512];
            snprintf(copy, sizeof copy, "%s", v);
            bad = strlen(v) >= sizeof copy || parse_sizes(copy, sizes, &nsizes) != 0;
        } else if (!bad && strcmp(a, "--rounds") == 0) {
            bad = parse_ull(v, 2, MAX_ROUNDS, &rounds) != 0;
        } else if (!bad && strcmp(a, "--min-ms") == 0) {
            bad = parse_ull(v, 1, 10000, &min_ms) != 0;
        } else {
            fprintf(stderr, "collkit-op-bench: unknown argument '%s'; %s\n", a, usage);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "collkit-op-bench: bad value for %s (sizes 1..2^32 bytes, at most %d; rounds 2..%d; "
                            "min-ms 1..10000); %s\n", a, MAX_SIZES, MAX_ROUNDS, usage);
            return 2;
        }
        i++;
    }
    MPI_Init(&argc, &argv);
    size_t biggest = 0;
    for (int s = 0; s < nsizes; s++)
        if (sizes[s] > biggest) biggest = sizes[s];
    /* 64-byte aligned so that neither side gets a luckier alignment. */
    void *in = NULL, *inout = NULL;
    if (posix_memalign(&in, 64, biggest) != 0 || posix_memalign(&inout, 64, biggest) != 0) {
        fprintf(stderr, "collkit-op-bench: cannot allocate 2 x %zu bytes\n", biggest);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double t_ck[MAX_ROUNDS], t_lib[MAX_ROUNDS], t_mem[MAX_ROUNDS];
    int status = 0;
    for (size_t d = 0; d < ck_datatype_count(); d++) {
        const ck_datatype_desc *dd = ck_datatype_at(d);
        for (size_t o = 0; o < ck_op_count(); o++) {
            const ck_op_desc *od = ck_op_at(o);
            if (!od->arithmetic) continue;   /* the ops a spec measures (lib/core/ops.c) */
            for (int s = 0; s < nsizes; s++) {
                kase k = {in, inout, sizes[s] / dd->size, sizes[s] / dd->size * dd->size,
                          ck_datatype_mpi(dd), ck_op_mpi(od)};
                if (k.count == 0) continue;
                fill_ones(in, k.count, dd);
                fill_ones(inout, k.count, dd);
                /* Block size: double until one block of the library's calls
                 * lasts min_ms (also warms caches and pages). */
                long reps = 1;
                for (;;) {
                    double t = block(&k, SIDE_LIBRARY, reps);
                    if (t < 0) {
                        fprintf(stderr, "collkit-op-bench: MPI_Reduce_local failed for %s %s\n", dd->name, od->name);
                        status = 1;
                        goto next;
                    }
                    if (t * 1e3 >= (double)min_ms || reps > (1L << 40)) break;
                    reps *= 2;
                }
                (void)block(&k, SIDE_COLLKIT, reps);
                for (int r = 0; r < (int)rounds; r++) {
                    int lib_first = r % 4 == 0 || r % 4 == 3;
                    double a = block(&k, lib_first ? SIDE_LIBRARY : SIDE_COLLKIT, reps);
                    double b = block(&k, lib_first ? SIDE_COLLKIT : SIDE_LIBRARY, reps);
                    if (a < 0 || b < 0) {
                        fprintf(stderr, "collkit-op-bench: a reduction failed for %s %s\n", dd->name, od->name);
                        status = 1;
                        goto next;
                    }
                    t_lib[r] = (lib_first ? a : b) / (double)reps * 1e9;
                    t_ck[r] = (lib_first ? b : a) / (double)reps * 1e9;
                    t_mem[r] = block(&k, SIDE_MEMCPY, reps) / (double)reps * 1e9;
                }
                printf("{\"dtype\": \"%s\", \"op\": \"%s\", \"bytes\": %zu, \"calls_per_block\": %ld, ", dd->name,
                       od->name, k.bytes, reps);
                print_series("collkit_ns", t_ck, (int)rounds, 0);
                print_series("library_ns", t_lib, (int)rounds, 0);
                print_series("memcpy_ns", t_mem, (int)rounds, 1);
                fflush(stdout);
            next:;
            }
        }
    }
    free(in);
    free(inout);
    MPI_Finalize();
    return status;
}
