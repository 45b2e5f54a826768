/* Summary statistics of a point's kept iteration times, and the bandwidth
 * figures of docs/bench-protocol.md (nccl-tests definitions). */
#ifndef CK_BENCH_STATS_H
#define CK_BENCH_STATS_H

#include <collkit/collkit.h>

#include <stddef.h>

typedef struct {
    double min, median, mean, p5, p95, stdev, max;
} bench_stats;

/* Over n values (any order; not modified). All zero when n == 0.
 * Percentiles interpolate linearly between order statistics (position
 * q (n-1), numpy's default); stdev is the sample standard deviation (n-1),
 * 0 for n < 2. Returns 0, or -1 when out of memory. */
int stats_compute(const double *v, size_t n, bench_stats *s);

/* Median of n values (0 when n == 0), sorted in `scratch` (n doubles, the
 * caller's, so that a loop over windows allocates nothing); v unchanged. */
double stats_median(const double *v, size_t n, double *scratch);

/* The distribution-free 95 % interval of the median of n values (any order;
 * not modified): the order statistics k and n-1-k (0-based) for the largest k
 * with P(B <= k) <= 2.5 %, B ~ Binomial(n, 1/2), the rule of
 * python/collkit/analysis/stats.py (median_ci_ranks), which reads it back from
 * records without times (granularity = "none"). Returns 1 with *lo, *hi; 0
 * when n is too small (below 6) for such an interval; -1 when out of memory. */
int stats_median_ci(const double *v, size_t n, double *lo, double *hi);

/* algbw and busbw in GB/s (1e9 B/s) for a median time in microseconds.
 * Both 0 when no time was kept (median 0). busbw is algbw times the
 * collective's factor, which at p = 1 is 0 except for bcast and reduce (1). */
void stats_bandwidth(ck_collective coll, double bytes, int p, double median_us, double *algbw,
                     double *busbw);

#endif
