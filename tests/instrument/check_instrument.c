/*
 * check_instrument: checks the `instrument` objects of collkit-bench-instr
 * records (docs/bench-protocol.md, "Instrumented records"), with its own
 * small JSON reader so that it shares no code with the writer.
 *
 *   check_instrument --points F --records F.jsonl --ranks P
 *                    [--expect-dropped] [--expect-absent]
 *
 * Every point must be `ok`. With --expect-absent no record may carry an
 * `instrument` key (the plain collkit-bench). Otherwise every record has one,
 * and: iterations as in the record; the breakdown's comm + reduce + copy +
 * other equal end_to_end, which equals the record's median (likewise the
 * mean breakdown and the mean); the parts are not negative and the tagged
 * parts fit in the call; unbalanced is 0; dropped is 0, or (with
 * --expect-dropped) positive; every tag has a known category matching its
 * name, count > 0, 1 <= ranks <= P, median <= max, and max * iterations <=
 * total; a libcollkit point has comm tags (unless records were dropped), an
 * MPI-library point has no tags (so none dropped) and all its time in other. Exit 0 when all holds, else one line per problem
 * on stderr and exit 1.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { JNULL, JBOOL, JNUM, JSTR, JARR, JOBJ } jkind;

typedef struct node {
    jkind k;
    double num;
    char *str;         /* JSTR value */
    char **names;      /* JOBJ member names */
    struct node *kids; /* JARR elements or JOBJ values */
    size_t n, cap;
} node;

typedef struct {
    const char *at;
    int err;
} reader;

static void node_free(node *v)
{
    for (size_t i = 0; i < v->n; i++) {
        node_free(&v->kids[i]);
        if (v->names) free(v->names[i]);
    }
    free(v->kids);
    free(v->names);
    free(v->str);
}

static void spaces(reader *r)
{
    while (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r') r->at++;
}

/* Strings: the writer escapes only '"', '\\' and control characters; \uXXXX
 * is kept as a '?' (tag names and ids are ASCII). */
static char *read_string(reader *r)
{
    if (*r->at != '"') {
        r->err = 1;
        return NULL;
    }
    r->at++;
    size_t cap = 16, len = 0;
    char *s = malloc(cap);
    while (s && *r->at && *r->at != '"') {
        char c = *r->at++;
        if (c == '\\') {
            char e = *r->at++;
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
            if (e == 'u') {
                for (int i = 0; i < 4 && *r->at; i++) r->at++;
                c = '?';
            }
        }
        if (len + 2 > cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                s = NULL;
                break;
            }
            s = t;
        }
        s[len++] = c;
    }
    if (s == NULL || *r->at != '"') {
        free(s);
        r->err = 1;
        return NULL;
    }
    r->at++;
    s[len] = '\0';
    return s;
}

static node *add_kid(node *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 8;
        node *k = realloc(v->kids, cap * sizeof *k);
        char **nm = v->k == JOBJ ? realloc(v->names, cap * sizeof *nm) : NULL;
        if (!k || (v->k == JOBJ && !nm)) exit(3);
        v->kids = k;
        if (v->k == JOBJ) v->names = nm;
        v->cap = cap;
    }
    memset(&v->kids[v->n], 0, sizeof v->kids[v->n]);
    return &v->kids[v->n++];
}

static void read_value(reader *r, node *v)
{
    spaces(r);
    char c = *r->at;
    if (c == '{' || c == '[') {
        v->k = c == '{' ? JOBJ : JARR;
        r->at++;
        spaces(r);
        if (*r->at == (c == '{' ? '}' : ']')) {
            r->at++;
            return;
        }
        for (;;) {
            spaces(r);
            char *name = NULL;
            if (v->k == JOBJ) {
                name = read_string(r);
                spaces(r);
                if (r->err || *r->at != ':') {
                    free(name);
                    r->err = 1;
                    return;
                }
                r->at++;
            }
            node *kid = add_kid(v);
            if (v->k == JOBJ) v->names[v->n - 1] = name;
            read_value(r, kid);
            if (r->err) return;
            spaces(r);
            if (*r->at == ',') {
                r->at++;
                continue;
            }
            if (*r->at == (v->k == JOBJ ? '}' : ']')) {
                r->at++;
                return;
            }
            r->err = 1;
            return;
        }
    }
    if (c == '"') {
        v->k = JSTR;
        v->str = read_string(r);
        return;
    }
    if (strncmp(r->at, "true", 4) == 0 || strncmp(r->at, "false", 5) == 0) {
        v->k = JBOOL;
        v->num = c == 't';
        r->at += c == 't' ? 4 : 5;
        return;
    }
    if (strncmp(r->at, "null", 4) == 0) {
        v->k = JNULL;
        r->at += 4;
        return;
    }
    char *end = NULL;
    v->k = JNUM;
    v->num = strtod(r->at, &end);
    if (end == r->at) r->err = 1;
    r->at = end;
}

