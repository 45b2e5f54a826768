/*
 * check_records: checks a collkit-bench output against its points file and
 * docs/bench-protocol.md, independently of the bench's own code (own JSON
 * parser, own statistics), so that a bug shared by writer and checker is
 * unlikely.
 *
 *   check_records --points F --records F.jsonl --ranks P
 *                 [--expect ID=STATUS[:REASON_SUBSTRING]]...
 *                 [--expect-effective NAME=VALUE]...
 *
 * Every point not named by --expect must be `ok`. Exit 0 when everything
 * holds; otherwise one line per problem on stderr and exit 1.
 */
#include <collkit/collkit.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* ------------------------------------------------------------ JSON */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype t;
    double num;
    char *str;
    struct jval *items; /* array elements or object values */
    char **keys;        /* object keys */
    size_t n;
} jval;

typedef struct {
    const char *s;
    int bad;
} jparser;

static void jfree(jval *v)
{
    for (size_t i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof *v);
}

static void skip_ws(jparser *p)
{
    while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r') p->s++;
}

static char *parse_string(jparser *p)
{
    if (*p->s != '"') return p->bad = 1, NULL;
    p->s++;
    size_t cap = 16, n = 0;
    char *out = malloc(cap);
    if (!out) return p->bad = 1, NULL;
    while (*p->s && *p->s != '"') {
        char ch = *p->s++;
        if ((unsigned char)ch < 0x20) return free(out), p->bad = 1, NULL;
        if (ch == '\\') {
            char e = *p->s++;
            switch (e) {
            case '"': ch = '"'; break;
            case '\\': ch = '\\'; break;
            case '/': ch = '/'; break;
            case 'b': ch = '\b'; break;
            case 'f': ch = '\f'; break;
            case 'n': ch = '\n'; break;
            case 'r': ch = '\r'; break;
            case 't': ch = '\t'; break;
            case 'u':
                for (int k = 0; k < 4; k++)
                    if (!strchr("0123456789abcdefABCDEF", p->s[k]) || !p->s[k])
                        return free(out), p->bad = 1, NULL;
                p->s += 4;
                ch = '?'; /* the checker never compares escaped characters */
                break;
            default: return free(out), p->bad = 1, NULL;
            }
        }
        if (n + 2 > cap) {
            char *o = realloc(out, cap *= 2);
            if (!o) return free(out), p->bad = 1, NULL;
            out = o;
        }
        out[n++] = ch;
    }
    if (*p->s != '"') return free(out), p->bad = 1, NULL;
    p->s++;
    out[n] = '\0';
    return out;
}

/* JSON's number grammar exactly: no inf, nan, leading '+', bare '.'. */
static int parse_number(jparser *p, double *out)
{
    const char *q = p->s;
    if (*q == '-') q++;
    if (*q == '0') q++;
    else if (*q >= '1' && *q <= '9') while (*q >= '0' && *q <= '9') q++;
    else return -1;
    if (*q == '.') {
        q++;
        if (!(*q >= '0' && *q <= '9')) return -1;
        while (*q >= '0' && *q <= '9') q++;
    }
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-') q++;
        if (!(*q >= '0' && *q <= '9')) return -1;
        while (*q >= '0' && *q <= '9') q++;
    }
    *out = strtod(p->s, NULL);
    p->s = q;
    return 0;
}

static int push(jval *v, size_t *cap)
{
    if (v->n < *cap) return 0;
    size_t nc = *cap ? 2 * *cap : 8;
    jval *it = realloc(v->items, nc * sizeof *it);
    if (!it) return -1;
    v->items = it;
    if (v->t == J_OBJ) {
        char **k = realloc(v->keys, nc * sizeof *k);
        if (!k) return -1;
        v->keys = k;
    }
    *cap = nc;
    return 0;
}

