/* Strict parser of the points file (docs/bench-protocol.md). */
#include "points.h"

#include "steady.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static const char *const backend_names[] = {"mpi", "collkit", "nccl"};
static const char *const sync_names[] = {"dissemination", "mpi_barrier", "window"};
static const char *const validate_names[] = {"first", "all", "none"};
static const char *const granularity_names[] = {"max", "ranks", "none"};
static const char *const conditions_names[] = {"synchronised", "program"};
static const char *const comm_names[] = {"world", "fresh"};

#define NAMES_N(a) (sizeof(a) / sizeof((a)[0]))

const char *backend_name(bench_backend b) { return backend_names[b]; }
const char *sync_name(bench_sync s) { return sync_names[s]; }
const char *validate_name(bench_validate v) { return validate_names[v]; }
const char *granularity_name(bench_granularity g) { return granularity_names[g]; }
const char *conditions_name(bench_conditions c) { return conditions_names[c]; }

typedef enum {
    K_ID, K_COLLECTIVE, K_BACKEND, K_ALGORITHM, K_COUNT, K_DTYPE, K_OP, K_ROOT, K_IN_PLACE,
    K_WARMUP, K_MIN_ITERS, K_MAX_ITERS, K_BUDGET_S, K_SYNC, K_VALIDATE, K_READBACK, K_SET,
    K_LAUNCH_WARMUP_S, K_SETTLE_S, K_GRANULARITY, K_CONDITIONS, K_GAP_US, K_SKEW_US, K_COMM, K_NUM
} key_id;

static const char *const key_names[K_NUM] = {
    "id", "collective", "backend", "algorithm", "count", "dtype", "op", "root", "in_place",
    "warmup", "min_iters", "max_iters", "budget_s", "sync", "validate", "readback", "set",
    "launch_warmup_s", "settle_s", "granularity", "conditions", "gap_us", "skew_us", "comm",
};

/* Everything is required except readback, set, comm (absent: world), the
 * steady-state settings (absent: steady.h's defaults), granularity (absent: max) and the program
 * conditions (absent: synchronised; gap_us and skew_us go with
 * conditions=program, checked in parse_line), so that the CLI's points files
 * of the default stay byte for byte what they were: the CLI always writes the
 * others, so a missing one means the two sides disagree about the contract. */
static int key_required(key_id k)
{
    return k != K_READBACK && k != K_SET && k != K_LAUNCH_WARMUP_S && k != K_SETTLE_S && k != K_GRANULARITY &&
           k != K_CONDITIONS && k != K_GAP_US && k != K_SKEW_US && k != K_COMM;
}

typedef struct {
    const char *path;
    int line;
    char *err;
    size_t errlen;
} ctx;

static int fail(ctx *c, const char *fmt, ...)
{
    int n = snprintf(c->err, c->errlen, "%s:%d: ", c->path, c->line);
    if (n < 0 || (size_t)n >= c->errlen) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int bad_value(ctx *c, const char *key, const char *val, const char *expected)
{
    return fail(c, "bad value '%s' for '%s' (expected %s)", val, key, expected);
}

static int pick(ctx *c, const char *key, const char *val, const char *const *names, size_t n,
                const char *expected, int *out)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], val) == 0) {
            *out = (int)i;
            return 0;
        }
    }
    return bad_value(c, key, val, expected);
}

/* The accepted names of a key that libcollkit's tables define, as "a, b or c":
 * name(i) is the i-th choice, NULL past the last. */
static const char *choices(char *out, size_t len, const char *(*name)(size_t))
{
    size_t n = 0, used = 0;
    while (name(n) != NULL) n++;
    out[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int w = snprintf(out + used, len - used, "%s%s", sep, name(i));
        if (w < 0) break;
        used += (size_t)w;
    }
    return out;
}

static const char *dtype_choice(size_t i)
{
    const ck_datatype_desc *d = ck_datatype_at(i);
    return d ? d->name : NULL;
}

/* MPI's predefined ops only: the bench measures what applications call. */
static const char *op_choice(size_t i)
{
    size_t k = 0;
    for (int o = 0; o < CKV_NUM_OPS; o++)
        if (ckv_op_predefined((ckv_op)o) && k++ == i) return ckv_op_name((ckv_op)o);
    return NULL;
}