static const node *member(const node *o, const char *name)
{
    if (o == NULL || o->k != JOBJ) return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->names[i], name) == 0) return &o->kids[i];
    return NULL;
}

static int problems;
static char where[256];

__attribute__((format(printf, 1, 2))) static void problem(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", where);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    problems++;
}

static double num(const node *o, const char *name)
{
    const node *v = member(o, name);
    if (v == NULL || v->k != JNUM) {
        problem("'%s' missing or not a number", name);
        return NAN;
    }
    return v->num;
}

static const char *str(const node *o, const char *name)
{
    const node *v = member(o, name);
    if (v == NULL || v->k != JSTR) {
        problem("'%s' missing or not a string", name);
        return "";
    }
    return v->str;
}

/* Numbers are written with about ten significant digits. */
static int same(double a, double b) { return fabs(a - b) <= 1e-6 * fmax(fabs(a), fabs(b)) + 1e-6; }

static void check_breakdown(const node *b, double expect_total, const char *what)
{
    static const char *const parts[] = {"comm", "reduce", "copy", "other"};
    double sum = 0.0, tagged = 0.0;
    for (int k = 0; k < 4; k++) {
        double v = num(b, parts[k]);
        sum += v;
        if (k < 3) {
            tagged += v;
            if (!(v >= 0.0)) problem("%s: negative part %g", what, v);
        }
    }
    double e2e = num(b, "end_to_end");
    if (!same(sum, e2e)) problem("%s: parts add up to %g, end_to_end is %g", what, sum, e2e);
    if (!same(e2e, expect_total)) problem("%s: end_to_end %g, the record says %g", what, e2e, expect_total);
    /* Tags lie inside the call; only the two clocks' granularity separates
     * them (other >= -1 us). */
    if (tagged > e2e + 1.0) problem("%s: tagged time %g exceeds the call's %g", what, tagged, e2e);
}

static const char *category_of(const char *name)
{
    size_t len = strcspn(name, ".");
    if (len == 4 && strncmp(name, "comm", 4) == 0) return "comm";
    if (len == 6 && strncmp(name, "reduce", 6) == 0) return "reduce";
    if (len == 4 && strncmp(name, "copy", 4) == 0) return "copy";
    return "phase";
}

