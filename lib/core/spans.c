/*
 * The span recorder of the instrumented libcollkit (include/collkit/spans.h).
 *
 * Compiled only into collkit_instr (CMake option COLLKIT_INSTRUMENT), never
 * into the plain libraries. It holds the one piece of process-global mutable
 * state DESIGN.md allows: the record buffer, the open-span stack and the name
 * table, one set per process (= per MPI rank).
 *
 * BEGIN and END run inside the collective being measured, so they allocate
 * nothing, print nothing and call no MPI function: a clock read, a few stores
 * into preallocated arrays, and counters when something does not fit. (Under
 * SimGrid the clock is the simulated one, MPI_Wtime: see ck_spans_now_ns.)
 */
#ifndef CK_INSTRUMENT
#error "spans.c belongs to the instrumented library only (compile with -DCK_INSTRUMENT)"
#endif

/* clock_gettime and CLOCK_MONOTONIC under the project's strict C11 (SimGrid's
 * smpicc already defines it). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 199309L
#endif

#include "collkit/spans.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int ck_spans_on = 0;

typedef struct {
    int32_t span, step;
    int64_t start_ns; /* raw clock reading: see raw_now */
} open_tag;

static struct {
    ck_span_record *rec;
    size_t cap, n;
    uint64_t dropped, unbalanced;
    open_tag stack[CK_SPAN_MAX_DEPTH];
    int depth;
    int overflow_depth; /* BEGINs past CK_SPAN_MAX_DEPTH still open */
    int open_cats;      /* comm/reduce/copy spans among the open ones */
    const char *names[CK_SPAN_MAX_NAMES];
    ck_span_category cats[CK_SPAN_MAX_NAMES];
    int nnames;
} S;

static const char too_many_names[] = "(too many tag names)";

static ck_span_category category_of_name(const char *name)
{
    size_t len = strcspn(name, ".");
    if (len == 4 && strncmp(name, "comm", 4) == 0) return CK_CAT_COMM;
    if (len == 6 && strncmp(name, "reduce", 6) == 0) return CK_CAT_REDUCE;
    if (len == 4 && strncmp(name, "copy", 4) == 0) return CK_CAT_COPY;
    return CK_CAT_PHASE;
}

int ck_span_intern(const char *name)
{
    for (int i = 0; i < S.nnames; i++)
        if (strcmp(S.names[i], name) == 0) return i;
    /* The last slot is reserved for the overflow name, so that a full table
     * still gives every site a valid id (and the site caches it). */
    if (S.nnames == CK_SPAN_MAX_NAMES - 1) {
        S.names[S.nnames] = too_many_names;
        S.cats[S.nnames] = CK_CAT_PHASE;
        S.nnames++;
    }
    if (S.nnames == CK_SPAN_MAX_NAMES) return CK_SPAN_MAX_NAMES - 1;
    S.names[S.nnames] = name;
    S.cats[S.nnames] = category_of_name(name);
    return S.nnames++;
}

/* The clock of BEGIN and END. Two reads make up most of a span pair's cost,
 * and clock_gettime costs 30-60 ns on a VM (kvm), so on x86-64 with an
 * invariant TSC the recorder reads the time-stamp counter (about 10-25 ns)
 * and converts ticks to CLOCK_MONOTONIC nanoseconds with a rate measured
 * in ck_spans_init. Elsewhere, and when the TSC cannot be trusted, it reads
 * CLOCK_MONOTONIC itself. */
#if defined(__x86_64__) && !defined(SMPI_H) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <x86intrin.h>
#define CK_SPANS_HAVE_TSC 1
#else
#define CK_SPANS_HAVE_TSC 0
#endif

#ifndef SMPI_H
static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}
#endif

static struct {
    int use_tsc;
    uint64_t tsc0;
    int64_t mono0;
    double ns_per_tick;
} C;

#if CK_SPANS_HAVE_TSC
/* CPUID 0x80000007 EDX bit 8: the TSC ticks at a constant rate in every
 * power state, so ticks measure time. */
static int tsc_invariant(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return 0;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d)) return 0;
    return (d >> 8) & 1u;
}

/* Ticks per nanosecond over a ~5 ms spin: enough for a few ppm, far below
 * what a spanned region of microseconds could notice. */
static void calibrate(void)
{
    if (C.ns_per_tick > 0 || !tsc_invariant()) return;
    int64_t m0 = monotonic_ns();
    uint64_t t0 = __rdtsc();
    int64_t m1;
    do m1 = monotonic_ns(); while (m1 - m0 < 5000000);
    uint64_t t1 = __rdtsc();
    if (t1 <= t0) return;
    C.tsc0 = t0;
    C.mono0 = m0;
    C.ns_per_tick = (double)(m1 - m0) / (double)(t1 - t0);
    C.use_tsc = 1;
}
#else
static void calibrate(void) {}
#endif