static void parse_value(jparser *p, jval *v)
{
    memset(v, 0, sizeof *v);
    skip_ws(p);
    size_t cap = 0;
    if (*p->s == '{' || *p->s == '[') {
        int obj = *p->s == '{';
        char close = obj ? '}' : ']';
        v->t = obj ? J_OBJ : J_ARR;
        p->s++;
        skip_ws(p);
        if (*p->s == close) {
            p->s++;
            return;
        }
        for (;;) {
            if (push(v, &cap) != 0) return (void)(p->bad = 1);
            skip_ws(p);
            if (obj) {
                char *k = parse_string(p);
                if (!k) return;
                v->keys[v->n] = k;
                skip_ws(p);
                if (*p->s != ':') {
                    free(k);
                    return (void)(p->bad = 1);
                }
                p->s++;
            }
            parse_value(p, &v->items[v->n]);
            v->n++;
            if (p->bad) return;
            skip_ws(p);
            if (*p->s == ',') {
                p->s++;
                continue;
            }
            if (*p->s == close) {
                p->s++;
                return;
            }
            return (void)(p->bad = 1);
        }
    }
    if (*p->s == '"') {
        v->t = J_STR;
        v->str = parse_string(p);
        return;
    }
    if (strncmp(p->s, "true", 4) == 0 || strncmp(p->s, "false", 5) == 0) {
        v->t = J_BOOL;
        v->num = p->s[0] == 't';
        p->s += p->s[0] == 't' ? 4 : 5;
        return;
    }
    if (strncmp(p->s, "null", 4) == 0) {
        v->t = J_NULL;
        p->s += 4;
        return;
    }
    v->t = J_NUM;
    if (parse_number(p, &v->num) != 0) p->bad = 1;
}

static const jval *get(const jval *o, const char *key)
{
    if (o->t != J_OBJ) return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0) return &o->items[i];
    return NULL;
}

/* ------------------------------------------------------------ reporting */

static int problems;

static void problem(const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "check_records: %s: ", where);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    problems++;
}

static const char *str_of(const jval *o, const char *key, const char *where)
{
    const jval *v = get(o, key);
    if (!v || v->t != J_STR) {
        problem(where, "'%s' missing or not a string", key);
        return "";
    }
    return v->str;
}

static double num_of(const jval *o, const char *key, const char *where)
{
    const jval *v = get(o, key);
    if (!v || v->t != J_NUM) {
        problem(where, "'%s' missing or not a number", key);
        return NAN;
    }
    return v->num;
}

static int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-6 * fmax(1.0, fmax(fabs(a), fabs(b)));
}

/* ------------------------------------------------------------ points file */

#define MAX_KEYS 24

typedef struct {
    char *key[MAX_KEYS], *val[MAX_KEYS];
    int n;
} point;

static const char *pget(const point *pt, const char *key)
{
    for (int i = 0; i < pt->n; i++)
        if (strcmp(pt->key[i], key) == 0) return pt->val[i];
    return "";
}

static point *read_points(const char *path, size_t *np)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    point *v = NULL;
    size_t n = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *s = line + strspn(line, " \t\r\n");
        if (*s == '\0' || *s == '#') continue;
        point *nv = realloc(v, (n + 1) * sizeof *nv);
        if (!nv) exit(1);
        v = nv;
        point *pt = &v[n++];
        memset(pt, 0, sizeof *pt);
        for (char *tok = strtok(s, " \t\r\n"); tok && pt->n < MAX_KEYS; tok = strtok(NULL, " \t\r\n")) {
            char *eq = strchr(tok, '=');
            if (!eq) continue;
            *eq = '\0';
            pt->key[pt->n] = malloc(strlen(tok) + 1);
            pt->val[pt->n] = malloc(strlen(eq + 1) + 1);
            if (!pt->key[pt->n] || !pt->val[pt->n]) exit(1);
            strcpy(pt->key[pt->n], tok);
            strcpy(pt->val[pt->n], eq + 1);
            pt->n++;
        }
    }
    fclose(f);
    *np = n;
    return v;
}

