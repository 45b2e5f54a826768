/*
 * collkit-bench: runs the test points of a points file and writes one JSON
 * record per point (docs/bench-protocol.md).
 *
 *   mpirun -n P collkit-bench --points FILE --out FILE.jsonl
 *   collkit-bench --version
 *
 * Exit status: 0 when every point ran (whatever its status), 2 for a usage,
 * points-file or output-file error (one line on stderr, no record written),
 * 1 when the harness itself cannot go on (it aborts the launch).
 */
#include "agree.h"
#include "cpus.h"
#include "mpit.h"
#include "points.h"
#include "record.h"
#include "run_point.h"
#include "slow_launch.h"
#include "steady.h"
#include "sync.h"

#ifdef CK_NCCL
#include "device.h"
#include <nccl.h>
#endif

#ifdef SMPI_H
#include "sim_board.h"
#endif

#include <collkit/collkit.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CK_INSTRUMENT
#include "instrument.h"
#include <limits.h>
static const char usage[] = "usage: collkit-bench-instr --points FILE --out FILE (or --out - for stdout) "
                            "[--tag-capacity N] | --version";
#elif defined(CK_NCCL)
static const char usage[] = "usage: collkit-bench-nccl --points FILE --out FILE (or --out - for stdout) | --version";
#else
static const char usage[] = "usage: collkit-bench --points FILE --out FILE (or --out - for stdout) | --version";
#endif

typedef struct {
    const char *points;
    const char *out;
#ifdef CK_INSTRUMENT
    size_t tag_capacity; /* tag records one measured call may leave */
#endif
    char error[BENCH_TEXT_LEN];
} options;

/* Returns 0, 1 when --version/--help was answered, or -1 with opt->error. */
static int parse_args(int argc, char **argv, options *opt)
{
    memset(opt, 0, sizeof *opt);
#ifdef CK_INSTRUMENT
    opt->tag_capacity = INSTR_DEFAULT_CAPACITY;
#endif
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#ifdef CK_INSTRUMENT
        if (strcmp(a, "--tag-capacity") == 0) {
            char *end = NULL;
            const char *v = i + 1 < argc ? argv[++i] : "";
            errno = 0;
            unsigned long long c = strtoull(v, &end, 10);
            /* Digits only (strtoull would take "-1"), at least one record. */
            if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 || c == 0 || c > SIZE_MAX / 64) {
                snprintf(opt->error, sizeof opt->error,
                         "collkit-bench: bad value '%s' for --tag-capacity (expected a positive integer); %s", v,
                         usage);
                return -1;
            }
            opt->tag_capacity = (size_t)c;
            continue;
        }
#endif
        if (strcmp(a, "--version") == 0) {
#ifdef CK_NCCL
            printf("collkit-bench %s (nccl backend, NCCL %d.%d.%d headers)\n", COLLKIT_VERSION, NCCL_MAJOR,
                   NCCL_MINOR, NCCL_PATCH);
#else
            printf("collkit-bench %s\n", COLLKIT_VERSION);
#endif
            return 1;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("%s\n", usage);
            return 1;
        }
        const char **slot = strcmp(a, "--points") == 0 ? &opt->points : strcmp(a, "--out") == 0 ? &opt->out : NULL;
        if (slot == NULL) {
            snprintf(opt->error, sizeof opt->error, "collkit-bench: unknown argument '%s'; %s", a, usage);
            return -1;
        }
        if (i + 1 >= argc) {
            snprintf(opt->error, sizeof opt->error, "collkit-bench: %s needs a value; %s", a, usage);
            return -1;
        }
        *slot = argv[++i];
    }
    if (opt->points == NULL || opt->out == NULL) {
        snprintf(opt->error, sizeof opt->error, "collkit-bench: --points and --out are required; %s", usage);
        return -1;
    }
    return 0;
}

/* The harness lost step with itself (its own messages failed, or rank 0
 * cannot write): nothing sensible can follow, so end the whole launch. */
static void die(MPI_Comm comm, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("collkit-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    MPI_Abort(comm, 1);
    exit(1);
}

static void die_mpi(MPI_Comm comm, const char *what, int code)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "MPI error %d", code);
    die(comm, "%s: %s", what, s);
}

