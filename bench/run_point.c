/*
 * One point: preflight, buffers, warm-up, timed rounds.
 *
 * Every decision that changes what the ranks do next (stop, fail, round
 * size) is taken from values every rank holds identically after an
 * agreement, so the ranks never disagree about how many calls to make. An
 * error of the measured call is agreed at the end of the round (with the
 * dissemination barrier, already before the next call: the failure travels
 * in the barrier and every rank stops calling at once). The harness's own
 * messages travel on a communicator of their own, so whatever a broken
 * algorithm leaves unmatched on the measured one can never be mistaken for
 * them.
 */
#include "run_point.h"

#include "backend.h"
#include "conditions.h"
#include "per_rank.h"
#include "slow_launch.h"
#include "stats.h"
#include "steady.h"
#include "sync.h"
#include "validate.h"

#ifdef CK_NCCL
#include "device.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Upper bound on one round's iterations: the per-round arrays travel in one
 * allreduce, and a bounded round keeps that message (and the time between
 * agreements) bounded even when max_iters is huge. */
#define ROUND_CAP 65536L

/* Window length = 2 x the slowest warm-up cycle (fill + call, and the check
 * when every iteration is validated) across ranks + this margin: the factor
 * absorbs ordinary jitter, the margin covers the wait loop's own overhead and
 * clock offset error on tiny calls. */
#define WINDOW_MARGIN_S 20e-6
/* Under SimGrid with no warm-up to size them: windows of a simulated second,
 * longer than any call simulated here takes (a later window of a call that
 * took longer starts late: dropped, and the windows double, as anywhere). */
#define SIM_WINDOW_S 1.0

const char *status_name(point_status s)
{
    switch (s) {
    case ST_OK: return "ok";
    case ST_INVALID: return "invalid";
    default: return "failed";
    }
}

void point_result_free(point_result *res)
{
    free(res->times_us);
    per_rank_summary_free(res->per_rank);
#ifdef CK_INSTRUMENT
    instr_summary_free(res->instr);
#endif
    memset(res, 0, sizeof *res);
}

typedef struct {
    const bench_point *pt;
    MPI_Comm comm; /* the measured call's */
    MPI_Comm ctrl; /* the harness's own messages */
    int rank, p;
    ckv_case vc;         /* the point on this rank, as the validator sees it */
    ckv_buffers buf;     /* its buffers, with guards; the iteration is the seed */
    const ck_algorithm *alg;
    backend_call call;
    int err_code;        /* first error of the measured call here */
    char err_msg[BENCH_TEXT_LEN];
    int invalid;         /* first mismatch found here */
    char inv_msg[BENCH_TEXT_LEN];
    long validated;
    int filled;          /* the buffers hold a fill (refill_needed) */
    double test_delay_s; /* test-only slowdown of the measured call (test_delay_of) */
    long ramp_calls;     /* test-only slow start (steady_test_ramp): its length in calls, */
    double ramp_s;       /* the first call's extra time, */
    long calls;          /* and the measured calls made so far */
    double rank_delay_s; /* test-only: this rank's calls made slower (per_rank_test_delay) */
    double launch_delay_s; /* test-only: this launch made slower (slow_launch_delay) */
    int per_rank;        /* granularity = ranks or program conditions: keep this rank's times (per_rank.h) */
    int program;         /* conditions = program: back to back, paced (conditions.h) */
    program_pacer pace;
    per_rank_acc pr;
    int have_offset;     /* window sync estimated the clock offset: per_rank_end reuses it */
    double offset, offset_error;
    bench_device *dev;   /* collkit-bench-nccl: the GPU, NULL otherwise */
#ifdef CK_NCCL
    device_mirror dm;    /* nccl points: the device copies of buf */
#endif
#ifdef CK_INSTRUMENT
    int record_tags;     /* timed iterations: tags on around the call */
    instr_acc ia;
#endif
} runner;

/* Test-only: COLLKIT_BENCH_TEST_SLOW="COLLECTIVE/BACKEND:ALGORITHM=MICROSECONDS"
 * adds a busy wait of that length inside the timed region of every call of
 * the matching points, so that tests of `collkit compare` can make one
 * algorithm really slower (docs/bench-protocol.md). Unset or not matching: 0. */
static double test_delay_of(const bench_point *pt)
{
    const char *v = getenv("COLLKIT_BENCH_TEST_SLOW");
    if (v == NULL || *v == '\0') return 0.0;
    char want[256];
    snprintf(want, sizeof want, "%s/%s:%s=", ck_collective_name(pt->coll),
             backend_name(pt->backend), pt->algorithm);
    size_t n = strlen(want);
    if (strncmp(v, want, n) != 0) return 0.0;
    double us = strtod(v + n, NULL);
    return us > 0.0 && us < 1e7 ? us * 1e-6 : 0.0;
}