/* Decimal digits only: strtoll/strtoull would also take signs, spaces and
 * hex, which the contract does not allow. */
static int parse_u64(const char *s, uint64_t *out)
{
    if (*s == '\0') return -1;
    uint64_t v = 0;
    for (const char *q = s; *q; q++) {
        if (*q < '0' || *q > '9') return -1;
        unsigned d = (unsigned)(*q - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int parse_long_range(const char *s, long lo, long hi, long *out)
{
    int neg = s[0] == '-';
    uint64_t mag;
    if (parse_u64(s + neg, &mag) != 0) return -1;
    if (mag > (uint64_t)LONG_MAX) return -1;
    long v = neg ? -(long)mag : (long)mag;
    if (v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int chars_ok(const char *s, const char *extra)
{
    if (*s == '\0') return 0;
    for (const char *q = s; *q; q++) {
        char ch = *q;
        int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && strchr(extra, ch) == NULL) return 0;
    }
    return 1;
}

/* Comma-separated MPI_T names: no empty element, no character that could
 * not be part of a control variable name. */
static int readback_ok(const char *s)
{
    if (*s == '\0') return 1;
    if (!chars_ok(s, "_.:-,")) return 0;
    if (s[0] == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,") != NULL) return 0;
    return 1;
}

/* Comma-separated NAME:VALUE pairs, each with exactly one ':' and both sides
 * non-empty. */
static int set_ok(const char *s)
{
    if (*s == '\0') return 1;
    if (!chars_ok(s, "_.:-,")) return 0;
    const char *q = s;
    while (*q) {
        const char *end = strchr(q, ',');
        size_t len = end ? (size_t)(end - q) : strlen(q);
        const char *colon = memchr(q, ':', len);
        if (colon == NULL || colon == q || colon == q + len - 1 || memchr(colon + 1, ':', len - (size_t)(colon - q) - 1))
            return 0;
        if (end == NULL) break;
        q = end + 1;
        if (*q == '\0') return 0;
    }
    return 1;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static void point_clear(bench_point *pt)
{
    free(pt->id);
    free(pt->algorithm);
    free(pt->readback);
    free(pt->set);
    free(pt->program.skew_us);
    memset(pt, 0, sizeof *pt);
}

static int set_value(ctx *c, bench_point *pt, key_id k, const char *val)
{
    const char *key = key_names[k];
    long l;
    uint64_t u;
    int e = 0;
    char list[128];
    switch (k) {
    case K_ID:
        if (!chars_ok(val, "._:/+-")) return bad_value(c, key, val, "[A-Za-z0-9._:/+-]+");
        if (!(pt->id = dup_str(val))) return fail(c, "out of memory");
        return 0;
    case K_COLLECTIVE:
        if (ck_collective_parse(val, &pt->coll) != 0)
            return bad_value(c, key, val,
                             "bcast, reduce, gather, scatter, allgather, reduce_scatter, "
                             "allreduce or alltoall");
        return 0;
    case K_BACKEND:
        if (pick(c, key, val, backend_names, NAMES_N(backend_names), "mpi, collkit or nccl", &e)) return -1;
        pt->backend = (bench_backend)e;
        return 0;
    case K_ALGORITHM:
        if (!chars_ok(val, "._:+-")) return bad_value(c, key, val, "a name of [A-Za-z0-9._:+-]");
        if (!(pt->algorithm = dup_str(val))) return fail(c, "out of memory");
        return 0;
    case K_COUNT:
        if (parse_u64(val, &u) != 0 || u > BENCH_MAX_COUNT || u > (uint64_t)SIZE_MAX)
            return bad_value(c, key, val, "an integer 0 <= count <= 2^60");
        pt->count = (size_t)u;
        return 0;
    case K_DTYPE:
        if ((pt->dtype = ck_datatype_find(val)) == NULL)
            return bad_value(c, key, val, choices(list, sizeof list, dtype_choice));
        return 0;
    case K_OP:
        if (ckv_op_parse(val, &pt->op) != 0 || !ckv_op_predefined(pt->op))
            return bad_value(c, key, val, choices(list, sizeof list, op_choice));
        return 0;
    case K_ROOT:
        /* Range against the rank count is checked when the point runs: the
         * file does not know how many ranks it will be launched on. */
        if (parse_long_range(val, INT_MIN, INT_MAX, &l) != 0) return bad_value(c, key, val, "an int");
        pt->root = (int)l;
        return 0;
    case K_IN_PLACE:
        if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0) return bad_value(c, key, val, "0 or 1");
        pt->in_place = val[0] == '1';
        return 0;
    case K_WARMUP:
        if (parse_long_range(val, 0, INT_MAX, &l) != 0) return bad_value(c, key, val, "an integer >= 0");
        pt->warmup = l;
        return 0;
    case K_MIN_ITERS:
        if (parse_long_range(val, 1, INT_MAX, &l) != 0) return bad_value(c, key, val, "an integer >= 1");
        pt->min_iters = l;
        return 0;
    case K_MAX_ITERS:
        if (parse_long_range(val, 1, INT_MAX, &l) != 0) return bad_value(c, key, val, "an integer >= 1");
        pt->max_iters = l;
        return 0;
    case K_BUDGET_S: {
        char *end;
        errno = 0;
        double d = strtod(val, &end);
        if (*val == '\0' || *end != '\0' || errno != 0 || !isfinite(d) || d < 0 || val[0] == ' ')
            return bad_value(c, key, val, "a number >= 0");
        pt->budget_s = d;
        return 0;
    }
    case K_LAUNCH_WARMUP_S:
    case K_SETTLE_S: {
        char *end;
        errno = 0;
        double d = strtod(val, &end);
        if (*val == '\0' || *end != '\0' || errno != 0 || !isfinite(d) || d < 0 || d > STEADY_MAX_S ||
            val[0] == ' ')
            return bad_value(c, key, val, "a number of seconds from 0 to 60");
        *(k == K_SETTLE_S ? &pt->settle_s : &pt->launch_warmup_s) = d;
        return 0;
    }
    case K_SYNC:
        if (pick(c, key, val, sync_names, NAMES_N(sync_names), "dissemination, mpi_barrier or window", &e))
            return -1;
        pt->sync = (bench_sync)e;
        return 0;
    case K_VALIDATE:
        if (pick(c, key, val, validate_names, NAMES_N(validate_names), "first, all or none", &e)) return -1;
        pt->validate = (bench_validate)e;
        return 0;
    case K_GRANULARITY:
        if (pick(c, key, val, granularity_names, NAMES_N(granularity_names), "max, ranks or none", &e))
            return -1;
        pt->granularity = (bench_granularity)e;
        return 0;
    case K_CONDITIONS:
        if (pick(c, key, val, conditions_names, NAMES_N(conditions_names), "synchronised or program", &e))
            return -1;
        pt->conditions = (bench_conditions)e;
        return 0;
    case K_COMM:
        if (pick(c, key, val, comm_names, NAMES_N(comm_names), "world or fresh", &e)) return -1;
        pt->fresh_comm = e == 1;
        return 0;
    case K_GAP_US: {
        char *end;
        errno = 0;
        double d = strtod(val, &end);
        if (*val == '\0' || *end != '\0' || errno != 0 || !isfinite(d) || d < 0 || d > COND_MAX_US ||
            val[0] == ' ')
            return bad_value(c, key, val, "a number of microseconds from 0 to 1e6");
        pt->program.gap_us = d;
        return 0;
    }
    case K_SKEW_US: {
        char why[128];
        if (conditions_parse_skew(val, &pt->program, why, sizeof why) != 0) {
            /* the value can be long: name what is wrong, not the whole value */
            return fail(c, "bad value for 'skew_us' (%s; expected per rank %d non-decreasing numbers of "
                           "microseconds from 0 to 1e6, ranks separated by ';')", why, COND_QUANTILES);
        }
        return 0;
    }
    case K_READBACK:
        if (!readback_ok(val)) return bad_value(c, key, val, "comma-separated control variable names");
        if (!(pt->readback = dup_str(val))) return fail(c, "out of memory");
        return 0;
    case K_SET:
        if (!set_ok(val)) return bad_value(c, key, val, "comma-separated NAME:VALUE control variable settings");
        if (!(pt->set = dup_str(val))) return fail(c, "out of memory");
        return 0;
    default:
        return fail(c, "internal error: key %d", (int)k);
    }
}

static int parse_line(ctx *c, char *s, bench_point *pt)
{
    int seen[K_NUM] = {0};
    char *save = NULL;
    for (char *tok = strtok_r(s, " \t\r\n\v\f", &save); tok; tok = strtok_r(NULL, " \t\r\n\v\f", &save)) {
        char *eq = strchr(tok, '=');
        if (eq == NULL) return fail(c, "token '%s' is not key=value", tok);
        *eq = '\0';
        const char *val = eq + 1;
        int k = -1;
        for (int i = 0; i < K_NUM; i++)
            if (strcmp(key_names[i], tok) == 0) k = i;
        if (k < 0) return fail(c, "unknown key '%s'", tok);
        if (seen[k]) return fail(c, "duplicate key '%s'", tok);
        seen[k] = 1;
        if (set_value(c, pt, (key_id)k, val) != 0) return -1;
    }
    for (int k = 0; k < K_NUM; k++)
        if (key_required((key_id)k) && !seen[k]) return fail(c, "missing key '%s'", key_names[k]);
    if (pt->max_iters < pt->min_iters)
        return fail(c, "max_iters=%ld is below min_iters=%ld", pt->max_iters, pt->min_iters);
    int program = pt->conditions == COND_PROGRAM;
    if (program && !seen[K_GAP_US]) return fail(c, "missing key 'gap_us' (conditions=program)");
    if (program && !seen[K_SKEW_US]) return fail(c, "missing key 'skew_us' (conditions=program)");
    if (!program && (seen[K_GAP_US] || seen[K_SKEW_US]))
        return fail(c, "'%s' needs conditions=program", seen[K_GAP_US] ? "gap_us" : "skew_us");
    if (!seen[K_LAUNCH_WARMUP_S]) pt->launch_warmup_s = STEADY_LAUNCH_WARMUP_S;
    if (!seen[K_SETTLE_S]) pt->settle_s = STEADY_SETTLE_S;
    if (!seen[K_READBACK] && !(pt->readback = dup_str(""))) return fail(c, "out of memory");
    if (!seen[K_SET] && !(pt->set = dup_str(""))) return fail(c, "out of memory");
    pt->line = c->line;
    return 0;
}

static int blank_or_comment(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n' || *s == '\v' || *s == '\f') s++;
    return *s == '\0' || *s == '#';
}

int points_parse(const char *path, point_list *out, char *err, size_t errlen)
{
    ctx c = {path, 0, err, errlen};
    out->v = NULL;
    out->n = 0;
    FILE *f = fopen(path, "r");
    if (f == NULL) return fail(&c, "cannot open points file: %s", strerror(errno));
    char *line = NULL;
    size_t cap = 0, vcap = 0;
    int rc = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        c.line++;
        if ((size_t)len != strlen(line)) {
            rc = fail(&c, "NUL byte in line");
            break;
        }
        if (blank_or_comment(line)) continue;
        if (out->n == vcap) {
            size_t ncap = vcap ? 2 * vcap : 16;
            bench_point *nv = realloc(out->v, ncap * sizeof *nv);
            if (nv == NULL) {
                rc = fail(&c, "out of memory");
                break;
            }
            out->v = nv;
            vcap = ncap;
        }
        bench_point *pt = &out->v[out->n];
        memset(pt, 0, sizeof *pt);
        if (parse_line(&c, line, pt) != 0) {
            point_clear(pt);
            rc = -1;
            break;
        }
        out->n++;
    }
    if (rc == 0 && ferror(f)) {
        c.line++;
        rc = fail(&c, "read error: %s", strerror(errno));
    }
    free(line);
    fclose(f);
    if (rc != 0) points_free(out);
    return rc;
}

void points_free(point_list *pl)
{
    for (size_t i = 0; i < pl->n; i++) point_clear(&pl->v[i]);
    free(pl->v);
    pl->v = NULL;
    pl->n = 0;
}
