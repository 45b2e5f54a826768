/* A minimal JSON builder for one record per line. */
#include "record.h"

#include "stats.h"
#include "sync.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void jb_init(json_builder *b) { memset(b, 0, sizeof *b); }

void jb_free(json_builder *b)
{
    free(b->buf);
    memset(b, 0, sizeof *b);
}

static void append(json_builder *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *nb = realloc(b->buf, cap);
        if (nb == NULL) {
            b->failed = 1;
            return;
        }
        b->buf = nb;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

static void append_str(json_builder *b, const char *s) { append(b, s, strlen(s)); }

static void appendf(json_builder *b, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        b->failed = 1;
        return;
    }
    append(b, tmp, (size_t)n);
}

/* A value (or key) at the current level: separate it from the previous one. */
static void value_start(json_builder *b)
{
    if (b->depth > 0 && b->need_comma[b->depth - 1]) append_str(b, ", ");
    if (b->depth > 0) b->need_comma[b->depth - 1] = 1;
}

static void open_level(json_builder *b, const char *ch)
{
    value_start(b);
    append_str(b, ch);
    if (b->depth < JB_MAX_DEPTH) b->need_comma[b->depth] = 0;
    b->depth++;
}

static void close_level(json_builder *b, const char *ch)
{
    if (b->depth > 0) b->depth--;
    append_str(b, ch);
}

void jb_begin_object(json_builder *b) { open_level(b, "{"); }
void jb_end_object(json_builder *b) { close_level(b, "}"); }
void jb_begin_array(json_builder *b) { open_level(b, "["); }
void jb_end_array(json_builder *b) { close_level(b, "]"); }

static void escaped(json_builder *b, const char *s)
{
    append_str(b, "\"");
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        switch (*q) {
        case '"': append_str(b, "\\\""); break;
        case '\\': append_str(b, "\\\\"); break;
        case '\n': append_str(b, "\\n"); break;
        case '\r': append_str(b, "\\r"); break;
        case '\t': append_str(b, "\\t"); break;
        default:
            /* Other control characters must be escaped; bytes >= 0x80 pass
             * through (UTF-8 from the MPI library stays UTF-8). */
            if (*q < 0x20) appendf(b, "\\u%04x", (unsigned)*q);
            else append(b, (const char *)q, 1);
        }
    }
    append_str(b, "\"");
}

void jb_key(json_builder *b, const char *key)
{
    value_start(b);
    escaped(b, key);
    append_str(b, ": ");
    /* The value that follows belongs to this key: no comma before it. */
    if (b->depth > 0) b->need_comma[b->depth - 1] = 0;
}

/* After a key's value, the next key needs a comma. */
static void value_done(json_builder *b)
{
    if (b->depth > 0) b->need_comma[b->depth - 1] = 1;
}

void jb_string(json_builder *b, const char *s)
{
    value_start(b);
    escaped(b, s);
    value_done(b);
}

void jb_int(json_builder *b, long long v)
{
    value_start(b);
    appendf(b, "%lld", v);
    value_done(b);
}

void jb_uint(json_builder *b, uint64_t v)
{
    value_start(b);
    appendf(b, "%llu", (unsigned long long)v);
    value_done(b);
}

void jb_number(json_builder *b, double v)
{
    value_start(b);
    /* %.10g keeps ns resolution on times up to hours in µs, and never
     * prints a form JSON rejects (no inf, nan, or bare leading dot). */
    appendf(b, "%.10g", isfinite(v) ? v : 0.0);
    value_done(b);
}

void jb_float32_base64(json_builder *b, const float *v, size_t n)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    value_start(b);
    append_str(b, "\"");
    /* Three bytes in, four characters out; the bytes of each float in
     * little-endian order whatever the host's, so the reader needs no
     * knowledge of the machine that wrote them. */
    unsigned char in[3];
    size_t have = 0, total = 4 * n;
    char out[4 * 1024];
    size_t o = 0;
    for (size_t i = 0; i < total; i++) {
        uint32_t u;
        memcpy(&u, &v[i / 4], sizeof u);
        in[have++] = (unsigned char)(u >> (8 * (i % 4)));
        if (have == 3 || i + 1 == total) {
            uint32_t w = (uint32_t)in[0] << 16 | (have > 1 ? (uint32_t)in[1] << 8 : 0) | (have > 2 ? in[2] : 0);
            out[o++] = digits[w >> 18 & 63];
            out[o++] = digits[w >> 12 & 63];
            out[o++] = have > 1 ? digits[w >> 6 & 63] : '=';
            out[o++] = have > 2 ? digits[w & 63] : '=';
            have = 0;
            if (o == sizeof out) {
                append(b, out, o);
                o = 0;
            }
        }
    }
    append(b, out, o);
    append_str(b, "\"");
    value_done(b);
}

