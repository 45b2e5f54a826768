/*
 * Reaching a steady state before anything is timed (docs/bench-protocol.md,
 * "Steady state"): the launch's warm-up exchange with every peer, the rule that
 * ends a point's warm-up windows, the drift check of its timed iterations, and
 * the test-only slow start that lets tests produce an unsteady point.
 */
#ifndef CK_BENCH_STEADY_H
#define CK_BENCH_STEADY_H

#include "points.h"

#include <mpi.h>
#include <stddef.h>

/* Defaults of the points file's optional keys (one home: docs/bench-protocol.md
 * shows these numbers). 0.2 s of launch warm-up: lazy connection set-up,
 * first-touch faults of the transport's buffers and a CPU frequency ramp
 * took the first few ms of a launch in issue #32 (medians near 8 ms for a
 * 4 us call); 0.2 s covers them many times over and is small next to a
 * launch's start (mpirun alone takes about 0.3-1 s). 0.2 s per point bounds
 * the warm-up windows: a point that is still getting faster after that is
 * marked rather than measured for longer. */
#define STEADY_LAUNCH_WARMUP_S 0.2
#define STEADY_SETTLE_S 0.2
/* Upper bounds of both keys: a larger value is a typo, not a warm-up. */
#define STEADY_MAX_S 60.0

/* Exchanges with every peer of comm (the measured communicator: its
 * connections are the ones the points use), at a small and a large size,
 * round after round until `seconds` have passed on every rank (agreed on
 * ctrl after each round; at least one round when seconds > 0). Under
 * SimGrid it does nothing: simulated time has no start-up costs. Returns an
 * MPI code. */
int steady_launch_warmup(MPI_Comm comm, MPI_Comm ctrl, int rank, int p, double seconds);

/* Warm-up windows (run_point.c runs them; the rule is here): windows of
 * STEADY_WINDOW iterations, each summarised by the median of its per-iteration
 * slowest-rank times. */
#define STEADY_WINDOW 5
/* Steady: a window whose median is not below the previous window's by more
 * than this fraction. 10 %: a median of 5 iterations of a steady call moves by a
 * few % on a quiet machine, while the start-up costs of issue #32 fell by
 * factors; and several falls in a row are needed to run into the bound. */
#define STEADY_TOLERANCE 0.10
/* Bound on the windows besides settle_s, so that a tiny call cannot run
 * thousands of them inside the time bound. */
#define STEADY_MAX_WINDOWS 40
/* At least this many windows before a point is called unsteady, whatever
 * settle_s: one slow first window (a start-up cost that just ended) can spend
 * the whole bound, and the third window is what shows whether the fall went on. */
#define STEADY_MIN_WINDOWS 3

/* Whether the window whose median is `now` is steady after one of `prev`. */
int steady_window_settled(double prev, double now);

/* Drift of the timed iterations: with at least STEADY_DRIFT_MIN kept, the
 * median of the first third above STEADY_DRIFT_FACTOR x the median of the
 * last third. Writes the reason into why (empty when none). Returns -1 when
 * out of memory, else 0. */
#define STEADY_DRIFT_MIN 9
#define STEADY_DRIFT_FACTOR 2.0
int steady_drift(const double *times_us, size_t n, char *why, size_t whylen);

/* Test-only slow start, COLLKIT_BENCH_TEST_SLOW_START (docs/bench-protocol.md):
 * read once per launch by every rank (steady_test_begin, after MPI_Init), the
 * marker file removed by rank 0 when the launch ends (steady_test_end).
 * steady_test_ramp gives a matching point's ramp: its first *calls calls get
 * an extra time added to their measured time (run_point.c says why not
 * waited), steady_test_ramp_s of it; 0 calls when none. */
void steady_test_begin(void);
void steady_test_end(int rank);
void steady_test_ramp(const bench_point *pt, long *calls, double *seconds);

/* The extra time of call k (0, 1, ...) of a ramp of `calls` calls starting at
 * `first_s`: first_s x STEADY_TEST_RAMP_FALL^k, 0 from call `calls` on. Each
 * call 20 % below the one before, so that every warm-up window's median falls
 * by more than STEADY_TOLERANCE whatever the window's length (it follows the
 * machine's speed, window_length; a linear ramp fell by 3-7 % per window of
 * one or two calls) and, with a first_s of a second, by far more than a
 * loaded machine's noise adds to a window's median (a linear 100 ms ramp's
 * windows fell 7-9 ms beyond the tolerance; the sanitizer step once missed
 * the mark under load, most likely so). */
#define STEADY_TEST_RAMP_FALL 0.8
double steady_test_ramp_s(long k, long calls, double first_s);

#endif
