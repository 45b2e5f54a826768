/*
 * The JSON-lines writer of collkit-bench: a small builder for one record
 * (strings escaped, numbers always valid JSON), and the `launch` and `point`
 * records of docs/bench-protocol.md. Each record is written as one line,
 * flushed and fsynced, so that a later crash or timeout loses nothing that
 * was already measured.
 */
#ifndef CK_BENCH_RECORD_H
#define CK_BENCH_RECORD_H

#include "points.h"
#include "run_point.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JB_MAX_DEPTH 8

typedef struct {
    char *buf;
    size_t len, cap;
    int failed;                  /* out of memory at some point */
    int depth;
    int need_comma[JB_MAX_DEPTH];
} json_builder;

void jb_init(json_builder *b);
void jb_free(json_builder *b);
void jb_begin_object(json_builder *b);
void jb_end_object(json_builder *b);
void jb_begin_array(json_builder *b);
void jb_end_array(json_builder *b);
/* Inside an object: the key of the next value. */
void jb_key(json_builder *b, const char *key);
void jb_string(json_builder *b, const char *s);
void jb_int(json_builder *b, long long v);
void jb_uint(json_builder *b, uint64_t v);
/* NaN and infinities are not JSON; they are written as 0 (they can only come
 * from a clock gone wrong, and a parse error would lose the whole record). */
void jb_number(json_builder *b, double v);

/* A string value: n floats' little-endian bytes in base64 (RFC 4648). */
void jb_float32_base64(json_builder *b, const float *v, size_t n);

/* Appends '\n', writes the line, flushes and fsyncs (an fsync error on
 * something that cannot be synced, like a pipe, is not a failure). Returns 0
 * or -1 with errno set. */
int jb_write_line(json_builder *b, FILE *f);

/* ---------------------------------------------------------------- records */

typedef struct {
    int ranks;
    const char *library_version; /* one line */
    const char *mpi_version;
    const char *collkit_version;
    const char *const *hosts;    /* ranks entries */
    int wtime_is_global;
    double wtick;
    double floor_us; /* sync_floor_us (0 at p = 1) */
    const char *const *cpus;     /* ranks entries: each rank's CPU affinity ("0-3"), "" unknown */
} launch_info;

typedef struct {
    const char *name;
    const char *value;
} record_kv;

/* Each returns 0, or -1 with errno set when the record could not be written. */
int record_launch(FILE *f, const launch_info *li);
/* floor_us: the launch's one-message floor; a point with kept times whose
 * median is below it gets a non-empty `implausible` reason. */
int record_point(FILE *f, const bench_point *pt, int ranks, const point_result *res,
                 const record_kv *effective, size_t neffective, double floor_us);

#endif
