/*
 * collkit-bench's median interval (bench/stats.c, written into records of
 * granularity = "none") against the rule that python/collkit/analysis/stats.py
 * applies to times (median_ci_ranks): the same order statistics. The expected
 * ranks are that function's answers for these n; values 0..n-1 in reverse
 * order make a rank its own value.
 */
#include "stats.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    static const struct {
        size_t n;
        int found;
        size_t lo, hi;
    } cases[] = {{1, 0, 0, 0},  {5, 0, 0, 0},      {6, 1, 0, 5},       {7, 1, 0, 6},
                 {10, 1, 1, 8}, {20, 1, 5, 14},    {100, 1, 39, 60},   {1000, 1, 468, 531},
                 {65536, 1, 32516, 33019}};
    int bad = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t n = cases[c].n;
        double *v = malloc(n * sizeof *v);
        if (v == NULL) return 2;
        for (size_t i = 0; i < n; i++) v[i] = (double)(n - 1 - i);
        double lo = -1, hi = -1;
        int got = stats_median_ci(v, n, &lo, &hi);
        if (got != cases[c].found || (got && (lo != (double)cases[c].lo || hi != (double)cases[c].hi))) {
            fprintf(stderr, "n=%zu: got %d (%g, %g), expected %d (%zu, %zu)\n", n, got, lo, hi, cases[c].found,
                    cases[c].lo, cases[c].hi);
            bad = 1;
        }
        free(v);
    }
    return bad;
}
