/* Per-rank times and skews of a point's timed iterations (per_rank.h). */
#include "per_rank.h"

#include "agree.h"
#include "sync.h"

#include <collkit/collkit.h>

#include <stdlib.h>
#include <string.h>

void per_rank_begin(per_rank_acc *a, int p)
{
    memset(a, 0, sizeof *a);
    a->cap = PER_RANK_MAX_CELLS / (p > 0 ? p : 1);
    if (a->cap < 1) a->cap = 1;
    a->v = malloc((size_t)a->cap * 3 * sizeof *a->v);
    a->kept = calloc((size_t)a->cap, 1);
    if (a->v == NULL || a->kept == NULL) {
        per_rank_acc_free(a);
        a->oom = 1;
    }
}

void per_rank_iteration(per_rank_acc *a, double seconds, double entry, double exit)
{
    if (a->v != NULL && a->attempted < a->cap) {
        double *s = a->v + 3 * a->attempted;
        s[0] = seconds, s[1] = entry, s[2] = exit;
    }
    a->attempted++;
}

void per_rank_round_end(per_rank_acc *a, long n, const double *late)
{
    for (long j = 0; j < n; j++) {
        long slot = a->attempted - n + j;
        if (a->kept != NULL && slot >= 0 && slot < a->cap) a->kept[slot] = !(late[j] > 0.0);
    }
}

void per_rank_acc_free(per_rank_acc *a)
{
    free(a->v);
    free(a->kept);
    a->v = NULL;
    a->kept = NULL;
}

void per_rank_summary_free(per_rank_summary *s)
{
    if (s == NULL) return;
    free(s->matrix);
    free(s->median_us);
    free(s->arrival_median_us);
    free(s->exit_median_us);
    free(s->clock_error_us);
    free(s);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median of one matrix row (n floats), sorted in scratch. */
static double row_median(const float *row, long n, double *scratch)
{
    if (n <= 0) return 0.0;
    for (long j = 0; j < n; j++) scratch[j] = row[j];
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_double);
    return n % 2 ? scratch[n / 2] : 0.5 * (scratch[n / 2 - 1] + scratch[n / 2]);
}

static per_rank_summary *summary_alloc(int p, long n)
{
    per_rank_summary *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->p = p;
    s->n = n;
    s->matrix = malloc((size_t)3 * (size_t)p * (size_t)(n > 0 ? n : 1) * sizeof *s->matrix);
    s->median_us = calloc((size_t)p, sizeof(double));
    s->arrival_median_us = calloc((size_t)p, sizeof(double));
    s->exit_median_us = calloc((size_t)p, sizeof(double));
    s->clock_error_us = calloc((size_t)p, sizeof(double));
    if (!s->matrix || !s->median_us || !s->arrival_median_us || !s->exit_median_us || !s->clock_error_us) {
        per_rank_summary_free(s);
        return NULL;
    }
    return s;
}

/* Rank 0: the gathered rows (3 n + 1 doubles per rank: own time, entry and
 * exit on rank 0's clock, then the offset's error) into the summary. The
 * arrival and exit of a rank are measured from the iteration's earliest
 * entry, so they need no common zero, only comparable clocks. */
static int summarise(const double *all, int p, long n, per_rank_summary *s)
{
    size_t row = 3 * (size_t)n + 1, plane = (size_t)p * (size_t)n;
    double *scratch = malloc((size_t)(n > 0 ? n : 1) * sizeof *scratch);
    if (scratch == NULL) return -1;
    for (long j = 0; j < n; j++) {
        double first = all[3 * (size_t)j + 1];
        for (int r = 1; r < p; r++) {
            double e = all[(size_t)r * row + 3 * (size_t)j + 1];
            if (e < first) first = e;
        }
        for (int r = 0; r < p; r++) {
            const double *c = all + (size_t)r * row + 3 * (size_t)j;
            size_t at = (size_t)r * (size_t)n + (size_t)j;
            s->matrix[at] = (float)(c[0] * 1e6);
            s->matrix[plane + at] = (float)((c[1] - first) * 1e6);
            s->matrix[2 * plane + at] = (float)((c[2] - first) * 1e6);
        }
    }
    for (int r = 0; r < p; r++) {
        size_t at = (size_t)r * (size_t)n;
        s->median_us[r] = row_median(s->matrix + at, n, scratch);
        s->arrival_median_us[r] = row_median(s->matrix + plane + at, n, scratch);
        s->exit_median_us[r] = row_median(s->matrix + 2 * plane + at, n, scratch);
        s->clock_error_us[r] = all[(size_t)r * row + 3 * (size_t)n] * 1e6;
    }
    free(scratch);
    return 0;
}