static void check_record(const node *rec, int ranks, int expect_dropped, int expect_absent)
{
    snprintf(where, sizeof where, "point '%s'", member(rec, "id") && member(rec, "id")->str ? member(rec, "id")->str : "?");
    if (strcmp(str(rec, "status"), "ok") != 0) problem("status is '%s' (expected ok)", str(rec, "status"));
    const node *in = member(rec, "instrument");
    if (expect_absent) {
        if (in != NULL) problem("has an instrument key");
        return;
    }
    if (in == NULL || in->k != JOBJ) {
        problem("no instrument object");
        return;
    }
    double iters = num(in, "iterations");
    if (iters != num(rec, "iterations") || !(iters > 0))
        problem("instrument iterations %g, record %g", iters, num(rec, "iterations"));
    int is_mpi = strcmp(str(rec, "backend"), "mpi") == 0;
    double dropped = num(in, "dropped"), unbalanced = num(in, "unbalanced");
    if (unbalanced != 0) problem("unbalanced %g", unbalanced);
    /* The MPI library's collective leaves no tags to drop. */
    int want_dropped = expect_dropped && !is_mpi;
    if (want_dropped ? !(dropped > 0) : dropped != 0)
        problem("dropped is %g, expected %s", dropped, want_dropped ? "> 0" : "0");
    const node *stats = member(rec, "stats_us");
    check_breakdown(member(in, "breakdown_us"), num(stats, "median"), "breakdown_us");
    check_breakdown(member(in, "breakdown_mean_us"), num(stats, "mean"), "breakdown_mean_us");
    if (str(in, "breakdown_basis")[0] == '\0') problem("empty breakdown_basis");

    const node *tags = member(in, "tags");
    if (tags == NULL || tags->k != JARR) {
        problem("no tags array");
        return;
    }
    size_t ncomm = 0;
    for (size_t i = 0; i < tags->n; i++) {
        const node *t = &tags->kids[i];
        const char *name = str(t, "name"), *cat = str(t, "category");
        if (strcmp(cat, category_of(name)) != 0) problem("tag '%s': category does not match its name", name);
        ncomm += strcmp(cat, "comm") == 0;
        double count = num(t, "count"), nr = num(t, "ranks"), total = num(t, "total_us");
        double med = num(t, "median_us"), max = num(t, "max_us"), step = num(t, "step");
        if (!(count > 0)) problem("tag '%s': count %g", name, count);
        if (!(nr >= 1 && nr <= ranks)) problem("tag '%s': ranks %g", name, nr);
        if (!(step >= -1)) problem("tag '%s': step %g", name, step);
        if (!(med >= 0 && med <= max * (1 + 1e-9))) problem("tag '%s': median %g, max %g", name, med, max);
        /* max is one rank's mean per iteration, total is over all ranks. */
        if (max * iters > total * (1 + 1e-6) + 1e-3) problem("tag '%s': max %g x iterations > total %g", name, max, total);
    }
    if (is_mpi) {
        if (tags->n != 0) problem("MPI-library point with %zu tags", tags->n);
        const node *b = member(in, "breakdown_us");
        if (!same(num(b, "other"), num(b, "end_to_end"))) problem("MPI-library point: other %g != end_to_end %g", num(b, "other"), num(b, "end_to_end"));
    } else if (ncomm == 0 && !expect_dropped) {
        problem("libcollkit point without comm tags");
    }
}

int main(int argc, char **argv)
{
    const char *points = NULL, *records = NULL;
    int ranks = 0, expect_dropped = 0, expect_absent = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--points") == 0 && i + 1 < argc) points = argv[++i];
        else if (strcmp(argv[i], "--records") == 0 && i + 1 < argc) records = argv[++i];
        else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) ranks = atoi(argv[++i]);
        else if (strcmp(argv[i], "--expect-dropped") == 0) expect_dropped = 1;
        else if (strcmp(argv[i], "--expect-absent") == 0) expect_absent = 1;
        else {
            fprintf(stderr, "check_instrument: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!points || !records || ranks < 1) {
        fprintf(stderr, "usage: check_instrument --points F --records F --ranks P [--expect-dropped] [--expect-absent]\n");
        return 2;
    }
    size_t npoints = 0, nrec = 0;
    char line[1 << 16];
    FILE *f = fopen(points, "r");
    if (!f) {
        perror(points);
        return 2;
    }
    while (fgets(line, sizeof line, f)) {
        char *s = line + strspn(line, " \t");
        npoints += *s != '#' && *s != '\n' && *s != '\0';
    }
    fclose(f);
    f = fopen(records, "r");
    if (!f) {
        perror(records);
        return 2;
    }
    /* Records can be long (times_us): read whole lines of any length. */
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int c;
    while (buf) {
        len = 0;
        while ((c = fgetc(f)) != EOF && c != '\n') {
            if (len + 1 == cap) {
                char *t = realloc(buf, cap *= 2);
                if (!t) return 3;
                buf = t;
            }
            buf[len++] = (char)c;
        }
        buf[len] = '\0';
        if (len > 0) {
            reader r = {buf, 0};
            node root;
            memset(&root, 0, sizeof root);
            read_value(&r, &root);
            if (r.err || root.k != JOBJ) {
                snprintf(where, sizeof where, "%s", records);
                problem("unreadable JSON line");
            } else if (member(&root, "type") && member(&root, "type")->str &&
                       strcmp(member(&root, "type")->str, "point") == 0) {
                nrec++;
                check_record(&root, ranks, expect_dropped, expect_absent);
            }
            node_free(&root);
        }
        if (c == EOF) break;
    }
    free(buf);
    fclose(f);
    if (nrec != npoints) {
        snprintf(where, sizeof where, "%s", records);
        problem("%zu point records for %zu points", nrec, npoints);
    }
    if (problems) return 1;
    printf("check_instrument: %zu records checked\n", nrec);
    return 0;
}
