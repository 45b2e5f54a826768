/*
 * What ck_trace (stand-in MPI) and ck_trace_mpi (real MPI, PMPI recorder)
 * share: the command line and batch lines, the call of a registry algorithm
 * with buffers of the right sizes, pair aggregation and the text output.
 * This file is compiled into both programs, each against its own <mpi.h>, so
 * that the two can only differ in how messages are obtained.
 */
#ifndef CK_TRACE_H
#define CK_TRACE_H

#include <collkit/collkit.h>

#include <stdint.h>
#include <stdio.h>

#include "msgs.h"

/* Upper bound on --ranks: keeps the per-rank tables of a trace (offsets,
 * pair accumulators) allocatable; far above what the traffic analysis uses. */
#define CK_TRACE_MAX_RANKS (1 << 20)

typedef enum { CK_TRACE_MESSAGES = 0, CK_TRACE_PAIRS = 1 } ck_trace_format;

typedef struct {
    const ck_algorithm *alg;
    int ranks; /* 0 when not given (ck_trace_mpi then uses the world size) */
    size_t count;
    int root;
    const ck_datatype_desc *dtype; /* libcollkit's datatype table */
    ck_trace_format format;
} ck_trace_case;

typedef enum { CK_TRACE_ONE, CK_TRACE_BATCH, CK_TRACE_LIST, CK_TRACE_HELP } ck_trace_mode;

typedef struct {
    ck_trace_mode mode;
    ck_trace_case one;
    const char *batch;
} ck_trace_cli;

/* Parses the command line. need_ranks: --ranks is required (ck_trace).
 * Returns 0, or -1 with one line (no newline) in err. */
int ck_trace_parse_cli(int argc, char **argv, int need_ranks, ck_trace_cli *cli, char *err,
                       size_t errlen);
void ck_trace_usage(FILE *f, const char *prog);

/* One batch line, "collective algorithm ranks count root dtype format".
 * Returns 0 for a case, 1 for a blank or '#' comment line, -1 with err. */
int ck_trace_parse_line(const char *line, ck_trace_case *c, char *err, size_t errlen);

/* "collective algorithm" per registered algorithm. */
void ck_trace_list(FILE *f);

/* Name of an MPI error class ("MPI_ERR_OP"); the stand-in and the real MPIs
 * number them differently, the names are what both programs print. */
const char *ck_trace_errname(int rc);

/* Buffers for one case, sized from the collective's descriptor for the role
 * of any rank (a: send, b: receive); zeroed. */
typedef struct {
    void *a, *b;
} ck_trace_bufs;
int ck_trace_bufs_alloc(ck_trace_bufs *b, const ck_trace_case *c, int p); /* 0 or -1 */
void ck_trace_bufs_free(ck_trace_bufs *b);

/* Calls the case's algorithm once on comm through ck_algorithm_call, bufs a
 * as sbuf and b as rbuf (MPI_SUM where an op is needed). */
int ck_trace_call(const ck_trace_case *c, const ck_trace_bufs *b, MPI_Comm comm);

/* Pair aggregation: per destination sums of one source's messages. */
typedef struct {
    uint64_t *acc;
    uint32_t *mark;
    int32_t *dsts;
    int p;
    uint32_t epoch;
} ck_pairs;
int ck_pairs_init(ck_pairs *a, int p); /* 0 or -1 */
void ck_pairs_free(ck_pairs *a);
/* Replaces v[start..end), all sent by one rank, with one record per
 * destination in ascending order (bytes summed, step 0); returns the new end. */
size_t ck_pairs_compact(ck_pairs *a, ck_trace_msg *v, size_t start, size_t end);

/* Buffered text output: integers formatted by hand, written in large blocks,
 * because a trace can have millions of lines. */
typedef struct {
    FILE *f;
    size_t n;
    int err;
    char buf[1 << 16];
} ck_out;
void ck_out_init(ck_out *o, FILE *f);
void ck_out_header(ck_out *o, const ck_trace_case *c, int p, uint64_t nmsgs);
void ck_out_error(ck_out *o, const ck_trace_case *c, int p, const char *reason);
void ck_out_error_line(ck_out *o, long line, const char *reason);
/* Lines of one source: `src dst bytes step` (messages) or `src dst bytes` (pairs). */
void ck_out_rank(ck_out *o, int src, const ck_trace_msg *v, size_t n, ck_trace_format f);
int ck_out_flush(ck_out *o); /* 0, or -1 after any write error */

/* One line naming a failed case (no newline), for stderr in single mode. */
void ck_trace_describe(char *dst, size_t len, const ck_trace_case *c, int p, const char *reason);

#endif /* CK_TRACE_H */
