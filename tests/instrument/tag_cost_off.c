/* The plain-build loop of ck_tag_cost (tag_cost.c): the same source shape,
 * compiled without CK_INSTRUMENT, so the CK_TAG_* lines expand to nothing. */
#define _POSIX_C_SOURCE 199309L
#include <collkit/tags.h>

#include <time.h>

#ifdef CK_INSTRUMENT
#error "tag_cost_off.c must be compiled without CK_INSTRUMENT"
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
        CK_TAG_BEGIN("comm");
        CK_TAG_END("comm");
    }
    return now_ns() - t0;
}