/* Checks that depend only on the point and p, so every rank reaches the same
 * verdict without a message. Returns 0 or 1 with res failed. */
static int preflight(runner *r, point_result *res)
{
    const bench_point *pt = r->pt;
    r->test_delay_s = test_delay_of(pt);
    r->rank_delay_s = per_rank_test_delay(r->rank);
    r->launch_delay_s = slow_launch_delay(pt);
    steady_test_ramp(pt, &r->ramp_calls, &r->ramp_s);
    if (pt->backend == BK_COLLKIT) {
        r->alg = backend_collkit_find(pt->coll, pt->algorithm);
        if (r->alg == NULL) {
            res->status = ST_FAILED;
            snprintf(res->reason, sizeof res->reason, "unknown collkit algorithm '%s' for %s",
                     pt->algorithm, ck_collective_name(pt->coll));
            return 1;
        }
    }
    if (pt->backend == BK_NCCL) {
        /* main.c refuses nccl points before any runs where they cannot
         * (no NCCL in this build, no GPU): these are per-point limits. */
#ifdef CK_NCCL
        const char *why = r->dev == NULL ? "no GPU was set up for this launch" : device_unsupported(pt);
#else
        const char *why = "this collkit-bench was built without NCCL (COLLKIT_NCCL)";
#endif
        if (why != NULL) {
            res->status = ST_FAILED;
            snprintf(res->reason, sizeof res->reason, "nccl %s: %s", ck_collective_name(pt->coll), why);
            return 1;
        }
    }
#ifdef SMPI_H
    /* The pacing spins on MPI_Wtime, which only MPI calls advance under
     * SimGrid: the wait would never end (the CLI refuses such a spec too). */
    if (pt->conditions == COND_PROGRAM) {
        res->status = ST_FAILED;
        snprintf(res->reason, sizeof res->reason, "conditions=program cannot run under SimGrid");
        return 1;
    }
#endif
    if (pt->conditions == COND_PROGRAM && pt->program.ranks != r->p) {
        res->status = ST_FAILED;
        snprintf(res->reason, sizeof res->reason, "skew_us gives %d ranks' quantiles, the launch has %d ranks",
                 pt->program.ranks, r->p);
        return 1;
    }
    if (ck_collective_has_root(pt->coll) && (pt->root < 0 || pt->root >= r->p)) {
        res->status = ST_FAILED;
        snprintf(res->reason, sizeof res->reason, "root %d out of range for %d ranks", pt->root, r->p);
        return 1;
    }
    r->vc = (ckv_case){.coll = ck_collective_describe(pt->coll),
                       .dtype = pt->dtype,
                       .op = pt->op,
                       .count = pt->count,
                       .root = pt->root,
                       .in_place = pt->in_place,
                       .rank = r->rank,
                       .p = r->p,
                       /* the library's algorithms: only what MPI promises */
                       .past_result_free = pt->backend != BK_COLLKIT};
    ckv_layout lay;
    if (ckv_layout_of(&r->vc, &lay) != 0) {
        res->status = ST_FAILED;
        snprintf(res->reason, sizeof res->reason,
                 "buffer size overflows: %d ranks x count %zu x %zu-byte elements", r->p, pt->count,
                 pt->dtype->size);
        return 1;
    }
    if (pt->count > CK_MAX_COUNT) {
        res->status = ST_FAILED;
        snprintf(res->reason, sizeof res->reason,
                 "count %zu exceeds the largest count one call takes (%zu)", pt->count, CK_MAX_COUNT);
        return 1;
    }
    r->call.coll = pt->coll;
    r->call.count = pt->count;
    r->call.dt = ck_datatype_mpi(pt->dtype);
    r->call.op = ckv_op_mpi(pt->op);
    r->call.root = pt->root;
    return 0;
}

/* Allocates this rank's buffers and agrees on the outcome. Returns an MPI
 * code of the control traffic; *ok tells whether every rank succeeded. */
static int allocate(runner *r, point_result *res, int *ok)
{
    size_t es = r->pt->dtype->size;
    int failed = 0;
    char msg[BENCH_TEXT_LEN] = "";
    if (ckv_buffers_alloc(&r->vc, &r->buf) != 0) {
        /* preflight checked the sizes: only memory can be short here */
        ckv_layout lay;
        (void)ckv_layout_of(&r->vc, &lay);
        failed = 1;
        snprintf(msg, sizeof msg, "out of memory: rank %d cannot allocate its buffers (%zu + %zu bytes)",
                 r->rank, lay.send_elems * es, lay.recv_elems * es);
    }
#ifdef CK_NCCL
    char why[BENCH_TEXT_LEN / 2]; /* room for the prefix in msg */
    if (!failed && r->pt->backend == BK_NCCL && device_mirror_alloc(&r->buf, &r->dm, why, sizeof why) != 0) {
        failed = 1;
        snprintf(msg, sizeof msg, "rank %d cannot allocate its device buffers: %s", r->rank, why);
    }
#endif
    double mark = agree_mark(failed, r->rank, r->p);
    int rc = agree_max(&mark, 1, r->ctrl);
    if (rc != MPI_SUCCESS) return rc;
    int src = agree_marked_rank(mark, r->p);
    *ok = src < 0;
    if (src >= 0) {
        res->status = ST_FAILED;
        return agree_text_to_root(src, msg, res->reason, r->rank, r->ctrl);
    }
    return MPI_SUCCESS;
}

