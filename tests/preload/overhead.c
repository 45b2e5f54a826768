/* ck_preload_overhead: the shim's cost per call, side by side in one run at
 * the same rank count (docs/benchmarks.md). Under libcollkit-preload:
 *   passthrough (no COLLKIT_ALGORITHMS / COLLKIT_RULES): PMPI_Allreduce, what
 *       the program runs without the preload, against MPI_Allreduce through
 *       the shim's pass-through;
 *   forced (COLLKIT_ALGORITHMS=allreduce=recursive_doubling): calling
 *       ck_allreduce_recursive_doubling directly against MPI_Allreduce through
 *       the shim's dispatch to it;
 *   comms: a communicator made (PMPI_Comm_dup of MPI_COMM_WORLD), one
 *       allreduce on it and freed, with PMPI_Allreduce against MPI_Allreduce
 *       through the shim: what the shim costs per new communicator (its
 *       entry, the autotuner's key and class lookup, any duplicate of its
 *       own), issue #50;
 *   alternate: the calls go round four communicators (MPI_COMM_WORLD and
 *       three duplicates), as programs with row, column and world
 *       communicators call them;
 *   cold: 4 MiB of memory is read between calls (untimed; each call timed
 *       alone), so the call finds the caches as a program's computation
 *       leaves them;
 *   classes: each call an allreduce of a count no call before it had (a new
 *       class for the autotuner, each call timed alone): what a program's
 *       first call of each kind costs.
 * Batches of the two alternate (A, B, A, B, ...) so drift hits both alike;
 * the result is the median of per-call times and of the paired differences. */
#define _POSIX_C_SOURCE 200809L
#include <collkit/collkit.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[(int)(q * (n - 1) + 0.5)];
}

/* comms mode: a communicator made, one allreduce on it (through the shim or
 * straight to PMPI), freed. */
static void comm_call(int shim, double *x, double *y)
{
    MPI_Comm c;
    PMPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (shim) MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, c);
    else PMPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, c);
    PMPI_Comm_free(&c);
}

/* cold mode: what a program's computation does to the caches between calls. */
static volatile double sink;
static void evict(const double *junk, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i += 8) s += junk[i];
    sink = s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int forced = argc > 1 && strcmp(argv[1], "forced") == 0;
    const int comms = argc > 1 && strcmp(argv[1], "comms") == 0;
    const int alternate = argc > 1 && strcmp(argv[1], "alternate") == 0;
    const int cold = argc > 1 && strcmp(argv[1], "cold") == 0;
    const int classes = argc > 1 && strcmp(argv[1], "classes") == 0;
    const int batches = argc > 2 ? atoi(argv[2]) : 200, per = argc > 3 ? atoi(argv[3]) : 200;
    if (!dlsym(RTLD_DEFAULT, "collkit_preload_calls") || batches < 1 || per < 1) {
        if (rank == 0) fprintf(stderr, "usage: run under libcollkit-preload: ck_preload_overhead passthrough|forced|comms|alternate|cold|classes [BATCHES] [CALLS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm ring[4] = {MPI_COMM_WORLD, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
    for (int r = 1; r < 4; r++) MPI_Comm_dup(MPI_COMM_WORLD, &ring[r]);
    const size_t njunk = (size_t)4 << 17; /* 4 MiB of doubles */
    double *junk = calloc(njunk, sizeof(double));
    double *a = malloc(sizeof(double) * (size_t)batches), *b = malloc(sizeof(double) * (size_t)batches);
    double *d = malloc(sizeof(double) * (size_t)batches);
    /* classes: counts 2, 3, ... on each side (1 is the warm-up's) */
    const size_t nbig = classes ? (size_t)batches * (size_t)per + 2 : 1;
    double *bx = calloc(nbig, sizeof(double)), *by = calloc(nbig, sizeof(double));
    long next_count[2] = {2, 2};
    if (!a || !b || !d || !junk || !bx || !by) MPI_Abort(MPI_COMM_WORLD, 1);
    double x = rank, y = 0;
    for (int w = 0; w < 2000; w++) { /* warm-up of both paths (and the shim's duplicates) */
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, ring[w % 4]);
        PMPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, ring[w % 4]);
    }
    for (int i = 0; i < batches; i++) {
        for (int shim = 0; shim < 2; shim++) {
            PMPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime(), alone = 0;
            for (int k = 0; k < per; k++) {
                if (forced && !shim) {
                    ck_allreduce_recursive_doubling(&x, &y, 1, MPI_DOUBLE, MPI_SUM, dup);
                } else if (comms) {
                    comm_call(shim, &x, &y);
                } else if (classes) {
                    const int n = (int)next_count[shim]++;
                    double t = MPI_Wtime();
                    if (shim) MPI_Allreduce(bx, by, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                    else PMPI_Allreduce(bx, by, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                    alone += MPI_Wtime() - t;
                } else if (cold) {
                    evict(junk, njunk);
                    double t = MPI_Wtime();
                    if (shim) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                    else PMPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                    alone += MPI_Wtime() - t;
                } else {
                    MPI_Comm c = alternate ? ring[k % 4] : MPI_COMM_WORLD;
                    if (shim) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c);
                    else PMPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c);
                }
            }
            double per_call = (cold || classes ? alone : MPI_Wtime() - t0) / per * 1e6;
            if (shim) b[i] = per_call;
            else a[i] = per_call;
        }
        d[i] = b[i] - a[i];
    }
    if (y != size * (size - 1) / 2.0) {
        fprintf(stderr, "rank %d: wrong allreduce result %g\n", rank, y);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        double d25 = quantile(d, batches, 0.25), d50 = quantile(d, batches, 0.5), d75 = quantile(d, batches, 0.75);
        printf("%s p=%d batches=%d calls/batch=%d: %s %.3f us, shim %.3f us, difference median %.3f us "
               "(IQR %.3f..%.3f)\n", argc > 1 ? argv[1] : "passthrough", size, batches, per,
               forced ? "ck_allreduce_recursive_doubling" : comms ? "dup+PMPI_Allreduce+free" : "PMPI_Allreduce",
               quantile(a, batches, 0.5),
               quantile(b, batches, 0.5), d50, d25, d75);
    }
    free(a);
    free(b);
    free(d);
    free(junk);
    free(bx);
    free(by);
    for (int r = 1; r < 4; r++) MPI_Comm_free(&ring[r]);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