/* A problem some ranks may have (e.g. reading the points file): if any rank
 * has one, rank 0 prints the lowest such rank's line. Returns 1 when there
 * was a problem anywhere. */
static int agree_problem(int have, const char *msg, int rank, int p, MPI_Comm comm)
{
    double mark = agree_mark(have, rank, p);
    int rc = agree_max(&mark, 1, comm);
    if (rc != MPI_SUCCESS) die_mpi(comm, "agreement failed", rc);
    int src = agree_marked_rank(mark, p);
    if (src < 0) return 0;
    char text[BENCH_TEXT_LEN] = "";
    rc = agree_text_to_root(src, msg, text, rank, comm);
    if (rc != MPI_SUCCESS) die_mpi(comm, "agreement failed", rc);
    if (rank == 0) fprintf(stderr, "%s\n", text);
    return 1;
}

/* MPICH's version text spans many lines (configure options included); a
 * record field is one line. */
static void one_line(char *s)
{
    size_t w = 0;
    int space = 1; /* drops leading blanks and runs of blanks */
    for (size_t r = 0; s[r]; r++) {
        char ch = s[r];
        int blank = ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t' || ch == '\v' || ch == '\f';
        if (blank) {
            if (!space) s[w++] = ' ';
            space = 1;
        } else {
            s[w++] = ch;
            space = 0;
        }
    }
    while (w > 0 && s[w - 1] == ' ') w--;
    s[w] = '\0';
}

/* Every rank's string of `width` bytes at rank 0: *block holds them, the result points
 * at each, terminated (NULL on the other ranks). libcollkit's gather, not MPI_Gather:
 * the library's gather may be forced. Binomial, not linear: a root waiting on p - 1
 * receives at once costs SimGrid 3.32 time cubic in p (its waitall is a loop of
 * waitany, each scanning every pending request): at 4,096 simulated ranks the host
 * names' gather did not finish in 15 minutes (issue #21). */
static const char **gather_strings(char *mine, int width, int rank, int p, MPI_Comm comm, char **block,
                                   const char *what)
{
    if (rank == 0 && !(*block = calloc((size_t)p, (size_t)width))) die(comm, "out of memory gathering %s", what);
    int rc = ck_gather_binomial(mine, *block, (size_t)width, MPI_CHAR, 0, comm);
    if (rc != MPI_SUCCESS) {
        char doing[64];
        snprintf(doing, sizeof doing, "gathering %s", what);
        die_mpi(comm, doing, rc);
    }
    if (rank != 0) return NULL;
    const char **each = calloc((size_t)p, sizeof *each);
    if (each == NULL) die(comm, "out of memory listing %s", what);
    for (int r = 0; r < p; r++) {
        char *s = *block + (size_t)r * (size_t)width;
        s[width - 1] = '\0';
        each[r] = s;
    }
    return each;
}

static void write_launch(FILE *out, int rank, int p, MPI_Comm comm, double floor_us)
{
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    memset(name, 0, sizeof name);
    if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS) snprintf(name, sizeof name, "<unknown>");
    name[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    char *all = NULL;
    const char **hosts = gather_strings(name, MPI_MAX_PROCESSOR_NAME, rank, p, comm, &all, "host names");
    /* Each rank's CPUs: more ranks on a host than CPUs among them is oversubscribed. */
    char mine[CPU_LIST_LEN], *cpus_all = NULL;
    cpu_list(mine, sizeof mine);
    const char **cpus = gather_strings(mine, CPU_LIST_LEN, rank, p, comm, &cpus_all, "CPU lists");
    if (rank != 0) return;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS) snprintf(lib, sizeof lib, "<unknown>");
    lib[sizeof lib - 1] = '\0';
    one_line(lib);
    int major = 0, minor = 0;
    MPI_Get_version(&major, &minor);
    char ver[32];
    snprintf(ver, sizeof ver, "%d.%d", major, minor);
    int *global = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag);
    launch_info li = {p, lib, ver, COLLKIT_VERSION, hosts, flag && global ? *global : 0, MPI_Wtick(),
                      floor_us, cpus};
    if (record_launch(out, &li) != 0) die(comm, "cannot write the launch record: %s", strerror(errno));
    free(hosts);
    free(all);
    free(cpus);
    free(cpus_all);
}

