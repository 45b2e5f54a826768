/* Unit tests of lib/core/fattree.c: the radices of COLLKIT_FATTREE, the
 * permuted-variable-base exchange (a permutation per phase, every pair once,
 * dest and source inverse), and the paper's claim asserted exactly: at most
 * B_min(l) messages leave any level-l subtree in any phase, and some phase
 * reaches it. */
/* setenv/unsetenv are POSIX, outside C11. */
#define _POSIX_C_SOURCE 200809L
#include "ck_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_check.h"

static void test_parse(void)
{
    int m[CK_FATTREE_MAX_LEVELS + 1], n;
    CHECK(ck_fattree_parse("8,4,2", m, &n) == MPI_SUCCESS && n == 3 && m[0] == 8 && m[1] == 4 &&
          m[2] == 2);
    CHECK(ck_fattree_parse("16", m, &n) == MPI_SUCCESS && n == 1 && m[0] == 16);
    const char *bad[] = {"", ",", "8,", ",8", "8,,2", "0,4", "-2", "+2", " 2", "2 ", "a", "8;4",
                         "99999999999", "65536,65536", "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int ok = ck_fattree_parse(bad[i], m, &n) == MPI_ERR_ARG && n == 0;
        if (!ok) fprintf(stderr, "accepted %s\n", bad[i]);
        CHECK(ok);
    }
    CHECK(ck_fattree_parse(NULL, m, &n) == MPI_ERR_ARG);
}

static void test_fit_and_env(void)
{
    int m[CK_FATTREE_MAX_LEVELS + 1], n;
    const int given[] = {8, 4, 2};
    CHECK(ck_fattree_fit(64, given, 3, m, &n) == MPI_SUCCESS && n == 3 && m[0] == 8);
    /* Four ranks per node: the extra leaf level. */
    CHECK(ck_fattree_fit(256, given, 3, m, &n) == MPI_SUCCESS && n == 4 && m[0] == 4 &&
          m[1] == 8 && m[3] == 2);
    CHECK(ck_fattree_fit(32, given, 3, m, &n) == MPI_ERR_ARG);  /* a partial tree */
    CHECK(ck_fattree_fit(96, given, 3, m, &n) == MPI_ERR_ARG);  /* not a multiple */

    CHECK(unsetenv(CK_FATTREE_ENV) == 0);
    CHECK(ck_fattree_radices(24, m, &n) == MPI_SUCCESS && n == 1 && m[0] == 24);
    CHECK(setenv(CK_FATTREE_ENV, "3,2", 1) == 0);
    CHECK(ck_fattree_radices(12, m, &n) == MPI_SUCCESS && n == 3 && m[0] == 2 && m[1] == 3);
    CHECK(ck_fattree_radices(9, m, &n) == MPI_ERR_ARG);
    CHECK(setenv(CK_FATTREE_ENV, "3,x", 1) == 0);
    CHECK(ck_fattree_radices(6, m, &n) == MPI_ERR_ARG);
    CHECK(setenv(CK_FATTREE_ENV, "", 1) == 0);
    CHECK(ck_fattree_radices(5, m, &n) == MPI_SUCCESS && n == 1 && m[0] == 5);
    CHECK(unsetenv(CK_FATTREE_ENV) == 0);
}

static void test_bmin(void)
{
    const int m[] = {8, 4, 2};
    CHECK(ck_fattree_bmin(m, 3, 0) == 1);
    CHECK(ck_fattree_bmin(m, 3, 1) == 7);
    CHECK(ck_fattree_bmin(m, 3, 2) == 16);
    CHECK(ck_fattree_bmin(m, 3, 3) == 0);
}

/* Every phase a permutation, every (s, d) pair in exactly one phase, source
 * the inverse of dest; and the largest number of messages leaving a level-l
 * subtree over all phases and subtrees is exactly B_min(l) for 1 <= l < L. */
static void check_tree(const int *m, int levels)
{
    int n = 1;
    for (int l = 0; l < levels; l++) n *= m[l];
    char *seen = calloc((size_t)n * (size_t)n, 1), *hit = malloc((size_t)n);
    long long *out = malloc((size_t)n * sizeof *out);
    if (seen == NULL || hit == NULL || out == NULL) {
        CHECK(0);
        goto done;
    }
    int ok = 1;
    long long worst[CK_FATTREE_MAX_LEVELS + 1] = {0};
    for (int q = 0; q < n && ok; q++) {
        memset(hit, 0, (size_t)n);
        for (int s = 0; s < n; s++) {
            int d = ck_fattree_opt_dest(s, q, m, levels);
            ok &= d >= 0 && d < n && !hit[d] && !seen[(size_t)s * n + d] &&
                  ck_fattree_opt_source(d, q, m, levels) == s;
            if (!ok) break;
            hit[d] = seen[(size_t)s * n + d] = 1;
        }
        for (int l = 1, size = m[0]; l < levels; size *= m[l], l++) {
            memset(out, 0, (size_t)n * sizeof *out);
            for (int s = 0; s < n; s++)
                if (s / size != ck_fattree_opt_dest(s, q, m, levels) / size) out[s / size]++;
            for (int t = 0; t < n / size; t++)
                if (out[t] > worst[l]) worst[l] = out[t];
        }
    }
    CHECK(ok);
    for (int l = 1; l < levels; l++) {
        int exact = worst[l] == ck_fattree_bmin(m, levels, l);
        if (!exact)
            fprintf(stderr, "tree of %d leaves, level %d: %lld leave, bound %lld\n", n, l,
                    worst[l], ck_fattree_bmin(m, levels, l));
        CHECK(exact);
    }
done:
    free(seen);
    free(hit);
    free(out);
}

static void test_exchange(void)
{
    /* The half-bisection XGFTs of 16..1,024 nodes (docs/experiments/
     * alltoall-fattree.md), a three-level tree, uneven radices and ranks per
     * node as a level. */
    static const int trees[][4] = {{4, 4}, {8, 4}, {8, 8}, {16, 8}, {16, 16}, {32, 16},
                                   {32, 32}, {8, 4, 2}, {3, 5, 2}, {2, 3, 4}, {4, 4, 4},
                                   {2, 8, 4, 2}, {7}};
    static const int nlev[] = {2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 1};
    for (size_t i = 0; i < sizeof nlev / sizeof *nlev; i++) check_tree(trees[i], nlev[i]);
}

int main(void)
{
    test_parse();
    test_fit_and_env();
    test_bmin();
    test_exchange();
    printf("fattree_unit: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
