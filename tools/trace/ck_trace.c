/*
 * ck_trace: the messages a libcollkit algorithm sends, without MPI.
 *
 * libcollkit is compiled into this program against the stand-in MPI of
 * standin/ (no MPI library is linked). For a trace of p ranks the algorithm
 * is run p times, once as each rank, and the stand-in collects that rank's
 * sends; receives complete at once because the schedules do not depend on
 * the data (standin/standin.c). tests/trace/ checks that the result equals
 * what the PMPI recorder sees under real MPI (ck_trace_mpi). Formats: trace.h,
 * README.md.
 */
#include "standin/standin.h"
#include "trace.h"

#include <string.h>

/* Runs one case and writes it to o. Returns 0, or the exit status of a
 * failure (3: the algorithm returned an MPI error or left requests
 * incomplete; 1: out of memory) with a one-word reason. */
static int trace_case(const ck_trace_case *c, ck_msgs *m, ck_out *o, const char **reason)
{
    const int p = c->ranks;
    int status = 0;
    ck_trace_bufs bufs = {NULL, NULL};
    ck_pairs agg = {NULL, NULL, NULL, 0, 0};
    size_t *offs = NULL;
    uint64_t total = 0;

    *reason = "no_memory";
    if (ck_trace_bufs_alloc(&bufs, c, p) != 0) return 1;
    offs = malloc(((size_t)p + 1) * sizeof *offs);
    if (offs == NULL || (c->format == CK_TRACE_PAIRS && ck_pairs_init(&agg, p) != 0)) {
        status = 1;
        goto out;
    }
    m->n = 0;
    m->oom = 0;
    offs[0] = 0;
    for (int r = 0; r < p; r++) {
        size_t start = m->n;
        ck_standin_begin(r, p, m);
        int rc = ck_trace_call(c, &bufs, MPI_COMM_WORLD);
        long pending = ck_standin_end();
        if (m->oom) {
            status = 1;
            goto out;
        }
        /* The lowest failing rank's error is reported, as ck_trace_mpi does. */
        if (rc != MPI_SUCCESS) {
            *reason = ck_trace_errname(rc);
            status = 3;
            goto out;
        }
        if (pending != 0) {
            *reason = "incomplete_requests";
            status = 3;
            goto out;
        }
        total += m->n - start;
        /* Aggregating rank by rank keeps memory at O(pairs), not O(messages). */
        if (c->format == CK_TRACE_PAIRS) m->n = ck_pairs_compact(&agg, m->v, start, m->n);
        offs[r + 1] = m->n;
    }
    ck_out_header(o, c, p, total);
    for (int r = 0; r < p; r++) ck_out_rank(o, r, m->v + offs[r], offs[r + 1] - offs[r], c->format);
out:
    free(offs);
    ck_pairs_free(&agg);
    ck_trace_bufs_free(&bufs);
    return status;
}

static int run_batch(const char *path, ck_msgs *m, ck_out *o)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "ck_trace: cannot open batch file '%s'\n", path);
        return 2;
    }
    char line[1024], err[256];
    long lineno = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        ck_trace_case c;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            /* Report the overlong line once and skip the rest of it. */
            int ch;
            while ((ch = fgetc(f)) != EOF && ch != '\n') {
            }
            ck_out_error_line(o, lineno, "line too long");
            continue;
        }
        int pr = ck_trace_parse_line(line, &c, err, sizeof err);
        if (pr == 1) continue;
        if (pr < 0) {
            ck_out_error_line(o, lineno, err);
            continue;
        }
        const char *reason;
        if (trace_case(&c, m, o, &reason) != 0) ck_out_error(o, &c, c.ranks, reason);
    }
    int bad = ferror(f);
    if (f != stdin) fclose(f);
    if (bad) {
        fprintf(stderr, "ck_trace: error reading batch file '%s'\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    ck_trace_cli cli;
    char err[512];
    if (ck_trace_parse_cli(argc, argv, 1, &cli, err, sizeof err) != 0) {
        fprintf(stderr, "ck_trace: %s\n", err);
        return 2;
    }
    if (cli.mode == CK_TRACE_HELP) {
        ck_trace_usage(stdout, "ck_trace");
        return 0;
    }
    if (cli.mode == CK_TRACE_LIST) {
        ck_trace_list(stdout);
        return fflush(stdout) == 0 ? 0 : 1;
    }

    static ck_out out; /* static: it holds a 64 KiB buffer */
    ck_out_init(&out, stdout);
    ck_msgs msgs = {NULL, 0, 0, 0};
    int status;
    if (cli.mode == CK_TRACE_BATCH) {
        status = run_batch(cli.batch, &msgs, &out);
    } else {
        const char *reason;
        status = trace_case(&cli.one, &msgs, &out, &reason);
        if (status != 0) {
            ck_trace_describe(err, sizeof err, &cli.one, cli.one.ranks, reason);
            fprintf(stderr, "ck_trace: %s\n", err);
        }
    }
    ck_msgs_free(&msgs);
    if (ck_out_flush(&out) != 0) {
        fprintf(stderr, "ck_trace: cannot write the output\n");
        return 1;
    }
    return status;
}