/* ------------------------------------------------------------ checks */

static size_t dtype_bytes(const char *d)
{
    if (strcmp(d, "int8") == 0) return 1;
    if (strcmp(d, "int32") == 0 || strcmp(d, "float") == 0) return 4;
    return 8;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The launch's one-message floor, read from its record: every point's
 * `implausible` flag must follow from it. */
static double launch_floor_us;
/* --expect-implausible: every timed point must be flagged (the test that
 * sets the floor from outside, COLLKIT_BENCH_TEST_FLOOR_US). */
static int expect_all_implausible;

static void check_launch(const jval *r, int ranks)
{
    const char *w = "launch record";
    if (strcmp(str_of(r, "type", w), "launch") != 0) problem(w, "first record is not a launch record");
    if (num_of(r, "ranks", w) != ranks) problem(w, "ranks is not %d", ranks);
    const char *lib = str_of(r, "library_version", w);
    if (lib[0] == '\0' || strchr(lib, '\n')) problem(w, "library_version empty or not one line");
    int maj, min;
    char extra;
    if (sscanf(str_of(r, "mpi_version", w), "%d.%d%c", &maj, &min, &extra) != 2)
        problem(w, "mpi_version is not MAJOR.MINOR");
    if (strcmp(str_of(r, "collkit_version", w), COLLKIT_VERSION) != 0)
        problem(w, "collkit_version is not %s", COLLKIT_VERSION);
    const jval *hosts = get(r, "hosts");
    if (!hosts || hosts->t != J_ARR || hosts->n != (size_t)ranks) {
        problem(w, "hosts is not an array of %d names", ranks);
    } else {
        for (size_t i = 0; i < hosts->n; i++)
            if (hosts->items[i].t != J_STR || hosts->items[i].str[0] == '\0')
                problem(w, "host %zu is not a non-empty string", i);
    }
    double g = num_of(r, "wtime_is_global", w);
    if (g != 0 && g != 1) problem(w, "wtime_is_global is not 0 or 1");
    if (!(num_of(r, "wtick", w) > 0)) problem(w, "wtick is not positive");
    launch_floor_us = num_of(r, "floor_us", w);
    double pings = num_of(r, "floor_pings", w);
    if (ranks == 1 && (launch_floor_us != 0 || pings != 0)) problem(w, "a floor measured at p = 1");
    if (ranks > 1 && !(launch_floor_us > 0 && pings > 0)) problem(w, "no positive floor_us at p > 1");
}

typedef struct {
    char **id, **status, **reason;
    size_t n;
    char **eff_name, **eff_value;
    size_t neff;
    char **unst_id, **unst_text; /* --expect-unstable ID=TEXT */
    size_t nunst;
} expectations;

static void check_point(const jval *r, const point *pt, int ranks, const expectations *ex, size_t index)
{
    char w[300];
    snprintf(w, sizeof w, "record %zu (point '%s')", index + 2, pget(pt, "id"));
    if (strcmp(str_of(r, "type", w), "point") != 0) problem(w, "type is not point");
    static const char *const same_str[] = {"id", "collective", "backend", "algorithm", "dtype", "op",
                                           "sync", "validate"};
    for (size_t i = 0; i < sizeof same_str / sizeof same_str[0]; i++)
        if (strcmp(str_of(r, same_str[i], w), pget(pt, same_str[i])) != 0)
            problem(w, "%s is '%s', the point says '%s'", same_str[i], str_of(r, same_str[i], w),
                    pget(pt, same_str[i]));
    static const char *const same_num[] = {"count", "root", "in_place", "warmup"};
    for (size_t i = 0; i < sizeof same_num / sizeof same_num[0]; i++)
        if (num_of(r, same_num[i], w) != strtod(pget(pt, same_num[i]), NULL))
            problem(w, "%s differs from the point's", same_num[i]);
    if (num_of(r, "ranks", w) != ranks) problem(w, "ranks is not %d", ranks);
    double count = strtod(pget(pt, "count"), NULL);
    double bytes = num_of(r, "bytes", w);
    if (bytes != count * (double)dtype_bytes(pget(pt, "dtype"))) problem(w, "bytes is not count x type size");

    const char *want = "ok", *want_reason = NULL;
    for (size_t i = 0; i < ex->n; i++)
        if (strcmp(ex->id[i], pget(pt, "id")) == 0) want = ex->status[i], want_reason = ex->reason[i];
    const char *status = str_of(r, "status", w), *reason = str_of(r, "reason", w);
    if (strcmp(status, want) != 0) problem(w, "status is '%s' (reason '%s'), expected '%s'", status, reason, want);
    if (strcmp(status, "ok") == 0 && reason[0] != '\0') problem(w, "ok with a reason");
    if (strcmp(status, "ok") != 0 && reason[0] == '\0') problem(w, "%s without a reason", status);
    if (want_reason && !strstr(reason, want_reason))
        problem(w, "reason '%s' does not contain '%s'", reason, want_reason);

    const jval *times = get(r, "times_us");
    if (!times || times->t != J_ARR) {
        problem(w, "times_us missing");
        return;
    }
    double iters = num_of(r, "iterations", w), late = num_of(r, "late_iterations", w);
    if (iters != (double)times->n) problem(w, "iterations is not the length of times_us");
    if (late < 0 || (late > 0 && strcmp(pget(pt, "sync"), "window") != 0))
        problem(w, "late iterations without window sync");
    double attempted = iters + late, mn = strtod(pget(pt, "min_iters"), NULL),
           mx = strtod(pget(pt, "max_iters"), NULL);
    double validated = num_of(r, "validated_iterations", w);
    const char *val = pget(pt, "validate");
    if (strcmp(status, "ok") == 0) {
        if (attempted > mx) problem(w, "more iterations than max_iters");
        if (iters < mn && attempted != mx) problem(w, "fewer kept iterations than min_iters before max_iters");
        double want_v = strcmp(val, "none") == 0 ? 0 : strcmp(val, "first") == 0 ? (attempted > 0) : attempted;
        if (validated != want_v) problem(w, "validated_iterations is %g, expected %g", validated, want_v);
    }
    if (strcmp(status, "invalid") == 0 && !(validated >= 1)) problem(w, "invalid without a validated iteration");
    if (strcmp(status, "failed") == 0 && iters != 0) problem(w, "failed with kept times");

    const char *impl = str_of(r, "implausible", w);
    const jval *sts = get(r, "stats_us");
    double med = sts && sts->t == J_OBJ ? num_of(sts, "median", w) : 0;
    int below = iters > 0 && launch_floor_us > 0 && med < launch_floor_us;
    if (below != (impl[0] != '\0'))
        problem(w, "implausible '%s' but median %g vs floor %g", impl, med, launch_floor_us);
    if (below && !strstr(impl, "below the one-message floor"))
        problem(w, "implausible reason '%s' does not name the floor", impl);
    if (expect_all_implausible && iters > 0 && !below) problem(w, "expected to be flagged implausible");

    /* The steady-state mark (docs/bench-protocol.md): a string, empty for a
     * failed point (no times to be unsteady), the expected text where asked. */
    const char *unst = str_of(r, "unstable", w);
    if (strcmp(status, "failed") == 0 && unst[0] != '\0') problem(w, "failed but marked unstable '%s'", unst);
    if (!(num_of(r, "settle_windows", w) >= 0)) problem(w, "settle_windows negative");
    for (size_t i = 0; i < ex->nunst; i++)
        if (strcmp(ex->unst_id[i], pget(pt, "id")) == 0 && !strstr(unst, ex->unst_text[i]))
            problem(w, "unstable is '%s', expected it to contain '%s'", unst, ex->unst_text[i]);

    /* Statistics and bandwidth, recomputed here. */
    double *t = malloc((times->n + 1) * sizeof *t);
    if (!t) exit(1);
    double sum = 0;
    for (size_t i = 0; i < times->n; i++) {
        if (times->items[i].t != J_NUM || !(times->items[i].num >= 0)) problem(w, "time %zu not a number >= 0", i);
        t[i] = times->items[i].num;
        sum += t[i];
    }
    qsort(t, times->n, sizeof *t, cmp_d);
    const jval *st = get(r, "stats_us");
    if (!st || st->t != J_OBJ) {
        problem(w, "stats_us missing");
        free(t);
        return;
    }
    size_t n = times->n;
    double median = n == 0 ? 0 : n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    double expect_min = n ? t[0] : 0, expect_max = n ? t[n - 1] : 0, expect_mean = n ? sum / (double)n : 0;
    if (!close_to(num_of(st, "min", w), expect_min)) problem(w, "stats min wrong");
    if (!close_to(num_of(st, "max", w), expect_max)) problem(w, "stats max wrong");
    if (!close_to(num_of(st, "median", w), median)) problem(w, "stats median wrong");
    if (!close_to(num_of(st, "mean", w), expect_mean)) problem(w, "stats mean wrong");
    double p5 = num_of(st, "p5", w), p95 = num_of(st, "p95", w), sd = num_of(st, "stdev", w);
    if (n && (p5 < expect_min - 1e-9 || p5 > median + 1e-9 || p95 < median - 1e-9 || p95 > expect_max + 1e-9))
        problem(w, "p5/p95 outside [min, median] / [median, max]");
    if (!(sd >= 0)) problem(w, "stdev negative");
    free(t);

    const char *coll = pget(pt, "collective");
    int whole = strcmp(coll, "bcast") == 0 || strcmp(coll, "reduce") == 0 || strcmp(coll, "allreduce") == 0;
    double s = whole ? bytes : bytes * ranks, p = ranks;
    double alg = median > 0 ? s / (median * 1e-6) / 1e9 : 0;
    double factor = strcmp(coll, "allreduce") == 0 ? 2 * (p - 1) / p
                    : (strcmp(coll, "bcast") == 0 || strcmp(coll, "reduce") == 0) ? 1
                                                                                  : (p - 1) / p;
    if (!close_to(num_of(r, "algbw_GBps", w), alg)) problem(w, "algbw_GBps is not S / median");
    if (!close_to(num_of(r, "busbw_GBps", w), alg * factor)) problem(w, "busbw_GBps is not algbw x factor");

    const jval *eff = get(r, "effective");
    if (!eff || eff->t != J_OBJ) {
        problem(w, "effective missing");
        return;
    }
    char rb[1024];
    snprintf(rb, sizeof rb, "%s", pget(pt, "readback"));
    size_t names = 0;
    for (char *tok = strtok(rb, ","); tok; tok = strtok(NULL, ","), names++) {
        const jval *v = get(eff, tok);
        if (!v || v->t != J_STR) {
            problem(w, "effective lacks '%s'", tok);
            continue;
        }
        for (size_t i = 0; i < ex->neff; i++)
            if (strcmp(ex->eff_name[i], tok) == 0 && strcmp(ex->eff_value[i], v->str) != 0)
                problem(w, "effective %s is '%s', expected '%s'", tok, v->str, ex->eff_value[i]);
    }
    if (eff->n != names) problem(w, "effective has %zu entries for %zu readback names", eff->n, names);
}

static void split_expect(char *arg, char **a, char **b, char **c)
{
    char *eq = strchr(arg, '=');
    if (!eq) {
        fprintf(stderr, "check_records: bad expectation '%s'\n", arg);
        exit(2);
    }
    *eq = '\0';
    *a = arg;
    *b = eq + 1;
    if (c) {
        char *colon = strchr(*b, ':');
        *c = NULL;
        if (colon) *colon = '\0', *c = colon + 1;
    }
}

int main(int argc, char **argv)
{
    const char *points_path = NULL, *records_path = NULL;
    int ranks = 0;
    expectations ex = {0};
    ex.id = calloc((size_t)argc, sizeof(char *));
    ex.status = calloc((size_t)argc, sizeof(char *));
    ex.reason = calloc((size_t)argc, sizeof(char *));
    ex.eff_name = calloc((size_t)argc, sizeof(char *));
    ex.eff_value = calloc((size_t)argc, sizeof(char *));
    ex.unst_id = calloc((size_t)argc, sizeof(char *));
    ex.unst_text = calloc((size_t)argc, sizeof(char *));
    if (!ex.id || !ex.status || !ex.reason || !ex.eff_name || !ex.eff_value || !ex.unst_id || !ex.unst_text)
        return 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--points") == 0) points_path = argv[i + 1];
        else if (strcmp(argv[i], "--records") == 0) records_path = argv[i + 1];
        else if (strcmp(argv[i], "--ranks") == 0) ranks = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--expect") == 0)
            split_expect(argv[i + 1], &ex.id[ex.n], &ex.status[ex.n], &ex.reason[ex.n]), ex.n++;
        else if (strcmp(argv[i], "--expect-implausible") == 0)
            expect_all_implausible = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--expect-unstable") == 0)
            split_expect(argv[i + 1], &ex.unst_id[ex.nunst], &ex.unst_text[ex.nunst], NULL), ex.nunst++;
        else if (strcmp(argv[i], "--expect-effective") == 0)
            split_expect(argv[i + 1], &ex.eff_name[ex.neff], &ex.eff_value[ex.neff], NULL), ex.neff++;
        else {
            fprintf(stderr, "check_records: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!points_path || !records_path || ranks < 1) {
        fprintf(stderr, "usage: check_records --points F --records F --ranks P [--expect ID=STATUS[:TEXT]]...\n");
        return 2;
    }
    size_t npoints = 0;
    point *pts = read_points(points_path, &npoints);
    if (!pts) {
        fprintf(stderr, "check_records: cannot read %s\n", points_path);
        return 1;
    }
    FILE *f = fopen(records_path, "r");
    if (!f) {
        fprintf(stderr, "check_records: cannot read %s\n", records_path);
        return 1;
    }
    size_t nrec = 0, cap = 0;
    char *line = NULL;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) >= 0) {
        size_t len = (size_t)got;
        char where[64];
        snprintf(where, sizeof where, "record %zu", nrec + 1);
        if (len == 0 || line[len - 1] != '\n') problem(where, "line does not end in a newline");
        jparser jp = {line, 0};
        jval v;
        parse_value(&jp, &v);
        skip_ws(&jp);
        if (jp.bad || *jp.s != '\0' || v.t != J_OBJ) {
            problem(where, "not one JSON object");
        } else if (nrec == 0) {
            check_launch(&v, ranks);
        } else if (nrec - 1 < npoints) {
            check_point(&v, &pts[nrec - 1], ranks, &ex, nrec - 1);
        }
        jfree(&v);
        nrec++;
    }
    fclose(f);
    free(line);
    if (nrec != npoints + 1)
        problem(records_path, "%zu records, expected %zu (launch + one per point)", nrec, npoints + 1);
    if (problems == 0) printf("check_records: %zu records ok\n", nrec);
    for (size_t i = 0; i < npoints; i++)
        for (int k = 0; k < pts[i].n; k++) free(pts[i].key[k]), free(pts[i].val[k]);
    free(pts);
    free(ex.id), free(ex.status), free(ex.reason), free(ex.eff_name), free(ex.eff_value);
    free(ex.unst_id), free(ex.unst_text);
    return problems ? 1 : 0;
}