/* Raw reading (ticks or ns) and its conversion, kept apart so that BEGIN and
 * END pay only for the reading. */
static inline int64_t raw_now(void)
{
#ifdef SMPI_H
    /* Under SimGrid the call times are simulated (MPI_Wtime), and so must
     * the spans be: the host's clock would measure the simulator. SMPI's
     * MPI_Wtime reads the simulated clock and sends nothing. */
    return (int64_t)(MPI_Wtime() * 1e9);
#else
#if CK_SPANS_HAVE_TSC
    if (C.use_tsc) return (int64_t)__rdtsc();
#endif
    return monotonic_ns();
#endif
}

static inline int64_t raw_to_ns(int64_t raw)
{
    if (!C.use_tsc) return raw;
    return C.mono0 + (int64_t)((double)((uint64_t)raw - C.tsc0) * C.ns_per_tick);
}

int64_t ck_spans_now_ns(void) { return raw_to_ns(raw_now()); }

static int is_category(int span) { return span >= 0 && span < S.nnames && S.cats[span] != CK_CAT_PHASE; }

void ck_span_begin(int span, int step)
{
    if (!ck_spans_on) return;
    if (S.depth == CK_SPAN_MAX_DEPTH || S.overflow_depth > 0) {
        /* Too deep to remember: its END will be matched by count only. */
        S.overflow_depth++;
        S.unbalanced++;
        return;
    }
    if (step < 0 && S.depth > 0) step = S.stack[S.depth - 1].step;
    open_tag *o = &S.stack[S.depth++];
    o->span = span;
    o->step = step < 0 ? -1 : step;
    if (is_category(span)) S.open_cats++;
    /* Last, so that the bookkeeping above is not inside the region. */
    o->start_ns = raw_now();
}

static void pop(void)
{
    open_tag *o = &S.stack[--S.depth];
    if (is_category(o->span)) S.open_cats--;
}

void ck_span_end(int span)
{
    if (!ck_spans_on) return;
    int64_t end = raw_now();
    if (S.overflow_depth > 0) {
        S.overflow_depth--;
        return;
    }
    if (S.depth == 0 || S.stack[S.depth - 1].span != span) {
        /* Recovery: an END naming a span further down closes it and abandons
         * the spans opened inside it (their ENDs were skipped, e.g. by an
         * error path); an END naming no open span is ignored. One mismatch
         * counts once. */
        S.unbalanced++;
        int k = S.depth - 1;
        while (k >= 0 && S.stack[k].span != span) k--;
        if (k < 0) return;
        while (S.depth > k + 1) pop();
    }
    const open_tag *o = &S.stack[S.depth - 1];
    int cat = is_category(o->span);
    /* Enclosing category spans: all open ones except this span itself. */
    int nested = S.open_cats - cat > 0;
    if (S.n < S.cap) {
        ck_span_record *r = &S.rec[S.n++];
        r->span = o->span;
        r->step = o->step;
        r->depth = S.depth - 1;
        r->nested = nested;
        r->start_ns = raw_to_ns(o->start_ns);
        r->end_ns = raw_to_ns(end);
    } else {
        S.dropped++;
    }
    pop();
}

void ck_spans_reset(void)
{
    S.n = 0;
    S.dropped = 0;
    S.unbalanced = 0;
    S.depth = 0;
    S.overflow_depth = 0;
    S.open_cats = 0;
}

int ck_spans_init(size_t capacity)
{
    ck_spans_on = 0;
    calibrate();
    ck_spans_reset();
    free(S.rec);
    S.rec = NULL;
    S.cap = 0;
    if (capacity > 0) {
        if (capacity > SIZE_MAX / sizeof *S.rec) return MPI_ERR_NO_MEM;
        S.rec = malloc(capacity * sizeof *S.rec);
        if (S.rec == NULL) return MPI_ERR_NO_MEM;
        S.cap = capacity;
    }
    return MPI_SUCCESS;
}

void ck_spans_finalize(void)
{
    ck_spans_on = 0;
    ck_spans_reset();
    free(S.rec);
    S.rec = NULL;
    S.cap = 0;
}

void ck_spans_enable(int on) { ck_spans_on = on != 0; }

size_t ck_spans_count(void) { return S.n; }

const ck_span_record *ck_spans_records(void) { return S.rec; }

uint64_t ck_spans_dropped(void) { return S.dropped; }

uint64_t ck_spans_unbalanced(void) { return S.unbalanced; }

int ck_spans_open(void) { return S.depth + S.overflow_depth; }

int ck_span_names(void) { return S.nnames; }

const char *ck_span_name(int span) { return span >= 0 && span < S.nnames ? S.names[span] : NULL; }

ck_span_category ck_span_category_of(int span) { return is_category(span) ? S.cats[span] : CK_CAT_PHASE; }
