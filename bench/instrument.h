/*
 * Tag collection of collkit-bench-instr (issue #7; docs/bench-protocol.md,
 * "Instrumented records"). Only the instrumented build (CK_INSTRUMENT)
 * compiles this; the plain collkit-bench has none of it.
 *
 * Recording is on only around the measured call of timed iterations. After
 * each call the rank folds its records into per-(tag, step) sums of that
 * iteration and its comm / reduce / copy time (outermost category tags
 * only), then resets the recorder. Iterations are kept or dropped per round
 * (window sync drops late ones once the ranks agree), so a round's sums wait
 * in a log until the agreement says which iterations count. After the point
 * everything travels to rank 0 on the control communicator, recording off.
 */
#ifndef CK_BENCH_INSTRUMENT_H
#define CK_BENCH_INSTRUMENT_H

#ifdef CK_INSTRUMENT

#include <collkit/spans.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Records one measured call may leave before the rest are dropped (and
 * counted); --tag-capacity overrides it. */
#define INSTR_DEFAULT_CAPACITY ((size_t)1 << 16)
/* Tag names travel to rank 0 in fixed fields; longer names are cut. */
#define INSTR_NAME_LEN 64

typedef struct {
    char name[INSTR_NAME_LEN];
    int32_t step;     /* -1: none */
    int32_t category; /* ck_span_category */
    int32_t ranks;    /* ranks that recorded it at least once */
    uint64_t count;   /* over all ranks and kept iterations */
    double total_us;  /* likewise */
    double median_us, max_us; /* across all ranks (0 where absent) of the rank's mean per iteration */
} instr_tag_summary;

enum { INSTR_COMM, INSTR_REDUCE, INSTR_COPY, INSTR_OTHER, INSTR_PARTS };

typedef struct {
    long iterations;
    uint64_t dropped, unbalanced; /* all ranks, kept iterations */
    double part_us[INSTR_PARTS];  /* slowest rank of the median iteration(s) */
    double end_to_end_us;         /* median of the iteration times */
    double mean_part_us[INSTR_PARTS]; /* slowest rank of each iteration, mean */
    double mean_end_to_end_us;
    instr_tag_summary *tags;
    size_t ntags;
} instr_summary;

typedef struct {
    uint32_t key;
    uint32_t count;
    double ns;
} instr_log_entry;

/* One rank's accumulators for one point. Zero-initialise. */
typedef struct {
    int oom; /* something could not be kept: the point fails at the end */
    /* (tag, step) keys, their totals over kept iterations, and per-tag
     * chains for lookup (first_key by tag id, next_key by key). */
    int32_t *key_tag, *key_step, *next_key;
    uint64_t *count;
    double *total_ns;
    uint32_t *it_count; /* this iteration's, by key */
    double *it_ns;
    uint32_t *touched;
    size_t ntouched;
    size_t nkeys, kcap;
    int first_key[CK_SPAN_MAX_NAMES];
    /* This round: log segments and per-iteration figures. */
    instr_log_entry *log;
    size_t nlog, logcap;
    size_t *seg;
    double *r_fig;        /* 4 per iteration: call, comm, reduce, copy (us) */
    uint64_t *r_dropped, *r_unbal;
    long rcap;
    /* Kept iterations of the point, 4 figures each, and their counters. */
    double *fig;
    size_t nkept, figcap;
    uint64_t dropped, unbalanced;
} instr_acc;

/* Allocates the recorder (MPI_SUCCESS or MPI_ERR_NO_MEM). */
int instr_setup(size_t capacity);
void instr_teardown(void);

void instr_acc_free(instr_acc *a);
/* Before a round of n timed iterations (allocates; on failure sets oom). */
void instr_round_begin(instr_acc *a, long n);
/* Right after the j-th call of the round: folds and resets the recorder. */
void instr_iteration(instr_acc *a, long j, double call_seconds);
/* After the round's agreement: late[j] > 0 drops iteration j. */
void instr_round_end(instr_acc *a, long n, const double *late);
/* After the point, on every rank: brings everything to rank 0 and builds
 * *out there (NULL elsewhere or when the point cannot have one). A rank that
 * ran out of memory fails the point: *oom_rank gets the lowest such rank
 * (-1: none). Returns an MPI code of the control traffic. */
int instr_point_end(instr_acc *a, int rank, int p, MPI_Comm ctrl, instr_summary **out, int *oom_rank);
void instr_summary_free(instr_summary *s);

#endif /* CK_INSTRUMENT */

#endif