int per_rank_end(per_rank_acc *a, int rank, int p, MPI_Comm ctrl, int have_offset, double offset,
                 double offset_error, long kept_total, per_rank_summary **out, int *oom_rank)
{
    *out = NULL;
    *oom_rank = -1;
    /* Offsets: none where the library says its clocks are one (SimGrid's
     * simulated clock, some machines' global clocks); otherwise the same
     * ping-pong estimate as the window method, taken after the timed
     * iterations so that they are not disturbed by it. */
    int *global = NULL, flag = 0;
    int rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag);
    int clock_global = rc == MPI_SUCCESS && flag && global != NULL && *global;
    if (clock_global) {
        offset = offset_error = 0.0;
    } else if (!have_offset) {
        rc = sync_clock_offset(ctrl, rank, p, &offset, &offset_error);
        if (rc != MPI_SUCCESS) return rc;
    }
    /* The kept slots are the same on every rank (the late marks are agreed). */
    long stored = a->attempted < a->cap ? a->attempted : a->cap, n = 0;
    for (long i = 0; a->kept != NULL && i < stored; i++) n += a->kept[i];
    size_t row = 3 * (size_t)n + 1;
    double *mine = a->oom ? NULL : malloc(row * sizeof *mine);
    double *all = NULL;
    per_rank_summary *s = NULL;
    if (rank == 0 && mine != NULL) {
        all = malloc((size_t)p * row * sizeof *all);
        s = summary_alloc(p, n);
    }
    int short_here = mine == NULL || (rank == 0 && (all == NULL || s == NULL));
    double mark = agree_mark(short_here, rank, p);
    rc = agree_max(&mark, 1, ctrl);
    if (rc == MPI_SUCCESS && (*oom_rank = agree_marked_rank(mark, p)) < 0) {
        size_t k = 0;
        for (long i = 0; i < stored; i++) {
            if (!a->kept[i]) continue;
            const double *c = a->v + 3 * i;
            /* local = rank 0's clock + offset */
            mine[k++] = c[0], mine[k++] = c[1] - offset, mine[k++] = c[2] - offset;
        }
        mine[k] = offset_error;
        /* libcollkit's binomial gather, as for the host names (main.c): the
         * library's own may be forced, and a linear one is cubic in p under
         * SimGrid. */
        rc = ck_gather_binomial(mine, all, row, MPI_DOUBLE, 0, ctrl);
        if (rc == MPI_SUCCESS && rank == 0) {
            if (summarise(all, p, n, s) != 0) {
                *oom_rank = 0;
            } else {
                s->of = kept_total;
                s->clock_global = clock_global;
                *out = s;
                s = NULL;
            }
        }
    }
    per_rank_summary_free(s);
    free(all);
    free(mine);
    return rc;
}

double per_rank_test_delay(int rank)
{
    const char *v = getenv("COLLKIT_BENCH_TEST_SLOW_RANK");
    if (v == NULL || *v == '\0') return 0.0;
    char *end = NULL;
    long who = strtol(v, &end, 10);
    if (end == v || *end != '=' || who != rank) return 0.0;
    double us = strtod(end + 1, NULL);
    return us > 0.0 && us < 1e7 ? us * 1e-6 : 0.0;
}