/* Rank 0 reads the point's readback variables; NULL-safe and bounded. */
typedef struct {
    record_kv *kv;
    size_t n;
    char *names; /* one copy of the list, split in place */
    /* Room for a path: a tuning file's name read back (campaign/tuning.py) lies
     * deep in a campaign directory, and a cut one would not match the launch's. */
    char (*values)[1024];
} effective_list;

static void effective_free(effective_list *e)
{
    free(e->kv);
    free(e->names);
    free(e->values);
    memset(e, 0, sizeof *e);
}

static int effective_read(const mpit_session *s, const char *list, MPI_Comm comm, effective_list *e)
{
    memset(e, 0, sizeof *e);
    if (list[0] == '\0') return 0;
    size_t n = 1;
    for (const char *q = list; *q; q++) n += *q == ',';
    size_t len = strlen(list) + 1;
    e->names = malloc(len);
    e->kv = calloc(n, sizeof *e->kv);
    e->values = calloc(n, sizeof *e->values);
    if (!e->names || !e->kv || !e->values) {
        effective_free(e);
        return -1;
    }
    memcpy(e->names, list, len);
    char *save = NULL;
    for (char *tok = strtok_r(e->names, ",", &save); tok && e->n < n; tok = strtok_r(NULL, ",", &save)) {
        if (strncmp(tok, "NCCL_", 5) == 0) {
            /* NCCL's knobs are environment variables read at communicator
             * creation, not MPI_T variables: the record shows what this
             * launch ran under ("<unset>": NCCL's own choice). */
            const char *v = getenv(tok);
            snprintf(e->values[e->n], sizeof e->values[e->n], "%s", v != NULL ? v : "<unset>");
        } else {
            mpit_read(s, tok, comm, e->values[e->n], sizeof e->values[e->n]);
        }
        e->kv[e->n].name = tok;
        e->kv[e->n].value = e->values[e->n];
        e->n++;
    }
    return 0;
}

/* At most this many NAME:VALUE settings per point. */
#define BENCH_MAX_SETTINGS 8

/* Applies a point's `set` list; on failure undoes what it set and returns -1
 * with the reason. */
static int apply_settings(const mpit_session *s, const char *list, mpit_saved *saved, size_t *nsaved,
                          char *why, size_t whylen)
{
    *nsaved = 0;
    if (list[0] == '\0') return 0;
    char buf[1024];
    if (strlen(list) >= sizeof buf) {
        snprintf(why, whylen, "the point's settings are too long");
        return -1;
    }
    strcpy(buf, list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        *colon = '\0';
        if (*nsaved == BENCH_MAX_SETTINGS) {
            snprintf(why, whylen, "more than %d settings in one point", BENCH_MAX_SETTINGS);
        } else if (mpit_set(s, tok, colon + 1, &saved[*nsaved], why, whylen) == 0) {
            (*nsaved)++;
            continue;
        }
        for (size_t k = *nsaved; k-- > 0;) mpit_restore(s, &saved[k]);
        *nsaved = 0;
        return -1;
    }
    return 0;
}

static FILE *open_out(const char *path, char *err, size_t errlen)
{
    if (strcmp(path, "-") == 0) return stdout;
    /* Appended to, never truncated: a rerun must not destroy records that a
     * previous launch already delivered to the same file. */
    FILE *f = fopen(path, "a");
    if (f == NULL) snprintf(err, errlen, "collkit-bench: cannot open %s: %s", path, strerror(errno));
    return f;
}

int main(int argc, char **argv)
{
    options opt;
    int args = parse_args(argc, argv, &opt);
    if (args == 1) return 0;

    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "collkit-bench: MPI_Init failed\n");
        return 1;
    }
    MPI_Comm comm = MPI_COMM_WORLD, ctrl = MPI_COMM_NULL;
    /* Errors of the measured call must come back as codes (a `failed`
     * record), not abort the launch. */
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* The harness's own messages get a communicator of their own, so that a
     * broken algorithm's stray messages on the measured one can never match
     * them. MPI_Comm_dup is the one MPI-library collective the harness runs
     * (once, before any point): no measurement can be affected by it. */
    if (MPI_Comm_dup(comm, &ctrl) != MPI_SUCCESS) die(comm, "cannot duplicate MPI_COMM_WORLD");
    int rank = 0, p = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    steady_test_begin();
    slow_launch_begin(opt.points);

    if (args < 0) {
        if (rank == 0) fprintf(stderr, "%s\n", opt.error);
        MPI_Comm_free(&ctrl);
        MPI_Finalize();
        return 2;
    }