static void note_error(runner *r, int code)
{
    if (r->err_code != MPI_SUCCESS) return;
    r->err_code = code;
    int len = 0;
    char s[MPI_MAX_ERROR_STRING];
    if (MPI_Error_string(code, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "MPI error %d", code);
    snprintf(r->err_msg, sizeof r->err_msg, "%s", s);
}

#ifdef CK_NCCL
/* An error of the device side (NCCL or CUDA), reported like an MPI one. */
static void note_error_text(runner *r, const char *text)
{
    if (r->err_code != MPI_SUCCESS) return;
    r->err_code = MPI_ERR_OTHER;
    snprintf(r->err_msg, sizeof r->err_msg, "%s", text);
}
#endif

/* The measured call by backend; for nccl the stream is synchronised
 * before it returns. */
static int measured_call(runner *r)
{
    const void *sarg = ckv_send_arg(&r->buf);
    void *rarg = ckv_recv_arg(&r->buf);
    switch (r->pt->backend) {
    case BK_MPI: return backend_mpi_call(&r->call, sarg, rarg, r->comm);
    case BK_COLLKIT: return backend_collkit_call(r->alg, &r->call, sarg, rarg, r->comm);
    default: break;
    }
#ifdef CK_NCCL
    char why[BENCH_TEXT_LEN];
    if (backend_nccl_call(r->dev, r->pt, &r->buf, &r->dm, r->rank, r->p, why, sizeof why) != 0) {
        note_error_text(r, why);
        return r->err_code;
    }
    return MPI_SUCCESS;
#else
    return MPI_ERR_OTHER; /* preflight refused the point */
#endif
}

static void validate(runner *r, long it)
{
    r->validated++;
    if (!r->invalid && ckv_check(&r->vc, &r->buf, (uint64_t)it, r->inv_msg, sizeof r->inv_msg))
        r->invalid = 1;
}

/* Whether this iteration fills the buffers. A fill is only needed for a
 * result to be checked against: when nothing of the point is validated, one
 * fill serves every iteration (filling was over 90 % of the host time of
 * large simulated points, issue #21; untimed either way). In-place points
 * refill anyway: their call overwrites its own input, and results fed back
 * as inputs could drift into values (floating-point overflow, subnormals)
 * that change the measured time. Under SimGrid an unvalidated point is not
 * filled at all: simulated time never depends on the contents (local work is
 * charged by bytes, lib/core/buffer.c), and untouched pages of the
 * simulated ranks' buffers cost the host neither time nor memory. */
static int refill_needed(const runner *r, int check)
{
    /* Program conditions: a fill between back-to-back calls is time the
     * program does not spend there, so only the calls whose result is checked
     * (and in-place ones, as below) get a fresh one. */
    if (r->program) return !r->filled || check || r->pt->in_place;
#ifdef SMPI_H
    if (r->pt->validate == VAL_NONE) return 0;
#endif
#ifdef CK_NCCL
    /* nccl points: a fill only matters once it is copied to the device, and
     * copying whole buffers over PCIe every iteration (pageable memory, a few
     * GB/s) made a 256 MiB point take minutes for a 0.3 ms collective. So the
     * host fills, and the device gets, fresh inputs for the iterations whose
     * result is checked (all of them for validate = all, which also keeps the
     * window warm-up's timed check honest), in place ones, and the first. */
    if (r->pt->backend == BK_NCCL)
        return !r->filled || check || r->pt->validate == VAL_ALL || r->pt->in_place;
#else
    (void)check;
#endif
    return !r->filled || r->pt->validate != VAL_NONE || r->pt->in_place;
}

/* SEP_PROGRAM: no separation, the rank's pacing (conditions = program). */
typedef enum { SEP_DISSEMINATION, SEP_BARRIER, SEP_WINDOW, SEP_PROGRAM } separator;

/* What separates the untimed iterations (warm-up, windows: no windows exist
 * yet, so window points warm up behind barriers) or the timed ones. */
static separator separator_of(const runner *r, int timed)
{
    if (r->program) return SEP_PROGRAM;
    if (r->pt->sync == SYNC_MPI_BARRIER) return SEP_BARRIER;
    return timed && r->pt->sync == SYNC_WINDOW ? SEP_WINDOW : SEP_DISSEMINATION;
}

typedef struct {
    double seconds; /* this rank's time of the call */
    double entry, exit; /* MPI_Wtime at the call's entry and exit (granularity = ranks) */
    int late;       /* window: the start had passed on arrival */
    double cycle;   /* fill + call + check: all but the wait, for sizing windows */
} iter_out;

/* One iteration: fill, separate, call, and (if asked) check. `start` is the
 * window start on this rank's clock when sep is SEP_WINDOW. Returns an MPI
 * code of the control traffic. */
static int iteration(runner *r, long it, separator sep, double start, int check, iter_out *o)
{
    o->seconds = 0.0;
    o->entry = o->exit = 0.0;
    o->late = 0;
    double c0 = MPI_Wtime();
    int refill = refill_needed(r, check);
    if (refill) {
        ckv_fill(&r->vc, &r->buf, (uint64_t)it);
        r->filled = 1;
    }
#ifdef CK_NCCL
    char why[BENCH_TEXT_LEN];
    /* The device's inputs change only with a fill (refill_needed). */
    if (refill && r->pt->backend == BK_NCCL && r->err_code == MPI_SUCCESS &&
        device_push(&r->buf, &r->dm, why, sizeof why) != 0)
        note_error_text(r, why);
#endif
    double c1 = MPI_Wtime();
    /* Only the dissemination barrier tells every rank about an error at
     * once; otherwise a rank with an error keeps calling like the others, so
     * that no rank waits inside a call for a peer that stopped. */
    int skip = r->err_code != MPI_SUCCESS;
    if (sep == SEP_DISSEMINATION) {
        int rc = sync_dissemination(r->ctrl, r->rank, r->p, &skip);
        if (rc != MPI_SUCCESS) return rc;
    } else if (sep == SEP_BARRIER) {
        /* On the measured communicator, and possibly forced like the call
         * itself: its failure is the point's, not the harness's. */
        int rc = MPI_Barrier(r->comm);
        if (rc != MPI_SUCCESS) note_error(r, rc);
        skip = 0;
    } else if (sep == SEP_PROGRAM) {
        /* As with MPI_Barrier: a rank with an error keeps calling like the
         * others; the round's agreement ends the point. */
        program_pacer_wait(&r->pace);
        skip = 0;
    } else {
        o->late = sync_wait_until(start);
        skip = 0;
    }
    double c2 = MPI_Wtime();
    if (!skip) {
        /* Window timing runs from the common start (late ranks included),
         * so that the slowest rank's time is what a simultaneous start gives. */
#ifdef CK_INSTRUMENT
        /* Tags of the measured call only: never the harness's own traffic
         * (which runs libcollkit too) nor warm-ups. */
        if (r->record_tags) ck_spans_enable(1);
#endif
        double t0 = sep == SEP_WINDOW ? start : MPI_Wtime();
        /* A window's time runs from the common start; where a rank really
         * entered is read only when the record keeps it (granularity = ranks),
         * so the default's timed region has no extra clock read. */
        o->entry = sep == SEP_WINDOW && r->per_rank ? MPI_Wtime() : t0;
        int rc = measured_call(r);
        if (r->test_delay_s > 0.0)
            for (double until = MPI_Wtime() + r->test_delay_s; MPI_Wtime() < until;) continue;
        double t1 = MPI_Wtime();
#ifdef CK_INSTRUMENT
        ck_spans_enable(0);
#endif
        if (sep == SEP_PROGRAM) program_pacer_exit(&r->pace, t1);
        o->seconds = t1 - t0;
        o->exit = t1;
        /* Test-only slow rank: added like the slow start below, for the same
         * reason (a busy wait is preempted for tens of ms when oversubscribed). */
        o->seconds += r->rank_delay_s + r->launch_delay_s;
        o->exit += r->rank_delay_s + r->launch_delay_s;
        /* The test-only slow start is added, not waited: on an oversubscribed
         * test machine a busy wait is preempted for tens of ms (20 ms waits
         * measured 17-180 ms), which drowned the ramp the tests look for. */
        o->seconds += steady_test_ramp_s(r->calls, r->ramp_calls, r->ramp_s);
        r->calls++;
#ifdef CK_NCCL
        /* Back to the host when a check reads it: this iteration's, or the
         * window warm-up's timed check under validate = all. */
        if (rc == MPI_SUCCESS && r->pt->backend == BK_NCCL && (check || r->pt->validate == VAL_ALL) &&
            device_pull(&r->buf, &r->dm, why, sizeof why) != 0) {
            note_error_text(r, why);
            rc = r->err_code;
        }
#endif
        if (rc != MPI_SUCCESS) note_error(r, rc);
        else if (check) validate(r, it);
    }
    o->cycle = (c1 - c0) + (MPI_Wtime() - c2);
    return MPI_SUCCESS;
}

/* After the warm-up and after every round: if any rank saw an error, every
 * rank learns it and rank 0 gets the lowest such rank's text. */
static int settle_error(runner *r, double err_mark_max, point_result *res)
{
    int src = agree_marked_rank(err_mark_max, r->p);
    if (src < 0) return MPI_SUCCESS;
    res->status = ST_FAILED;
    return agree_text_to_root(src, r->err_msg, res->reason, r->rank, r->ctrl);
}

/* After each of the harness's agreements under program conditions: the
 * ranks agree on a common schedule for the calls up to the next one
 * (conditions.h): the largest of their cycle estimates, call 0 on rank 0's
 * clock two cycles and SCHEDULE_AHEAD_S after it sent its time, far enough
 * ahead for the agreement to reach every rank (a rank it reaches late runs
 * behind the schedule for a while: back to back). The clock offset to rank 0
 * is measured once a point, and per_rank_end reuses it. */
#define SCHEDULE_AHEAD_S 100e-6
static int reschedule(runner *r)
{
    if (!r->program) return MPI_SUCCESS;
    if (!r->have_offset) {
        int rc = sync_clock_offset(r->ctrl, r->rank, r->p, &r->offset, &r->offset_error);
        if (rc != MPI_SUCCESS) return rc;
        r->have_offset = 1;
    }
    double v[2] = {program_pacer_cycle_s(&r->pace), r->rank == 0 ? MPI_Wtime() : -HUGE_VAL};
    int rc = agree_max(v, 2, r->ctrl);
    if (rc != MPI_SUCCESS) return rc;
    program_pacer_schedule(&r->pace, v[1] + 2.0 * v[0] + SCHEDULE_AHEAD_S + r->offset, v[0]);
    return MPI_SUCCESS;
}

/* Warm-up (or, for windows without warm-up, one untimed probe). Leaves the
 * slowest cycle across ranks in *max_cycle. */
static int warm_up(runner *r, point_result *res, long *it, double *max_cycle)
{
    const bench_point *pt = r->pt;
    int window = separator_of(r, 1) == SEP_WINDOW;
#ifdef SMPI_H
    /* No probe to size the windows: a simulated wait costs no host time, so a
     * long window (SIM_WINDOW_S) replaces it, and the call is simulated once. */
    long n = pt->warmup;
#else
    long n = pt->warmup > 0 ? pt->warmup : (window ? 1 : 0);
#endif
    separator sep = separator_of(r, 0);
    /* The check is timed (not reported) so that windows have room for it. */
    int check = window && pt->validate == VAL_ALL;
    double cycle = 0.0;
    for (long k = 0; k < n; k++) {
        iter_out o;
        int rc = iteration(r, (*it)++, sep, 0.0, 0, &o);
        if (rc != MPI_SUCCESS) return rc;
        if (check && r->err_code == MPI_SUCCESS) {
            double c0 = MPI_Wtime();
            char scratch[BENCH_TEXT_LEN];
            (void)ckv_check(&r->vc, &r->buf, (uint64_t)(*it - 1), scratch, sizeof scratch);
            o.cycle += MPI_Wtime() - c0;
        }
        if (o.cycle > cycle) cycle = o.cycle;
    }
    double v[2] = {agree_mark(r->err_code != MPI_SUCCESS, r->rank, r->p), cycle};
    int rc = agree_max(v, 2, r->ctrl);
    if (rc != MPI_SUCCESS) return rc;
    rc = reschedule(r);
    if (rc != MPI_SUCCESS) return rc;
    *max_cycle = v[1];
    return settle_error(r, v[0], res);
}

#ifndef SMPI_H /* settle() runs no windows under SimGrid */
/* Iterations per warm-up window for a call whose cycle (fill + call, slowest
 * rank) is `cycle`; 0: none. Long calls get shorter windows, or none: the
 * fewest windows a verdict can need must cost no more than half the point's
 * own timed part (min_iters calls or budget_s, the larger) nor than settle_s.
 * Five-call windows made the large points of examples/quickstart.toml (3
 * timed calls of ~20 ms) two to three times slower. A call too long for even
 * one-call windows dwarfs the start-up costs (ms, issue #32); the drift check
 * still watches its timed iterations. */
static long window_length(const bench_point *pt, double cycle)
{
    if (!(cycle > 0.0)) return STEADY_WINDOW;
    double own = fmax(pt->budget_s, (double)pt->min_iters * cycle);
    double fit = floor(fmin(pt->settle_s, 0.5 * own) / (STEADY_MIN_WINDOWS * cycle));
    return fit < 1.0 ? 0 : fit < (double)STEADY_WINDOW ? (long)fit : STEADY_WINDOW;
}
#endif

/* Warm-up windows after the fixed warm-up, until a window's median (of the
 * slowest rank per iteration) is no longer below the previous one's by more
 * than STEADY_TOLERANCE, or settle_s / STEADY_MAX_WINDOWS are spent: then the
 * point is marked unstable (docs/bench-protocol.md, "Steady state"). Every
 * decision is taken from the agreed maximum, so all ranks run the same
 * windows. Under SimGrid nothing runs: simulated time has no start-up costs,
 * and its host time is the scarce resource there (issue #21). */
static int settle(runner *r, point_result *res, long *it, double max_cycle)
{
    const bench_point *pt = r->pt;
#ifdef SMPI_H
    (void)pt, (void)res, (void)it, (void)max_cycle;
    return MPI_SUCCESS;
#else
    if (!(pt->settle_s > 0.0)) return MPI_SUCCESS;
    separator sep = separator_of(r, 0);
    long wlen = window_length(pt, max_cycle);
    if (wlen == 0) {
        /* The warm-up's slowest cycle may itself be a start-up cost (the
         * first call of a launch took ms in issue #32): one more call, agreed,
         * says whether the call is really that long. */
        iter_out o;
        int rc = iteration(r, (*it)++, sep, 0.0, 0, &o);
        if (rc != MPI_SUCCESS) return rc;
        double v[2] = {agree_mark(r->err_code != MPI_SUCCESS, r->rank, r->p), o.cycle};
        rc = agree_max(v, 2, r->ctrl);
        if (rc != MPI_SUCCESS) return rc;
        rc = reschedule(r);
        if (rc != MPI_SUCCESS) return rc;
        if (agree_marked_rank(v[0], r->p) >= 0) return settle_error(r, v[0], res);
        wlen = window_length(pt, v[1]);
        if (wlen == 0) return MPI_SUCCESS;
    }
    /* spent: the windows' iteration times (slowest rank each), added up like
     * budget_s adds up the kept ones. */
    double spent = 0.0, first = 0.0, prev = 0.0;
    for (long w = 0;; w++) {
        double v[STEADY_WINDOW + 1], scratch[STEADY_WINDOW];
        for (long j = 0; j < wlen; j++) {
            iter_out o;
            int rc = iteration(r, (*it)++, sep, 0.0, 0, &o);
            if (rc != MPI_SUCCESS) return rc;
            v[j] = o.seconds;
        }
        v[wlen] = agree_mark(r->err_code != MPI_SUCCESS, r->rank, r->p);
        int rc = agree_max(v, (size_t)wlen + 1, r->ctrl);
        if (rc != MPI_SUCCESS) return rc;
        rc = reschedule(r);
        if (rc != MPI_SUCCESS) return rc;
        res->settle_windows = w + 1;
        if (agree_marked_rank(v[wlen], r->p) >= 0) return settle_error(r, v[wlen], res);
        double med = stats_median(v, (size_t)wlen, scratch);
        for (long j = 0; j < wlen; j++) spent += v[j];
        if (w == 0) {
            first = prev = med; /* nothing to compare with yet */
            continue;
        }
        if (steady_window_settled(prev, med)) return MPI_SUCCESS;
        prev = med;
        if ((spent >= pt->settle_s && w + 1 >= STEADY_MIN_WINDOWS) || w + 1 >= STEADY_MAX_WINDOWS) {
            if (r->rank == 0)
                snprintf(res->unstable, sizeof res->unstable,
                         "warm-up did not settle: after %ld windows of %ld iterations (%.3g s) the window "
                         "median was still falling (first %.4g us, last %.4g us)",
                         w + 1, wlen, spent, first * 1e6, med * 1e6);
            return MPI_SUCCESS;
        }
    }
#endif
}

/* Rank 0, after the timed rounds of an ok point: the marks that the timed
 * iterations themselves give (steady.h). Returns -1 when out of memory. */
static int timed_marks(const bench_point *pt, point_result *res)
{
    if (res->unstable[0] != '\0') return 0;
    if (res->ntimes < (size_t)pt->min_iters) {
        snprintf(res->unstable, sizeof res->unstable,
                 "only %zu of min_iters=%ld timed iterations kept (%ld late) before max_iters=%ld", res->ntimes,
                 pt->min_iters, res->late, pt->max_iters);
        return 0;
    }
    return steady_drift(res->times_us, res->ntimes, res->unstable, sizeof res->unstable);
}

static void keep_time(point_result *res, double us, int *oom)
{
    if (*oom) return;
    if (res->ntimes == res->cap) {
        size_t cap = res->cap ? 2 * res->cap : 64;
        double *t = realloc(res->times_us, cap * sizeof *t);
        if (t == NULL) {
            *oom = 1;
            return;
        }
        res->times_us = t;
        res->cap = cap;
    }
    res->times_us[res->ntimes++] = us;
}

static long next_round(const bench_point *pt, long prev, long kept, double kept_sum)
{
    long need = pt->min_iters > kept ? pt->min_iters - kept : 0;
    long est = 0;
    if (kept_sum < pt->budget_s) {
        if (kept > 0 && kept_sum > 0.0) {
            double per_iter = kept_sum / (double)kept;
            double e = ceil((pt->budget_s - kept_sum) / per_iter);
            est = e > (double)ROUND_CAP ? ROUND_CAP : (long)e;
        } else {
            /* Nothing measured yet (all late, or a clock too coarse to see
             * the call): grow geometrically instead of guessing. */
            est = 2 * prev;
        }
    }
    long n = need > est ? need : est;
    return n > 0 ? n : 1;
}

static int timed_rounds(runner *r, point_result *res, long it, double max_cycle)
{
    const bench_point *pt = r->pt;
    separator sep = separator_of(r, 1);
    int window = sep == SEP_WINDOW;
    double offset = 0.0, win = 2.0 * max_cycle + WINDOW_MARGIN_S, ctrl_time = 0.0;
#ifdef SMPI_H
    if (!(max_cycle > 0.0)) win = SIM_WINDOW_S;
#endif
    int rc;
    if (window) {
        double c0 = MPI_Wtime();
        rc = sync_clock_offset(r->ctrl, r->rank, r->p, &offset, &r->offset_error);
        if (rc != MPI_SUCCESS) return rc;
        r->offset = offset;
        r->have_offset = 1;
        ctrl_time = (MPI_Wtime() - c0) / (r->p > 1 ? r->p - 1 : 1);
#ifdef SMPI_H
        /* No ping-pong ran (one simulated clock, offset 0): the time of one
         * agreement sizes how far ahead the first window starts instead. */
        double probe = 0.0;
        c0 = MPI_Wtime();
        rc = agree_max(&probe, 1, r->ctrl);
        if (rc != MPI_SUCCESS) return rc;
        ctrl_time = MPI_Wtime() - c0;
#endif
    }
    long attempted = 0, kept = 0, round = pt->min_iters;
    double kept_sum = 0.0;
    int oom = 0;
    for (;;) {
        long n = round;
        if (n > pt->max_iters - attempted) n = pt->max_iters - attempted;
        if (n > ROUND_CAP) n = ROUND_CAP;
        double sched[2] = {0.0, win};
        if (window) {
            /* Far enough ahead for the schedule to reach every rank (twice the
             * last control exchange) and for the first fill (one window). */
            if (r->rank == 0) sched[0] = MPI_Wtime() + 2.0 * ctrl_time + win;
            rc = agree_bcast(sched, 2, r->ctrl);
            if (rc != MPI_SUCCESS) return rc;
        }
        size_t len = 2 * (size_t)n + 2;
        double *v = calloc(len, sizeof *v);
        if (v == NULL) return MPI_ERR_NO_MEM;
#ifdef CK_INSTRUMENT
        instr_round_begin(&r->ia, n);
#endif
        for (long j = 0; j < n; j++) {
            long k = attempted + j;
            int check = pt->validate == VAL_ALL || (pt->validate == VAL_FIRST && k == 0);
            iter_out o;
            double start = sched[0] + (double)j * sched[1] + offset;
            rc = iteration(r, it++, sep, start, check, &o);
            if (rc != MPI_SUCCESS) {
                free(v);
                return rc;
            }
            v[j] = o.seconds;
            v[n + j] = o.late;
            if (r->per_rank) per_rank_iteration(&r->pr, o.seconds, o.entry, o.exit);
#ifdef CK_INSTRUMENT
            instr_iteration(&r->ia, j, o.seconds);
#endif
        }
        v[2 * n] = agree_mark(r->err_code != MPI_SUCCESS, r->rank, r->p);
        v[2 * n + 1] = agree_mark(r->invalid, r->rank, r->p);
        double c0 = MPI_Wtime();
        rc = agree_max(v, len, r->ctrl);
        ctrl_time = MPI_Wtime() - c0;
        if (rc == MPI_SUCCESS) rc = reschedule(r);
        if (rc != MPI_SUCCESS) {
            free(v);
            return rc;
        }
#ifdef CK_INSTRUMENT
        instr_round_end(&r->ia, n, v + n);
#endif
        if (r->per_rank) per_rank_round_end(&r->pr, n, v + n);
        long late = 0;
        for (long j = 0; j < n; j++) {
            if (v[n + j] > 0.0) {
                late++;
                continue;
            }
            kept++;
            kept_sum += v[j];
            if (r->rank == 0) keep_time(res, v[j] * 1e6, &oom);
        }
        res->late += late;
        attempted += n;
        double err_mark = v[2 * n], inv_mark = v[2 * n + 1];
        free(v);
        if (agree_marked_rank(err_mark, r->p) >= 0) return settle_error(r, err_mark, res);
        int inv_src = agree_marked_rank(inv_mark, r->p);
        if (inv_src >= 0) {
            /* A wrong result is the answer; more iterations would not change it. */
            res->status = ST_INVALID;
            return agree_text_to_root(inv_src, r->inv_msg, res->reason, r->rank, r->ctrl);
        }
        if (attempted >= pt->max_iters) break;
        if (kept >= pt->min_iters && kept_sum >= pt->budget_s) break;
        /* Mostly late: the windows are too tight for this call here. */
        if (window && 4 * late > n) win *= 2.0;
        round = next_round(pt, round, kept, kept_sum);
    }
    if (oom && r->rank == 0) {
        res->status = ST_FAILED;
        snprintf(res->reason, sizeof res->reason, "out of memory keeping the iteration times");
    }
    return MPI_SUCCESS;
}

int run_point(const bench_point *pt, MPI_Comm comm, MPI_Comm ctrl, bench_device *dev, point_result *res)
{
    memset(res, 0, sizeof *res);
    res->status = ST_OK;
    runner r;
    memset(&r, 0, sizeof r);
    r.pt = pt;
    r.comm = comm;
    r.ctrl = ctrl;
    r.dev = dev;
    r.err_code = MPI_SUCCESS;
    int rc = MPI_Comm_rank(comm, &r.rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(comm, &r.p);
    if (rc != MPI_SUCCESS) return rc;
    if (preflight(&r, res)) return MPI_SUCCESS;
    r.program = pt->conditions == COND_PROGRAM;
    if (r.program) program_pacer_begin(&r.pace, &pt->program, pt->id, r.rank);
    int ok = 0;
    rc = allocate(&r, res, &ok);
    if (rc == MPI_SUCCESS && ok) {
        long it = 0;
        double max_cycle = 0.0;
        rc = warm_up(&r, res, &it, &max_cycle);
        if (rc == MPI_SUCCESS && res->status == ST_OK) rc = settle(&r, res, &it, max_cycle);
        if (rc == MPI_SUCCESS && res->status == ST_OK) {
#ifdef CK_INSTRUMENT
            r.record_tags = 1;
#endif
            /* Program conditions keep every rank's arrival and exit: the
             * waiting and working of each call are computed from them. */
            r.per_rank = pt->granularity == GRAN_RANKS || r.program;
            if (r.per_rank) per_rank_begin(&r.pr, r.p);
            rc = timed_rounds(&r, res, it, max_cycle);
            /* Every rank gets here together, as for the tags below; rank 0
             * alone knows how many times it kept. */
            if (rc == MPI_SUCCESS && r.per_rank) {
                int oom_rank = -1;
                rc = per_rank_end(&r.pr, r.rank, r.p, r.ctrl, r.have_offset, r.offset, r.offset_error,
                                  (long)res->ntimes, &res->per_rank, &oom_rank);
                if (rc == MPI_SUCCESS && oom_rank >= 0 && res->status != ST_FAILED) {
                    res->status = ST_FAILED;
                    snprintf(res->reason, sizeof res->reason,
                             "out of memory: rank %d cannot keep the per-rank times", oom_rank);
                }
            }
            if (rc == MPI_SUCCESS && res->status == ST_OK && r.rank == 0 && timed_marks(pt, res) != 0) {
                res->status = ST_FAILED;
                snprintf(res->reason, sizeof res->reason, "out of memory checking the timed iterations' drift");
            }
#ifdef CK_INSTRUMENT
            /* Every rank gets here together (the warm-up verdict and the
             * round results are agreed), whatever the point's status. */
            if (rc == MPI_SUCCESS) {
                int oom_rank = -1;
                rc = instr_point_end(&r.ia, r.rank, r.p, r.ctrl, &res->instr, &oom_rank);
                if (rc == MPI_SUCCESS && oom_rank >= 0 && res->status != ST_FAILED) {
                    res->status = ST_FAILED;
                    snprintf(res->reason, sizeof res->reason,
                             "out of memory: rank %d cannot keep the tag records", oom_rank);
                }
            }
#endif
        }
    }
    res->validated = r.validated;
    /* A failed point's times describe calls that errored or were skipped;
     * the steady-state mark is about times, so it goes with them. */
    if (res->status == ST_FAILED) {
        res->ntimes = 0;
        res->unstable[0] = '\0';
    }
    if (res->status == ST_FAILED) {
        per_rank_summary_free(res->per_rank);
        res->per_rank = NULL;
    }
    per_rank_acc_free(&r.pr);
#ifdef CK_INSTRUMENT
    if (res->status == ST_FAILED) {
        instr_summary_free(res->instr);
        res->instr = NULL;
    }
    instr_acc_free(&r.ia);
#endif
#ifdef CK_NCCL
    device_mirror_free(&r.dm);
#endif
    ckv_buffers_free(&r.buf);
    return rc;
}
