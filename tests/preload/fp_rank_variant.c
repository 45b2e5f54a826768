/* Run under libcollkit-preload (LD_PRELOAD): a CK_TRAIT_FP_RANK_VARIANT
 * algorithm (allreduce/bine_latency, whose ranks may return floating-point
 * sums that differ in the last bits) runs on floating-point reductions only
 * with the user's permission (docs/preload.md). The program sets the shim's
 * configuration itself, before MPI_Init, from its one argument:
 *   rules    a rules file choosing bine_latency everywhere, no permission:
 *            integer sums run it, float / double / long double / complex
 *            sums go to the library with reason fp-rank-variant;
 *   allowed  the same rules with `allow_fp_rank_variant = true`: all run it;
 *   forced   COLLKIT_ALGORITHMS=allreduce=bine_latency (naming it is the
 *            permission): all run it.
 * Every result is checked (exact inputs). Prints "preload fp: ok" on rank 0. */
#define _POSIX_C_SOURCE 200809L
#include "preload_check.h"

#include <collkit/collkit.h>
#include <complex.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A rules file of this process (the ranks write their own copies). */
static int write_rules(int allow, char *path, size_t len)
{
    snprintf(path, len, "/tmp/ck_fp_rules_%ld.txt", (long)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "# issue #32\n%sallreduce * * bine_latency\n",
            allow ? "allow_fp_rank_variant = true\n" : "");
    return fclose(f);
}

/* One allreduce of n elements of dt, sums of small integers (exact in every
 * type): element i is rank + i on every rank, the sum p(p-1)/2 + p i. Returns
 * whether bine_latency ran it (the shim's counter). */
static int sum_ran_bine(MPI_Datatype dt, const char *name, int k)
{
    enum { N = 9 };
    long before = calls_fn(CK_ALLREDUCE, k);
    double want[N];
    for (int i = 0; i < N; i++) want[i] = size * (size - 1) / 2.0 + (double)size * i;
    int ok = 1;
    if (dt == MPI_INT) {
        int in[N], out[N];
        for (int i = 0; i < N; i++) in[i] = rank + i;
        MPI_Allreduce(in, out, N, dt, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++) ok &= out[i] == (int)want[i];
    } else if (dt == MPI_FLOAT) {
        float in[N], out[N];
        for (int i = 0; i < N; i++) in[i] = (float)(rank + i);
        MPI_Allreduce(in, out, N, dt, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++) ok &= out[i] == (float)want[i];
    } else if (dt == MPI_DOUBLE) {
        double in[N], out[N];
        for (int i = 0; i < N; i++) in[i] = rank + i;
        MPI_Allreduce(in, out, N, dt, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++) ok &= out[i] == want[i];
    } else if (dt == MPI_LONG_DOUBLE) {
        long double in[N], out[N];
        for (int i = 0; i < N; i++) in[i] = rank + i;
        MPI_Allreduce(in, out, N, dt, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++) ok &= out[i] == (long double)want[i];
    } else {
        double complex in[N], out[N];
        for (int i = 0; i < N; i++) in[i] = (rank + i) + 2.0 * (rank + i) * I;
        MPI_Allreduce(in, out, N, dt, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++) ok &= out[i] == want[i] + 2.0 * want[i] * I;
    }
    CHECK(ok, "%s sum: wrong result", name);
    return calls_fn(CK_ALLREDUCE, k) == before + 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    char path[256] = "";
    int allow = strcmp(mode, "allowed") == 0, forced = strcmp(mode, "forced") == 0;
    if (!allow && !forced && strcmp(mode, "rules") != 0) {
        fprintf(stderr, "usage: ck_preload_fp_rank_variant rules|allowed|forced\n");
        return 2;
    }
    if (forced) {
        setenv("COLLKIT_ALGORITHMS", "allreduce=bine_latency", 1);
    } else if (write_rules(allow, path, sizeof path) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        return 2;
    } else {
        setenv("COLLKIT_RULES", path, 1);
    }
    MPI_Init(&argc, &argv);
    preload_check_begin(2);
    const int k = alg_index(CK_ALLREDUCE, "bine_latency");
    CHECK(k >= 0, "no allreduce/bine_latency in the registry");
    if (k >= 0) {
        CHECK(ck_algorithm_find(CK_ALLREDUCE, "bine_latency")->constraints & CK_TRAIT_FP_RANK_VARIANT,
              "bine_latency lost CK_TRAIT_FP_RANK_VARIANT: the test says nothing");
        /* Integers: exact in any order, never held back. */
        CHECK(sum_ran_bine(MPI_INT, "int", k), "int sum did not run bine_latency");
        const struct {
            MPI_Datatype dt;
            const char *name;
        } fp[] = {{MPI_FLOAT, "float"},
                  {MPI_DOUBLE, "double"},
                  {MPI_LONG_DOUBLE, "long double"},
                  {MPI_C_DOUBLE_COMPLEX, "double complex"}};
        for (size_t i = 0; i < sizeof fp / sizeof fp[0]; i++) {
            long fb = fallbacks_fn(CK_ALLREDUCE, CKP_FB_FP_RANK_VARIANT);
            int ran = sum_ran_bine(fp[i].dt, fp[i].name, k);
            long counted = fallbacks_fn(CK_ALLREDUCE, CKP_FB_FP_RANK_VARIANT) - fb;
            if (allow || forced)
                CHECK(ran && counted == 0, "%s sum (%s): ran bine_latency %d, fallbacks %ld; want 1, 0",
                      fp[i].name, mode, ran, counted);
            else
                CHECK(!ran && counted == 1, "%s sum (%s): ran bine_latency %d, fallbacks %ld; want 0, 1",
                      fp[i].name, mode, ran, counted);
        }
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf("preload fp: ok (%s)\n", mode);
    MPI_Finalize();
    if (path[0]) unlink(path);
    return total ? 1 : 0;
}
