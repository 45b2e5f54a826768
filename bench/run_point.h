/*
 * One test point on every rank: buffers, warm-up, timed rounds, validation,
 * and the agreement that makes every rank end the point together with the
 * same verdict, whatever went wrong on whichever rank.
 */
#ifndef CK_BENCH_RUN_POINT_H
#define CK_BENCH_RUN_POINT_H

#include "agree.h"
#include "instrument.h"
#include "per_rank.h"
#include "points.h"

#include <mpi.h>
#include <stddef.h>

typedef enum { ST_OK, ST_INVALID, ST_FAILED } point_status;

typedef struct {
    point_status status;    /* agreed across ranks; rank 0's goes into the record */
    char reason[BENCH_TEXT_LEN]; /* rank 0 */
    double *times_us;       /* rank 0: kept iterations, max across ranks */
    size_t ntimes, cap;
    long late;              /* iterations dropped as late (window sync) */
    long validated;         /* iterations whose result was checked */
    long settle_windows;    /* warm-up windows run until steady (steady.h) */
    char unstable[BENCH_TEXT_LEN]; /* rank 0: why the times are not from a steady state; "" */
    per_rank_summary *per_rank; /* rank 0, granularity = ranks: every rank's times; NULL otherwise */
#ifdef CK_INSTRUMENT
    instr_summary *instr;   /* rank 0, collkit-bench-instr: the tags; NULL when failed */
#endif
} point_result;

typedef struct bench_device bench_device;

/* Runs pt: the measured call on comm (which returns errors rather than
 * aborting), the harness's agreement and synchronisation messages on ctrl, a
 * duplicate of it; dev is the GPU and NCCL communicator of
 * collkit-bench-nccl (bench/device.h), NULL in the CPU build and in a launch
 * without nccl points. Returns MPI_SUCCESS, or the error code of the
 * harness's own traffic, after which the ranks can no longer be assumed to
 * be in step. */
int run_point(const bench_point *pt, MPI_Comm comm, MPI_Comm ctrl, bench_device *dev, point_result *res);
void point_result_free(point_result *res);
const char *status_name(point_status s);

#endif
