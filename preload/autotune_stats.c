/* The statistics the autotuner decides with (autotune.c): medians, their
 * distribution-free intervals, and a one-sided Mann-Whitney test. Every rank
 * runs them on the same agreed numbers, in the same order, so every rank
 * reaches the same verdict. */
#include "ck_preload.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void ckp_sort(double *v, size_t n) { qsort(v, n, sizeof *v, cmp_double); }

double ckp_median_sorted(const double *v, size_t n)
{
    if (n == 0) return 0.0;
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The 95 % interval of the median from order statistics (the binomial's
 * normal approximation: ranks n/2 -+ 0.98 sqrt(n)), clipped to the sample. */
void ckp_median_interval_sorted(const double *v, size_t n, double *lo, double *hi)
{
    if (n == 0) {
        *lo = *hi = 0.0;
        return;
    }
    double half = 0.98 * sqrt((double)n);
    long a = (long)floor((double)n / 2.0 - half), b = (long)ceil((double)n / 2.0 + half);
    if (a < 0) a = 0;
    if (b > (long)n - 1) b = (long)n - 1;
    *lo = v[a];
    *hi = v[b];
}

/* One-sided Mann-Whitney: the p-value of "b tends to be larger than a"
 * (normal approximation with the tie correction and a continuity
 * correction; the autotuner uses it from 4 samples a side, where it is
 * conservative enough for the small levels a Bonferroni split asks for).
 * scratch holds na + nb pairs. */
double ckp_mann_whitney_greater(const double *a, size_t na, const double *b, size_t nb, double *scratch)
{
    const size_t n = na + nb;
    if (na == 0 || nb == 0) return 1.0;
    /* Pairs (value, from b) sorted by value: the value in scratch[2i], the side in scratch[2i+1]. */
    typedef struct {
        double v;
        double side;
    } pair;
    pair *p = (pair *)scratch;
    for (size_t i = 0; i < na; i++) p[i] = (pair){a[i], 0.0};
    for (size_t i = 0; i < nb; i++) p[na + i] = (pair){b[i], 1.0};
    qsort(p, n, sizeof *p, cmp_double); /* compares the first double: the value */
    double rank_b = 0.0, ties = 0.0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && p[j + 1].v == p[i].v) j++;
        double t = (double)(j - i + 1), mid = 0.5 * (double)(i + j) + 1.0;
        for (size_t k = i; k <= j; k++)
            if (p[k].side != 0.0) rank_b += mid;
        ties += t * t * t - t;
        i = j + 1;
    }
    const double u = rank_b - (double)nb * ((double)nb + 1.0) / 2.0;
    const double mean = (double)na * (double)nb / 2.0;
    const double var = (double)na * (double)nb / 12.0 * (((double)n + 1.0) - ties / ((double)n * ((double)n - 1.0)));
    if (!(var > 0.0)) return 1.0; /* every value equal */
    const double z = (u - mean - 0.5) / sqrt(var);
    return 0.5 * erfc(z / sqrt(2.0));
}
