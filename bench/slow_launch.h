/* Test-only: whole launches made slower, at random or for one algorithm
 * (COLLKIT_BENCH_TEST_SLOW_LAUNCH, docs/bench-protocol.md, "Launches"). */
#ifndef COLLKIT_BENCH_SLOW_LAUNCH_H
#define COLLKIT_BENCH_SLOW_LAUNCH_H

#include "points.h"

/* Reads the variable once, at the start of a launch; the --points file tells
 * launches apart in the draw. Malformed or unset: inactive. */
void slow_launch_begin(const char *points);

/* Seconds added to each timed call of `pt` in this launch (0: none). */
double slow_launch_delay(const bench_point *pt);

#endif
