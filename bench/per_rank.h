/*
 * [measure] granularity = "ranks" (docs/bench-protocol.md, "Per-rank
 * records"): every rank keeps its own time, entry and exit of each timed
 * iteration while the point runs, and after the point one gather brings
 * them to rank 0, which turns them into the record's per-rank summaries and
 * its rank x iteration matrix. Nothing of it runs between timed calls but
 * three stores into a preallocated array, so the measurement is the same as
 * with the default granularity.
 */
#ifndef CK_BENCH_PER_RANK_H
#define CK_BENCH_PER_RANK_H

#include <mpi.h>
#include <stddef.h>

/* Bound on ranks x iterations kept for one point: each rank keeps at most
 * PER_RANK_MAX_CELLS / p iterations (the first ones; 1,024 at 1,024 ranks),
 * so rank 0's gather buffer stays under 3 doubles + 1 per cell, 25 MiB, and
 * the record's matrix under 12 MiB of float32 before compression. */
#define PER_RANK_MAX_CELLS (1L << 20)

typedef struct {
    long cap;            /* iterations this rank keeps: PER_RANK_MAX_CELLS / p */
    long attempted;      /* timed iterations seen so far (kept or late) */
    double *v;           /* 3 per kept slot: own time (s), entry and exit (own clock) */
    unsigned char *kept; /* per slot: not late (agreed, so the same on every rank) */
    int oom;             /* the arrays could not be allocated here */
} per_rank_acc;

typedef struct {
    int p;
    long n;              /* iterations in the matrix (the first kept ones) */
    long of;             /* kept iterations of the point */
    int clock_global;    /* MPI_WTIME_IS_GLOBAL: no offsets applied */
    float *matrix;       /* planes time_us, arrival_us, exit_us; each p rows of n */
    double *median_us;   /* p each: medians over the n iterations */
    double *arrival_median_us;
    double *exit_median_us;
    double *clock_error_us; /* half the best round trip of the offset estimate; 0 when global */
} per_rank_summary;

/* Allocates the per-iteration arrays (a failure is remembered and agreed in
 * per_rank_end, so every rank takes the same path). */
void per_rank_begin(per_rank_acc *a, int p);
/* One timed iteration, late or not: seconds is the time that goes into the
 * maximum, entry and exit this rank's MPI_Wtime at the call's entry and exit. */
void per_rank_iteration(per_rank_acc *a, double seconds, double entry, double exit);
/* After a round's agreement: late[j] > 0 marks its j-th iteration late (n in the round). */
void per_rank_round_end(per_rank_acc *a, long n, const double *late);

/* After the timed rounds, on every rank together: clock offsets (unless
 * have_offset, or the clock is global), one gather on ctrl, rank 0's summary
 * in *out (NULL elsewhere). *oom_rank: the lowest rank that ran out of
 * memory (then no summary), -1 when none. Returns an MPI code of the control
 * traffic. */
int per_rank_end(per_rank_acc *a, int rank, int p, MPI_Comm ctrl, int have_offset, double offset,
                 double offset_error, long kept_total, per_rank_summary **out, int *oom_rank);
void per_rank_acc_free(per_rank_acc *a);
void per_rank_summary_free(per_rank_summary *s);

/* Test-only: COLLKIT_BENCH_TEST_SLOW_RANK="RANK=MICROSECONDS" (docs/bench-protocol.md):
 * the extra seconds added to this rank's time and exit of every measured call,
 * 0 when unset, malformed or another rank. */
double per_rank_test_delay(int rank);

#endif