int jb_write_line(json_builder *b, FILE *f)
{
    if (b->failed) {
        errno = ENOMEM;
        return -1;
    }
    append_str(b, "\n");
    if (b->failed) {
        errno = ENOMEM;
        return -1;
    }
    if (fwrite(b->buf, 1, b->len, f) != b->len || fflush(f) != 0) return -1;
    if (fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS) return -1;
    return 0;
}

/* ---------------------------------------------------------------- records */

int record_launch(FILE *f, const launch_info *li)
{
    json_builder b;
    jb_init(&b);
    jb_begin_object(&b);
    jb_key(&b, "type"), jb_string(&b, "launch");
    jb_key(&b, "ranks"), jb_int(&b, li->ranks);
    jb_key(&b, "library_version"), jb_string(&b, li->library_version);
    jb_key(&b, "mpi_version"), jb_string(&b, li->mpi_version);
    jb_key(&b, "collkit_version"), jb_string(&b, li->collkit_version);
    jb_key(&b, "hosts");
    jb_begin_array(&b);
    for (int i = 0; i < li->ranks; i++) jb_string(&b, li->hosts[i]);
    jb_end_array(&b);
    jb_key(&b, "cpus");
    jb_begin_array(&b);
    for (int i = 0; i < li->ranks; i++) jb_string(&b, li->cpus[i]);
    jb_end_array(&b);
    jb_key(&b, "wtime_is_global"), jb_int(&b, li->wtime_is_global);
    jb_key(&b, "wtick"), jb_number(&b, li->wtick);
    jb_key(&b, "floor_us"), jb_number(&b, li->floor_us);
    jb_key(&b, "floor_pings"), jb_int(&b, li->ranks > 1 ? FLOOR_PINGS : 0);
    jb_end_object(&b);
    int rc = jb_write_line(&b, f);
    jb_free(&b);
    return rc;
}

#ifdef CK_INSTRUMENT
static const char *const part_names[INSTR_PARTS] = {"comm", "reduce", "copy", "other"};
static const char *const category_names[] = {"phase", "comm", "reduce", "copy"};

static void breakdown_object(json_builder *b, const double *part, double end_to_end)
{
    jb_begin_object(b);
    for (int k = 0; k < INSTR_PARTS; k++) jb_key(b, part_names[k]), jb_number(b, part[k]);
    jb_key(b, "end_to_end"), jb_number(b, end_to_end);
    jb_end_object(b);
}

/* The `instrument` object of docs/bench-protocol.md, "Instrumented records". */
static void instrument_object(json_builder *b, const instr_summary *s)
{
    jb_begin_object(b);
    jb_key(b, "iterations"), jb_int(b, s->iterations);
    jb_key(b, "dropped"), jb_uint(b, s->dropped);
    jb_key(b, "unbalanced"), jb_uint(b, s->unbalanced);
    jb_key(b, "breakdown_us");
    breakdown_object(b, s->part_us, s->end_to_end_us);
    jb_key(b, "breakdown_basis");
    jb_string(b, "slowest rank of the median iteration (mean of the two middle ones for an even count); "
                 "comm, reduce, copy: its outermost category tags; other: its call time minus them");
    jb_key(b, "breakdown_mean_us");
    breakdown_object(b, s->mean_part_us, s->mean_end_to_end_us);
    jb_key(b, "tags");
    jb_begin_array(b);
    for (size_t i = 0; i < s->ntags; i++) {
        const instr_tag_summary *t = &s->tags[i];
        jb_begin_object(b);
        jb_key(b, "name"), jb_string(b, t->name);
        jb_key(b, "category");
        jb_string(b, t->category >= 0 && t->category < 4 ? category_names[t->category] : "phase");
        jb_key(b, "step"), jb_int(b, t->step);
        jb_key(b, "ranks"), jb_int(b, t->ranks);
        jb_key(b, "count"), jb_uint(b, t->count);
        jb_key(b, "total_us"), jb_number(b, t->total_us);
        jb_key(b, "median_us"), jb_number(b, t->median_us);
        jb_key(b, "max_us"), jb_number(b, t->max_us);
        jb_end_object(b);
    }
    jb_end_array(b);
    jb_end_object(b);
}
#endif

