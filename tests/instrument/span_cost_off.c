/* The plain-build loop of ck_span_cost (span_cost.c): the same source shape,
 * compiled without CK_INSTRUMENT, so the CK_SPAN_* lines expand to nothing. */
#define _POSIX_C_SOURCE 199309L
#include <collkit/spans.h>

#include <time.h>

#ifdef CK_INSTRUMENT
#error "span_cost_off.c must be compiled without CK_INSTRUMENT"
#endif

#define BARRIER() __asm__ __volatile__("" ::: "memory")

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double tag_cost_plain_loop(long n);

double tag_cost_plain_loop(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        BARRIER();
        CK_SPAN_BEGIN("comm");
        CK_SPAN_END("comm");
    }
    return now_ns() - t0;
}
