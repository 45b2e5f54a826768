/*
 * ck_trace_mpi: the messages a libcollkit algorithm sends under a real MPI,
 * recorded by PMPI interposition (recorder.c). The ground truth that
 * ck_trace (stand-in MPI, no launch) is tested against; same command line,
 * batch format and output, with p = the MPI world size.
 *
 * For each case every rank switches recording on, calls the registry
 * algorithm once on MPI_COMM_WORLD with real (zeroed) buffers, switches it
 * off; then rank 0 collects the records, rank by rank, and prints them in the
 * order ck_trace uses (sender, then call order), so no sorting is needed to
 * compare the two. The harness's own traffic runs on a duplicate of
 * MPI_COMM_WORLD through PMPI_ calls, so it is never recorded.
 *
 * Under SimGrid (not built by CMake here), compile the same sources with
 * smpicc from the repository root:
 *   smpicc -O2 -Iinclude -o ck_trace_mpi tools/trace/ck_trace_mpi.c
 *       tools/trace/recorder.c tools/trace/trace.c LIBSOURCES
 * where LIBSOURCES are the .c files of lib/core and of every lib/<collective>
 * directory (the list lib/CMakeLists.txt globs), and run it with
 * smpirun -np P ... --batch FILE. The wrappers are compiled into the program,
 * which is the arrangement SMPI supports.
 */
#include "recorder.h"
#include "trace.h"

#include <string.h>

#define CHUNK_RECORDS ((size_t)1 << 20) /* 16 MiB per message at most */

static int world_rank;

/* Runs one case on every rank; rank 0 writes it to o. Returns 0 or an exit
 * status (1: out of memory, 3: the algorithm failed) with a reason, the same
 * on every rank. */
static int trace_case(const ck_trace_case *c, int p, MPI_Comm ctl, ck_msgs *m, ck_msgs *all,
                      ck_out *o, const char **reason)
{
    ck_trace_bufs bufs = {NULL, NULL};
    ck_pairs agg = {NULL, NULL, NULL, 0, 0};
    long long *info = NULL;
    size_t *offs = NULL;
    int status = 0;

    /* Agree that every rank has its buffers before anyone enters the
     * collective: a rank that skipped it would leave the others hanging. */
    int mine_ok = ck_trace_bufs_alloc(&bufs, c, p) == 0, all_ok = 0;
    PMPI_Allreduce(&mine_ok, &all_ok, 1, MPI_INT, MPI_MIN, ctl);
    *reason = "no_memory";
    if (!all_ok) {
        status = 1;
        goto out;
    }

    m->n = 0;
    m->oom = 0;
    ck_recorder_start(MPI_COMM_WORLD, m);
    int rc = ck_trace_call(c, &bufs, MPI_COMM_WORLD);
    long pending = ck_recorder_stop();

    /* Everyone learns everyone's outcome and record count. */
    long long mine[4] = {rc, m->oom, pending, (long long)m->n};
    info = malloc((size_t)p * sizeof mine);
    int have_info = info != NULL, all_info = 0;
    PMPI_Allreduce(&have_info, &all_info, 1, MPI_INT, MPI_MIN, ctl);
    if (!all_info) {
        status = 1;
        goto out;
    }
    PMPI_Allgather(mine, 4, MPI_LONG_LONG, info, 4, MPI_LONG_LONG, ctl);
    /* The lowest failing rank names the failure, as in ck_trace, which stops
     * at the first rank that fails. */
    for (int r = 0; r < p && status == 0; r++) {
        const long long *in = &info[4 * r];
        if (in[1]) {
            status = 1;
        } else if (in[0] != MPI_SUCCESS) {
            *reason = ck_trace_errname((int)in[0]);
            status = 3;
        } else if (in[2] != 0) {
            *reason = "incomplete_requests";
            status = 3;
        }
    }
    if (status != 0) goto out;

    /* Rank 0 makes room for everything (the simplest bound, also for pairs)
     * and tells the others whether to send. */
    uint64_t total = 0;
    for (int r = 0; r < p; r++) total += (uint64_t)info[4 * r + 3];
    int go = 1;
    if (world_rank == 0) {
        all->n = 0;
        all->oom = 0;
        offs = malloc(((size_t)p + 1) * sizeof *offs);
        go = offs != NULL && total <= SIZE_MAX / sizeof(ck_trace_msg) &&
             ck_msgs_reserve(all, (size_t)total) == 0 &&
             (c->format != CK_TRACE_PAIRS || ck_pairs_init(&agg, p) == 0);
    }
    PMPI_Bcast(&go, 1, MPI_INT, 0, ctl);
    if (!go) {
        status = 1;
        goto out;
    }
    if (world_rank != 0) {
        for (size_t off = 0; off < m->n; off += CHUNK_RECORDS) {
            size_t k = m->n - off < CHUNK_RECORDS ? m->n - off : CHUNK_RECORDS;
            PMPI_Send(m->v + off, (int)(k * sizeof *m->v), MPI_BYTE, 0, 0, ctl);
        }
        goto out;
    }
    offs[0] = 0;
    for (int r = 0; r < p; r++) {
        size_t n = (size_t)info[4 * r + 3], start = all->n;
        if (r == 0) {
            if (n > 0) memcpy(all->v, m->v, n * sizeof *m->v);
        } else {
            for (size_t off = 0; off < n; off += CHUNK_RECORDS) {
                size_t k = n - off < CHUNK_RECORDS ? n - off : CHUNK_RECORDS;
                PMPI_Recv(all->v + start + off, (int)(k * sizeof *all->v), MPI_BYTE, r, 0, ctl,
                          MPI_STATUS_IGNORE);
            }
        }
        all->n = start + n;
        if (c->format == CK_TRACE_PAIRS) all->n = ck_pairs_compact(&agg, all->v, start, all->n);
        offs[r + 1] = all->n;
    }
    ck_out_header(o, c, p, total);
    for (int r = 0; r < p; r++) ck_out_rank(o, r, all->v + offs[r], offs[r + 1] - offs[r], c->format);
out:
    free(offs);
    free(info);
    ck_pairs_free(&agg);
    ck_trace_bufs_free(&bufs);
    return status;
}

