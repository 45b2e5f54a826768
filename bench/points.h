/*
 * The points file of docs/bench-protocol.md: one test point per line,
 * whitespace-separated key=value tokens. Parsing is strict because the file is
 * machine-written: anything unexpected is a bug on the writing side and must
 * stop the launch before any time is spent measuring.
 */
#ifndef CK_BENCH_POINTS_H
#define CK_BENCH_POINTS_H

#include "conditions.h"
#include "validate.h"

#include <collkit/collkit.h>

#include <stddef.h>
#include <stdint.h>

/* BK_NCCL runs only in collkit-bench-nccl (COLLKIT_NCCL, bench/device.h);
 * the CPU build refuses a points file that asks for it. */
typedef enum { BK_MPI, BK_COLLKIT, BK_NCCL } bench_backend;
typedef enum { SYNC_DISSEMINATION, SYNC_MPI_BARRIER, SYNC_WINDOW } bench_sync;
typedef enum { VAL_FIRST, VAL_ALL, VAL_NONE } bench_validate;
/* What the record keeps of the timed iterations (docs/bench-protocol.md,
 * "Granularity"): the slowest rank per iteration (today's records), that plus
 * every rank's times and skews (per_rank.c), or only the aggregates. */
typedef enum { GRAN_MAX, GRAN_RANKS, GRAN_NONE } bench_granularity;

/* Largest accepted count: keeps count x sizeof(type) (the record's `bytes`)
 * inside 64 bits, while p x count x size can still overflow and must be
 * caught where buffers are sized. */
#define BENCH_MAX_COUNT ((uint64_t)1 << 60)

typedef struct {
    char *id;
    ck_collective coll;
    bench_backend backend;
    char *algorithm;
    size_t count;
    const ck_datatype_desc *dtype; /* an entry of libcollkit's datatype table */
    ckv_op op;                     /* one of MPI's predefined ops */
    int root;
    int in_place;
    long warmup;
    long min_iters;
    long max_iters;
    double budget_s;
    double launch_warmup_s; /* the launch warm-up this point asks for (steady.h) */
    double settle_s;        /* bound on its warm-up windows; 0: none (steady.h) */
    bench_sync sync;
    bench_validate validate;
    bench_granularity granularity; /* absent: GRAN_MAX */
    bench_conditions conditions;   /* absent: COND_SYNCHRONISED */
    program_conditions program;    /* COND_PROGRAM: gap and per-rank skew (conditions.h) */
    char *readback; /* comma-separated names; "" when absent */
    char *set;      /* comma-separated NAME:VALUE set through MPI_T for this point; "" when absent */
    int fresh_comm; /* comm=fresh: the calls run on a duplicate of MPI_COMM_WORLD made after `set` (the
                     * library reads the setting when a communicator is made); 0: MPI_COMM_WORLD */
    int line;       /* line in the points file, for messages */
} bench_point;

typedef struct {
    bench_point *v;
    size_t n;
} point_list;

/* Parse the whole file. Returns 0, or -1 with one line ("FILE:LINE: ...",
 * no newline) in err. On error *out is left empty. */
int points_parse(const char *path, point_list *out, char *err, size_t errlen);
void points_free(point_list *pl);

const char *backend_name(bench_backend b);
const char *sync_name(bench_sync s);
const char *validate_name(bench_validate v);
const char *granularity_name(bench_granularity g);
const char *conditions_name(bench_conditions c);

#endif
