/* Steady state: launch warm-up, the window rule, the drift check, and the
 * test-only slow start (steady.h, docs/bench-protocol.md "Steady state"). */
#include "steady.h"

#include "agree.h"
#include "stats.h"
#include "tags.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The launch warm-up's two sizes: one byte-sized message (the eager path) and
 * one above both libraries' eager limits (Open MPI's shared-memory BTL
 * switches to rendezvous at 4 KiB, MPICH's at 64 KiB), so that the
 * rendezvous and single-copy paths are set up too. */
#define WARMUP_SMALL 8
#define WARMUP_LARGE (256 * 1024)

int steady_launch_warmup(MPI_Comm comm, MPI_Comm ctrl, int rank, int p, double seconds)
{
#ifdef SMPI_H
    (void)comm, (void)ctrl, (void)rank, (void)p, (void)seconds;
    return MPI_SUCCESS;
#else
    if (p < 2 || !(seconds > 0.0)) return MPI_SUCCESS;
    char *out = calloc(2, WARMUP_LARGE);
    if (out == NULL) return MPI_ERR_NO_MEM;
    char *in = out + WARMUP_LARGE;
    double t0 = MPI_Wtime();
    int rc = MPI_SUCCESS;
    for (;;) {
        /* Peer d away in both directions: every pair exchanges in every round,
         * and no rank waits on one that is sending elsewhere. */
        for (int d = 1; d < p && rc == MPI_SUCCESS; d++) {
            int to = (rank + d) % p, from = (rank - d + p) % p;
            rc = MPI_Sendrecv(out, WARMUP_SMALL, MPI_CHAR, to, BENCH_TAG_WARMUP, in, WARMUP_SMALL, MPI_CHAR,
                              from, BENCH_TAG_WARMUP, comm, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS)
                rc = MPI_Sendrecv(out, WARMUP_LARGE, MPI_CHAR, to, BENCH_TAG_WARMUP, in, WARMUP_LARGE,
                                  MPI_CHAR, from, BENCH_TAG_WARMUP, comm, MPI_STATUS_IGNORE);
        }
        /* An error ends the warm-up on every rank at once (the mark travels
         * with the elapsed time). */
        double v[2] = {agree_mark(rc != MPI_SUCCESS, rank, p), MPI_Wtime() - t0};
        int arc = agree_max(v, 2, ctrl);
        if (arc != MPI_SUCCESS) rc = arc;
        else if (v[0] > 0.0 && rc == MPI_SUCCESS) rc = MPI_ERR_OTHER; /* another rank's error */
        if (rc != MPI_SUCCESS || v[1] >= seconds) break;
    }
    free(out);
    return rc;
#endif
}

int steady_window_settled(double prev, double now) { return now >= prev * (1.0 - STEADY_TOLERANCE); }

int steady_drift(const double *times_us, size_t n, char *why, size_t whylen)
{
    why[0] = '\0';
    if (n < STEADY_DRIFT_MIN) return 0;
    size_t third = n / 3;
    double *scratch = malloc(third * sizeof *scratch);
    if (scratch == NULL) return -1;
    double first = stats_median(times_us, third, scratch);
    double last = stats_median(times_us + n - third, third, scratch);
    free(scratch);
    if (first > STEADY_DRIFT_FACTOR * last)
        snprintf(why, whylen,
                 "drift: the first third of the timed iterations has median %.4g us, the last third %.4g us",
                 first, last);
    return 0;
}

/* ---------------------------------------------------------------- test hook */

static struct {
    int active;           /* the variable is set (and its marker, if any, existed at start) */
    char want[256];       /* "COLLECTIVE/BACKEND:ALGORITHM=" */
    long calls;
    double seconds;
    char marker[1024];    /* "" when the hook applies to every launch */
    int used;             /* a point of this launch was slowed */
} slow_start;

/* COLLKIT_BENCH_TEST_SLOW_START="COLLECTIVE/BACKEND:ALGORITHM=CALLS:MICROSECONDS[@FILE]".
 * Malformed: inactive (a test-only variable; its tests check that it acts). */
void steady_test_begin(void)
{
    memset(&slow_start, 0, sizeof slow_start);
    const char *v = getenv("COLLKIT_BENCH_TEST_SLOW_START");
    if (v == NULL || *v == '\0') return;
    const char *eq = strchr(v, '=');
    if (eq == NULL || (size_t)(eq - v) + 1 >= sizeof slow_start.want) return;
    memcpy(slow_start.want, v, (size_t)(eq - v) + 1);
    char *end = NULL;
    long calls = strtol(eq + 1, &end, 10);
    if (end == NULL || *end != ':' || calls <= 0 || calls > 1000000) return;
    double us = strtod(end + 1, &end);
    if (!(us > 0.0 && us < 1e7)) return;
    if (*end == '@') {
        snprintf(slow_start.marker, sizeof slow_start.marker, "%s", end + 1);
        /* Only while the marker exists: the first launch that runs the
         * point consumes it (steady_test_end), so a later launch of the same
         * points runs at full speed; a launch without that point (collkit's
         * component probe, other points) leaves it. Every rank looks before
         * any rank can remove it. */
        if (slow_start.marker[0] == '\0' || access(slow_start.marker, F_OK) != 0) return;
    } else if (*end != '\0') {
        return;
    }
    slow_start.calls = calls;
    slow_start.seconds = us * 1e-6;
    slow_start.active = 1;
}

void steady_test_end(int rank)
{
    if (rank == 0 && slow_start.used && slow_start.marker[0] != '\0') (void)unlink(slow_start.marker);
}

double steady_test_ramp_s(long k, long calls, double first_s)
{
    return k >= 0 && k < calls ? first_s * pow(STEADY_TEST_RAMP_FALL, (double)k) : 0.0;
}

void steady_test_ramp(const bench_point *pt, long *calls, double *seconds)
{
    *calls = 0;
    *seconds = 0.0;
    if (!slow_start.active) return;
    char have[256];
    snprintf(have, sizeof have, "%s/%s:%s=", ck_collective_name(pt->coll), backend_name(pt->backend),
             pt->algorithm);
    if (strcmp(have, slow_start.want) != 0) return;
    slow_start.used = 1;
    *calls = slow_start.calls;
    *seconds = slow_start.seconds;
}
