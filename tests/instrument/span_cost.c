/*
 * ck_span_cost: what one tag pair (BEGIN + END) costs, for docs/benchmarks.md
 * ("Instrumentation cost"; scripts/bench_spans.sh runs it). Three loops of
 * the same shape, each iteration a compiler barrier plus one pair:
 *   enabled   CK_INSTRUMENT, recording on (the buffer holds every record)
 *   disabled  CK_INSTRUMENT, recording off (the inline flag test)
 *   plain     compiled without CK_INSTRUMENT (span_cost_off.c): the macros
 *             are gone, so this is the bare loop
 * and, to tell the recorder's own work from the clock's, the cost of one
 * ck_spans_now_ns (the recorder's clock, see lib/core/spans.c): an enabled pair reads the
 * clock twice. Each is run REPS times over N iterations; the median per
 * iteration is printed in ns.
 *
 *   ck_span_cost [N [REPS]]      defaults 1000000 and 21
 */
#include <collkit/spans.h>

#include <stdio.h>
#include <stdlib.h>

double tag_cost_plain_loop(long n); /* span_cost_off.c */

#define BARRIER() __asm__ __volatile__("" ::: "memory")

static double enabled_loop(long n)
{
    int64_t t0 = ck_spans_now_ns();
    for (long i = 0; i < n; i++) {
        BARRIER();
        CK_SPAN_BEGIN("comm");
        CK_SPAN_END("comm");
    }
    return (double)(ck_spans_now_ns() - t0);
}

static double clock_loop(long n)
{
    int64_t t0 = ck_spans_now_ns(), sink = 0;
    for (long i = 0; i < n; i++) {
        BARRIER();
        sink += ck_spans_now_ns();
    }
    int64_t t1 = ck_spans_now_ns();
    return (double)(t1 - t0) + (sink == 42 ? 1.0 : 0.0);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int reps = argc > 2 ? atoi(argv[2]) : 21;
    if (n < 1 || reps < 1 || reps > 1000) {
        fprintf(stderr, "usage: ck_span_cost [N [REPS]]\n");
        return 2;
    }
    double *en = calloc((size_t)reps, sizeof *en), *dis = calloc((size_t)reps, sizeof *dis);
    double *pl = calloc((size_t)reps, sizeof *pl), *clk = calloc((size_t)reps, sizeof *clk);
    if (!en || !dis || !pl || !clk || ck_spans_init((size_t)n) != 0) {
        fprintf(stderr, "ck_span_cost: out of memory\n");
        return 1;
    }
    uint64_t bad = 0;
    for (int r = 0; r < reps; r++) {
        ck_spans_reset();
        ck_spans_enable(1);
        en[r] = enabled_loop(n) / (double)n;
        ck_spans_enable(0);
        /* Every pair was recorded: the loop measured real recording. */
        if (ck_spans_count() != (size_t)n || ck_spans_dropped() || ck_spans_unbalanced()) bad++;
        dis[r] = enabled_loop(n) / (double)n; /* same code, recording off */
        if (ck_spans_count() != (size_t)n) bad++;
        pl[r] = tag_cost_plain_loop(n) / (double)n;
        clk[r] = clock_loop(n) / (double)n;
    }
    if (bad) {
        fprintf(stderr, "ck_span_cost: records missing or extra in %llu runs\n", (unsigned long long)bad);
        return 1;
    }
    printf("pairs per run %ld, runs %d (median ns per iteration)\n", n, reps);
    printf("enabled   %.2f ns\n", median(en, reps));
    printf("disabled  %.2f ns\n", median(dis, reps));
    printf("plain     %.2f ns\n", median(pl, reps));
    printf("clock     %.2f ns (one read of the recorder's clock)\n", median(clk, reps));
    ck_spans_finalize();
    free(en);
    free(dis);
    free(pl);
    free(clk);
    return 0;
}