#ifdef SMPI_H
    /* The agreements need SimGrid's actors to run one at a time
     * (sim_board.c); every rank reads the same configuration, so every rank
     * stops here without a message. */
    char refused[BENCH_TEXT_LEN];
    if (sim_board_refused(refused, sizeof refused)) {
        if (rank == 0) fprintf(stderr, "%s\n", refused);
        MPI_Comm_free(&ctrl);
        MPI_Finalize();
        return 2;
    }
#endif

    /* Every rank reads the file itself: no message needed to share it, and
     * the agreement below still prints one line if any rank fails. */
    point_list pl;
    char err[BENCH_TEXT_LEN] = "";
    int bad = points_parse(opt.points, &pl, err, sizeof err) != 0;
    if (agree_problem(bad, err, rank, p, ctrl)) {
        points_free(&pl);
        MPI_Comm_free(&ctrl);
        MPI_Finalize();
        return 2;
    }

    /* The GPU and NCCL communicator, once per launch and only when a point
     * asks for nccl: a launch without nccl points runs on a machine without
     * a GPU like the CPU build. No GPU (or no NCCL in this build) ends the
     * launch before any point with one line, exit 2, like a bad points file
     * (and, like it, before the output file is opened). */
    int want_nccl = 0;
    for (size_t i = 0; i < pl.n; i++) want_nccl |= pl.v[i].backend == BK_NCCL;
    bench_device *dev = NULL;
#ifdef CK_NCCL
    if (want_nccl) {
        err[0] = '\0';
        dev = device_open(ctrl, rank, p, err, sizeof err);
        if (dev == NULL) {
            if (rank == 0) fprintf(stderr, "%s\n", err);
            points_free(&pl);
            MPI_Comm_free(&ctrl);
            MPI_Finalize();
            return 2;
        }
        if (rank == 0) {
            char what[512];
            device_describe(dev, what, sizeof what);
            fprintf(stderr, "collkit-bench: rank 0 on %s\n", what);
        }
    }
#else
    if (agree_problem(want_nccl,
                      "collkit-bench: the points ask for the nccl backend, which this collkit-bench was built "
                      "without; launch collkit-bench-nccl (configure with -DCOLLKIT_NCCL=ON, docs/gpu.md)",
                      rank, p, ctrl)) {
        points_free(&pl);
        MPI_Comm_free(&ctrl);
        MPI_Finalize();
        return 2;
    }
#endif

    FILE *out = NULL;
    err[0] = '\0';
    if (rank == 0) out = open_out(opt.out, err, sizeof err);
    if (agree_problem(rank == 0 && out == NULL, err, rank, p, ctrl)) {
#ifdef CK_NCCL
        device_close(dev);
#endif
        points_free(&pl);
        MPI_Comm_free(&ctrl);
        MPI_Finalize();
        return 2;
    }

    /* The launch warm-up, before anything is timed (the floor included): the
     * longest any point asks for; the CLI writes one value for all of them
     * (docs/bench-protocol.md, "Steady state"). */
    double launch_warmup_s = 0.0;
    for (size_t i = 0; i < pl.n; i++)
        if (pl.v[i].launch_warmup_s > launch_warmup_s) launch_warmup_s = pl.v[i].launch_warmup_s;
    int wrc = steady_launch_warmup(comm, ctrl, rank, p, launch_warmup_s);
    if (wrc != MPI_SUCCESS) die_mpi(comm, "the launch warm-up's messages failed", wrc);

    /* The one-message floor, once per launch, on the control communicator
     * before any point (docs/bench-protocol.md, "Implausible times"). */
    double floor_us = 0.0;
    int frc = sync_floor_us(ctrl, rank, p, &floor_us);
    if (frc != MPI_SUCCESS) die_mpi(comm, "measuring the one-message floor", frc);
    /* Test-only: a floor set from outside, so that a test can make every
     * point "too fast" without a machine that mismeasures (tests/bench). */
    const char *test_floor = getenv("COLLKIT_BENCH_TEST_FLOOR_US");
    if (rank == 0 && test_floor != NULL && *test_floor != '\0') floor_us = strtod(test_floor, NULL);
    write_launch(out, rank, p, ctrl, floor_us);