/* Whole nanoseconds: the medians come from float32 cells, whose further digits
 * are noise, and 1,024 ranks x 4 arrays of them are most of a record's bytes. */
static void number_array(json_builder *b, const double *v, int n)
{
    jb_begin_array(b);
    for (int i = 0; i < n; i++) jb_number(b, round(v[i] * 1e3) / 1e3);
    jb_end_array(b);
}

/* The `per_rank` object of docs/bench-protocol.md, "Per-rank records". */
static void per_rank_object(json_builder *b, const per_rank_summary *s)
{
    jb_begin_object(b);
    jb_key(b, "iterations"), jb_int(b, s->n);
    jb_key(b, "of_iterations"), jb_int(b, s->of);
    jb_key(b, "clock"), jb_string(b, s->clock_global ? "global" : "offset");
    jb_key(b, "median_us"), number_array(b, s->median_us, s->p);
    jb_key(b, "arrival_median_us"), number_array(b, s->arrival_median_us, s->p);
    jb_key(b, "exit_median_us"), number_array(b, s->exit_median_us, s->p);
    /* All zero on a global clock: left out. */
    if (!s->clock_global) jb_key(b, "clock_error_us"), number_array(b, s->clock_error_us, s->p);
    jb_key(b, "matrix");
    jb_begin_object(b);
    jb_key(b, "planes");
    jb_begin_array(b);
    jb_string(b, "time_us"), jb_string(b, "arrival_us"), jb_string(b, "exit_us");
    jb_end_array(b);
    jb_key(b, "shape");
    jb_begin_array(b);
    jb_int(b, 3), jb_int(b, s->p), jb_int(b, s->n);
    jb_end_array(b);
    jb_key(b, "dtype"), jb_string(b, "float32le");
    jb_key(b, "base64");
    jb_float32_base64(b, s->matrix, (size_t)3 * (size_t)s->p * (size_t)s->n);
    jb_end_object(b);
    jb_end_object(b);
}

