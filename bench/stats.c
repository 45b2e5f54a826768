/* Summary statistics and bandwidth figures. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *sorted, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    if (lo + 1 >= n) return sorted[n - 1];
    double frac = pos - (double)lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

int stats_compute(const double *v, size_t n, bench_stats *s)
{
    memset(s, 0, sizeof *s);
    if (n == 0) return 0;
    double *sorted = malloc(n * sizeof *sorted);
    if (sorted == NULL) return -1;
    memcpy(sorted, v, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += sorted[i];
    s->mean = sum / (double)n;
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (sorted[i] - s->mean) * (sorted[i] - s->mean);
    s->stdev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    s->min = sorted[0];
    s->max = sorted[n - 1];
    s->median = quantile(sorted, n, 0.5);
    s->p5 = quantile(sorted, n, 0.05);
    s->p95 = quantile(sorted, n, 0.95);
    free(sorted);
    return 0;
}

double stats_median(const double *v, size_t n, double *scratch)
{
    if (n == 0) return 0.0;
    memcpy(scratch, v, n * sizeof *scratch);
    qsort(scratch, n, sizeof *scratch, cmp_double);
    return n % 2 ? scratch[n / 2] : 0.5 * (scratch[n / 2 - 1] + scratch[n / 2]);
}

int stats_median_ci(const double *v, size_t n, double *lo, double *hi)
{
    *lo = *hi = 0.0;
    if (n == 0) return 0;
    /* P(B <= k) summed in log space: n may be in the hundreds of thousands. */
    const double tail = 0.025 + 1e-12, log_half_n = (double)n * log(0.5);
    double cdf = 0.0;
    size_t k = 0;
    int found = 0;
    for (size_t i = 0; i <= n / 2; i++) {
        cdf += exp(lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) + log_half_n);
        if (cdf > tail) break;
        k = i;
        found = 1;
    }
    if (!found) return 0;
    double *sorted = malloc(n * sizeof *sorted);
    if (sorted == NULL) return -1;
    memcpy(sorted, v, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    *lo = sorted[k];
    *hi = sorted[n - 1 - k];
    free(sorted);
    return 1;
}

void stats_bandwidth(ck_collective coll, double bytes, int p, double median_us, double *algbw,
                     double *busbw)
{
    *algbw = *busbw = 0.0;
    const ck_collective_desc *d = ck_collective_describe(coll);
    if (median_us <= 0.0 || d == NULL) return;
    *algbw = ck_collective_vector_bytes(d, bytes, p) / (median_us * 1e-6) / 1e9;
    *busbw = *algbw * ck_collective_busbw_factor(d, p);
}