#ifdef CK_INSTRUMENT
    /* Allocated once, here, so that the measured calls never allocate. */
    if (agree_problem(instr_setup(opt.tag_capacity) != MPI_SUCCESS,
                      "collkit-bench: out of memory allocating the tag record buffer", rank, p, ctrl)) {
        if (out != NULL && out != stdout) fclose(out);
        points_free(&pl);
        MPI_Comm_free(&ctrl);
        MPI_Finalize();
        return 1;
    }
#endif

    mpit_session mpit = {0};
    int want_read = 0, want_set = 0;
    for (size_t i = 0; i < pl.n; i++) {
        want_read |= pl.v[i].readback[0] != '\0';
        want_set |= pl.v[i].set[0] != '\0';
    }
    /* Settings are written on every rank (they are per process); readback is
     * rank 0's alone. */
    if (want_set || (rank == 0 && want_read)) (void)mpit_open(&mpit);

    for (size_t i = 0; i < pl.n; i++) {
        const bench_point *pt = &pl.v[i];
#ifdef SMPI_H
        /* SimGrid reports on stderr what a simulated collective did instead
         * of the forced algorithm ("count < size, use default"); one process
         * runs every rank, so this line tells collkit which point the
         * messages that follow belong to. */
        if (rank == 0) fprintf(stderr, "collkit-bench: point %s\n", pt->id);
#endif
        point_result res;
        mpit_saved saved[BENCH_MAX_SETTINGS];
        size_t nsaved = 0;
        char why[BENCH_TEXT_LEN] = "";
        int set_failed = apply_settings(&mpit, pt->set, saved, &nsaved, why, sizeof why) != 0;
        /* A setting that one rank could not make fails the point everywhere;
         * rank 0 reports the first rank's reason. */
        double mark = agree_mark(set_failed, rank, p);
        int rc = agree_max(&mark, 1, ctrl);
        if (rc != MPI_SUCCESS) die_mpi(comm, "agreement failed", rc);
        int src = agree_marked_rank(mark, p);
        effective_list eff = {0};
        /* Read before the point runs (after its settings): a point that
         * crashes should not take the readback with it. */
        if (rank == 0 && effective_read(&mpit, pt->readback, comm, &eff) != 0)
            die(comm, "out of memory reading control variables");
        if (src >= 0) {
            memset(&res, 0, sizeof res);
            res.status = ST_FAILED;
            rc = agree_text_to_root(src, why, res.reason, rank, ctrl);
            if (rc != MPI_SUCCESS) die_mpi(comm, "agreement failed", rc);
        } else {
            /* comm=fresh: the library reads the point's settings when a communicator
             * is made (Open MPI's coll/tuned), so its calls run on one made now. */
            MPI_Comm measured = comm;
            if (pt->fresh_comm && MPI_Comm_dup(comm, &measured) != MPI_SUCCESS)
                die(comm, "cannot duplicate MPI_COMM_WORLD for point '%s'", pt->id);
            if (pt->fresh_comm) MPI_Comm_set_errhandler(measured, MPI_ERRORS_RETURN);
            rc = run_point(pt, measured, ctrl, dev, &res);
            if (rc != MPI_SUCCESS) die_mpi(comm, "harness messages failed", rc);
            if (pt->fresh_comm) MPI_Comm_free(&measured);
        }
        for (size_t k = nsaved; k-- > 0;) mpit_restore(&mpit, &saved[k]);
        if (rank == 0 && record_point(out, pt, p, &res, eff.kv, eff.n, floor_us) != 0)
            die(comm, "cannot write the record of point '%s': %s", pt->id, strerror(errno));
        point_result_free(&res);
        effective_free(&eff);
    }

    mpit_close(&mpit);
    steady_test_end(rank);
#ifdef CK_NCCL
    device_close(dev);
#endif
#ifdef CK_INSTRUMENT
    instr_teardown();
#endif
    if (out != NULL && out != stdout && fclose(out) != 0)
        die(comm, "cannot close %s: %s", opt.out, strerror(errno));
    points_free(&pl);
    MPI_Comm_free(&ctrl);
    MPI_Finalize();
    return 0;
}