int record_point(FILE *f, const bench_point *pt, int ranks, const point_result *res,
                 const record_kv *effective, size_t neffective, double floor_us)
{
    bench_stats st;
    if (stats_compute(res->times_us, res->ntimes, &st) != 0) {
        errno = ENOMEM;
        return -1;
    }
    uint64_t bytes = (uint64_t)pt->count * (uint64_t)pt->dtype->size;
    double algbw, busbw;
    stats_bandwidth(pt->coll, (double)bytes, ranks, st.median, &algbw, &busbw);

    json_builder b;
    jb_init(&b);
    jb_begin_object(&b);
    jb_key(&b, "type"), jb_string(&b, "point");
    jb_key(&b, "id"), jb_string(&b, pt->id);
    jb_key(&b, "collective"), jb_string(&b, ck_collective_name(pt->coll));
    jb_key(&b, "backend"), jb_string(&b, backend_name(pt->backend));
    jb_key(&b, "algorithm"), jb_string(&b, pt->algorithm);
    jb_key(&b, "ranks"), jb_int(&b, ranks);
    jb_key(&b, "count"), jb_uint(&b, (uint64_t)pt->count);
    jb_key(&b, "dtype"), jb_string(&b, pt->dtype->name);
    jb_key(&b, "op"), jb_string(&b, ckv_op_name(pt->op));
    jb_key(&b, "root"), jb_int(&b, pt->root);
    jb_key(&b, "in_place"), jb_int(&b, pt->in_place);
    jb_key(&b, "bytes"), jb_uint(&b, bytes);
    jb_key(&b, "status"), jb_string(&b, status_name(res->status));
    jb_key(&b, "reason"), jb_string(&b, res->status == ST_OK ? "" : res->reason);
    /* A flag beside the status, not a status: the call may well be correct,
     * only its time cannot be (docs/bench-protocol.md). */
    char implausible[160] = "";
    if (res->ntimes > 0 && floor_us > 0 && st.median < floor_us)
        snprintf(implausible, sizeof implausible,
                 "median %.3g us below the one-message floor %.3g us measured in this launch",
                 st.median, floor_us);
    jb_key(&b, "implausible"), jb_string(&b, implausible);
    /* Also a flag beside the status: why these times may still hold start-up
     * costs (docs/bench-protocol.md, "Steady state"); "" when steady. */
    jb_key(&b, "unstable"), jb_string(&b, res->status == ST_FAILED ? "" : res->unstable);
    jb_key(&b, "settle_windows"), jb_int(&b, res->settle_windows);
    jb_key(&b, "warmup"), jb_int(&b, pt->warmup);
    jb_key(&b, "iterations"), jb_uint(&b, (uint64_t)res->ntimes);
    jb_key(&b, "late_iterations"), jb_int(&b, res->late);
    jb_key(&b, "sync"), jb_string(&b, sync_name(pt->sync));
    jb_key(&b, "validate"), jb_string(&b, validate_name(pt->validate));
    jb_key(&b, "validated_iterations"), jb_int(&b, res->validated);
    /* granularity = "none": aggregates only, the median's interval in place
     * of the times it is computed from (the readers' fallback). */
    double ci_lo = 0.0, ci_hi = 0.0;
    int has_ci = 0;
    if (pt->granularity == GRAN_NONE) {
        if ((has_ci = stats_median_ci(res->times_us, res->ntimes, &ci_lo, &ci_hi)) < 0) {
            jb_free(&b);
            errno = ENOMEM;
            return -1;
        }
    } else {
        jb_key(&b, "times_us");
        jb_begin_array(&b);
        for (size_t i = 0; i < res->ntimes; i++) jb_number(&b, res->times_us[i]);
        jb_end_array(&b);
    }
    /* Only where it is not the default, so that default records stay as they were. */
    if (pt->granularity != GRAN_MAX) jb_key(&b, "granularity"), jb_string(&b, granularity_name(pt->granularity));
    /* Program conditions say what the calls were measured under; the default
     * (synchronised) writes nothing, so its records stay as they were. */
    if (pt->conditions == COND_PROGRAM) {
        jb_key(&b, "conditions");
        jb_begin_object(&b);
        jb_key(&b, "mode"), jb_string(&b, conditions_name(pt->conditions));
        jb_key(&b, "gap_us"), jb_number(&b, pt->program.gap_us);
        jb_key(&b, "skew_us");
        jb_begin_array(&b);
        for (int r = 0; r < pt->program.ranks; r++) {
            jb_begin_array(&b);
            for (int k = 0; k < COND_QUANTILES; k++) jb_number(&b, pt->program.skew_us[r * COND_QUANTILES + k]);
            jb_end_array(&b);
        }
        jb_end_array(&b);
        jb_end_object(&b);
    }
    jb_key(&b, "stats_us");
    jb_begin_object(&b);
    jb_key(&b, "min"), jb_number(&b, st.min);
    jb_key(&b, "median"), jb_number(&b, st.median);
    jb_key(&b, "mean"), jb_number(&b, st.mean);
    jb_key(&b, "p5"), jb_number(&b, st.p5);
    jb_key(&b, "p95"), jb_number(&b, st.p95);
    jb_key(&b, "stdev"), jb_number(&b, st.stdev);
    jb_key(&b, "max"), jb_number(&b, st.max);
    if (has_ci) {
        jb_key(&b, "median_ci");
        jb_begin_array(&b);
        jb_number(&b, ci_lo), jb_number(&b, ci_hi);
        jb_end_array(&b);
    }
    jb_end_object(&b);
    jb_key(&b, "algbw_GBps"), jb_number(&b, algbw);
    jb_key(&b, "busbw_GBps"), jb_number(&b, busbw);
    jb_key(&b, "effective");
    jb_begin_object(&b);
    for (size_t i = 0; i < neffective; i++) jb_key(&b, effective[i].name), jb_string(&b, effective[i].value);
    jb_end_object(&b);
    if (res->per_rank != NULL) {
        jb_key(&b, "per_rank");
        per_rank_object(&b, res->per_rank);
    }
#ifdef CK_INSTRUMENT
    if (res->instr != NULL) {
        jb_key(&b, "instrument");
        instrument_object(&b, res->instr);
    }
#endif
    jb_end_object(&b);
    int rc = jb_write_line(&b, f);
    jb_free(&b);
    return rc;
}