/* Batch lines travel from rank 0 to all ranks so that only rank 0 reads the
 * file; every rank parses the same text. kind: 0 end, 1 line, 2 overlong
 * line, 3 read error. */
static int run_batch(const char *path, int p, MPI_Comm ctl, ck_msgs *m, ck_msgs *all, ck_out *o)
{
    FILE *f = NULL;
    int opened = 1;
    if (world_rank == 0) {
        f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
        opened = f != NULL;
    }
    PMPI_Bcast(&opened, 1, MPI_INT, 0, ctl);
    if (!opened) {
        if (world_rank == 0) fprintf(stderr, "ck_trace_mpi: cannot open batch file '%s'\n", path);
        return 2;
    }
    char line[1024], err[256];
    long head[2] = {0, 0}; /* kind, line number */
    int status = 0;
    for (;;) {
        if (world_rank == 0) {
            head[1]++;
            if (fgets(line, sizeof line, f) == NULL) {
                head[0] = ferror(f) ? 3 : 0;
            } else {
                size_t len = strlen(line);
                head[0] = 1;
                if (len == sizeof line - 1 && line[len - 1] != '\n') {
                    int ch;
                    while ((ch = fgetc(f)) != EOF && ch != '\n') {
                    }
                    head[0] = 2;
                }
            }
        }
        PMPI_Bcast(head, 2, MPI_LONG, 0, ctl);
        if (head[0] == 0 || head[0] == 3) {
            status = head[0] == 3 ? 1 : 0;
            if (status && world_rank == 0)
                fprintf(stderr, "ck_trace_mpi: error reading batch file '%s'\n", path);
            break;
        }
        if (head[0] == 2) {
            if (world_rank == 0) ck_out_error_line(o, head[1], "line too long");
            continue;
        }
        PMPI_Bcast(line, (int)sizeof line, MPI_CHAR, 0, ctl);
        ck_trace_case c;
        int pr = ck_trace_parse_line(line, &c, err, sizeof err);
        if (pr == 1) continue;
        if (pr < 0) {
            if (world_rank == 0) ck_out_error_line(o, head[1], err);
            continue;
        }
        if (c.ranks != p) {
            /* Reported in-band like any failed trace, so that a batch file
             * meant for ck_trace can be run here at one rank count. */
            if (world_rank == 0) ck_out_error(o, &c, c.ranks, "ranks_differ_from_world_size");
            continue;
        }
        const char *reason;
        if (trace_case(&c, p, ctl, m, all, o, &reason) != 0 && world_rank == 0)
            ck_out_error(o, &c, p, reason);
    }
    if (world_rank == 0 && f != stdin) fclose(f);
    return status;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm ctl;
    int p;
    PMPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &p);

    static ck_out out; /* static: it holds a 64 KiB buffer */
    ck_out_init(&out, stdout);
    ck_msgs msgs = {NULL, 0, 0, 0}, all = {NULL, 0, 0, 0};
    ck_trace_cli cli;
    char err[512];
    int status = 0;
    if (ck_trace_parse_cli(argc, argv, 0, &cli, err, sizeof err) != 0) {
        if (world_rank == 0) fprintf(stderr, "ck_trace_mpi: %s\n", err);
        status = 2;
    } else if (cli.mode == CK_TRACE_HELP) {
        if (world_rank == 0) ck_trace_usage(stdout, "ck_trace_mpi");
    } else if (cli.mode == CK_TRACE_LIST) {
        if (world_rank == 0) ck_trace_list(stdout);
    } else if (cli.mode == CK_TRACE_BATCH) {
        status = run_batch(cli.batch, p, ctl, &msgs, &all, &out);
    } else if (cli.one.ranks != 0 && cli.one.ranks != p) {
        if (world_rank == 0)
            fprintf(stderr, "ck_trace_mpi: --ranks %d differs from the MPI world size %d\n",
                    cli.one.ranks, p);
        status = 2;
    } else {
        cli.one.ranks = p;
        const char *reason;
        status = trace_case(&cli.one, p, ctl, &msgs, &all, &out, &reason);
        if (status != 0 && world_rank == 0) {
            ck_trace_describe(err, sizeof err, &cli.one, p, reason);
            fprintf(stderr, "ck_trace_mpi: %s\n", err);
        }
    }
    ck_msgs_free(&msgs);
    ck_msgs_free(&all);
    if (world_rank == 0 && ck_out_flush(&out) != 0) {
        fprintf(stderr, "ck_trace_mpi: cannot write the output\n");
        if (status == 0) status = 1;
    }
    PMPI_Comm_free(&ctl);
    MPI_Finalize();
    return status;
}
