/* The race states of a rules file (race_state.h), line by line. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include "race_state.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIX "fix: autotune again without COLLKIT_AUTOTUNE_FROM, or restore the file collkit-preload wrote"

static int bad(const char *path, int lineno, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "COLLKIT_RULES: %s:%d: damaged race state: %s; " FIX, path, lineno, what);
    return -1;
}

static int starts(const char *line, const char *word)
{
    size_t n = strlen(word);
    return strncmp(line, word, n) == 0 && (line[n] == ' ' || line[n] == '\t');
}

int ckp_race_is_line(const char *line)
{
    while (*line == ' ' || *line == '\t') line++;
    return starts(line, "race") || starts(line, "race_candidate") || starts(line, "race_samples");
}

static int get_long(const char *s, long lo, long hi, long *v)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi) return -1;
    *v = (long)x;
    return 0;
}

static int get_double(const char *s, double lo, double hi, double *v)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(x) || x < lo || x > hi) return -1;
    *v = x;
    return 0;
}

static int get_name(const char *s, char *out)
{
    size_t n = strlen(s);
    if (n == 0 || n >= CKP_RACE_NAME) return -1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f) return -1;
    memcpy(out, s, n + 1);
    return 0;
}

static ckp_race *find(ckp_races *rs, long id)
{
    for (size_t i = 0; i < rs->n; i++)
        if (rs->race[i].id == id) return &rs->race[i];
    return NULL;
}

static ckp_race_cand *find_cand(ckp_race *r, const char *name)
{
    for (int i = 0; i < r->ncand; i++)
        if (strcmp(r->cand[i].name, name) == 0) return &r->cand[i];
    return NULL;
}

#define MAX_FIELDS 256

static int header(ckp_races *rs, char **f, int n, int lineno, const char *path, char *err, size_t errlen)
{
    if (n != 19) return bad(path, lineno, "expected race ID COLLECTIVE GROUP BYTES ROOT DATATYPE OP IN_PLACE CALLS "
                            "EXPLORED LOOKS MAX_LOOKS ALPHA RESUME_AT WORKING_S WAITING_S PAUSED_S RUN_CALLS", err,
                            errlen);
    ckp_race r = {.lineno = lineno};
    long v;
    char *end = NULL;
    if (get_long(f[1], 1, 1000000000L, &r.id) != 0) return bad(path, lineno, "ID", err, errlen);
    if (find(rs, r.id)) return bad(path, lineno, "ID given twice", err, errlen);
    if (ck_collective_parse(f[2], &r.coll) != 0) return bad(path, lineno, "COLLECTIVE", err, errlen);
    errno = 0;
    r.group = strtoull(f[3], &end, 16);
    if (errno || strlen(f[3]) != 16 || *end) return bad(path, lineno, "GROUP (16 hex digits)", err, errlen);
    if (f[4][0] < '0' || f[4][0] > '9') return bad(path, lineno, "BYTES", err, errlen);
    errno = 0;
    unsigned long long b = strtoull(f[4], &end, 10);
    if (errno || *end || b > SIZE_MAX) return bad(path, lineno, "BYTES", err, errlen);
    r.bytes = (size_t)b;
    if (get_long(f[5], -1, INT32_MAX, &v) != 0 || (v >= 0) != (ck_collective_has_root(r.coll) != 0))
        return bad(path, lineno, "ROOT (-1 unless the collective has one)", err, errlen);
    r.root = (int)v;
    if (get_name(f[6], r.datatype) != 0 || get_name(f[7], r.op) != 0)
        return bad(path, lineno, "DATATYPE or OP", err, errlen);
    if (get_long(f[8], 0, 1, &v) != 0) return bad(path, lineno, "IN_PLACE (0 or 1)", err, errlen);
    r.in_place = (int)v;
    if (get_long(f[9], 1, INT64_MAX / 2, &r.calls) != 0 || get_long(f[10], 1, r.calls, &r.explored) != 0)
        return bad(path, lineno, "CALLS or EXPLORED (1 <= EXPLORED <= CALLS)", err, errlen);
    if (get_long(f[12], 1, 64, &v) != 0) return bad(path, lineno, "MAX_LOOKS (1 to 64)", err, errlen);
    r.max_looks = (int)v;
    if (get_long(f[11], 1, r.max_looks, &v) != 0) return bad(path, lineno, "LOOKS (1 to MAX_LOOKS)", err, errlen);
    r.looks = (int)v;
    if (get_double(f[13], 1e-12, 0.5, &r.alpha) != 0) return bad(path, lineno, "ALPHA", err, errlen);
    if (get_long(f[14], 0, INT64_MAX / 2, &r.resume_at) != 0) return bad(path, lineno, "RESUME_AT", err, errlen);
    if (get_double(f[15], 0, 1e12, &r.working_s) != 0 || get_double(f[16], 0, 1e12, &r.waiting_s) != 0 ||
        get_double(f[17], 0, 1e12, &r.paused_s) != 0)
        return bad(path, lineno, "WORKING_S, WAITING_S or PAUSED_S", err, errlen);
    if (get_long(f[18], 1, r.calls, &r.run_calls) != 0) return bad(path, lineno, "RUN_CALLS (1 to CALLS)", err, errlen);
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? 2 * rs->cap : 8;
        ckp_race *grown = realloc(rs->race, cap * sizeof *grown);
        if (!grown) return bad(path, lineno, "out of memory", err, errlen);
        rs->race = grown;
        rs->cap = cap;
    }
    rs->race[rs->n++] = r;
    return 0;
}

static int candidate(ckp_races *rs, char **f, int n, int lineno, const char *path, char *err, size_t errlen)
{
    long id, look, count;
    if (n != 6) return bad(path, lineno, "expected race_candidate ID NAME OUT_LOOK OUT_P N", err, errlen);
    if (get_long(f[1], 1, 1000000000L, &id) != 0) return bad(path, lineno, "ID", err, errlen);
    ckp_race *r = find(rs, id);
    if (!r) return bad(path, lineno, "a candidate of no race line above", err, errlen);
    if (r->ncand == CKP_RACE_MAX_CANDIDATES) return bad(path, lineno, "too many candidates", err, errlen);
    ckp_race_cand c = {0};
    if (get_name(f[2], c.name) != 0 || find_cand(r, c.name)) return bad(path, lineno, "NAME (given twice?)", err, errlen);
    const int library = strcmp(c.name, "library") == 0 || (strncmp(c.name, "library:", 8) == 0 && c.name[8]);
    if (!library && ck_algorithm_find(r->coll, c.name) == NULL)
        return bad(path, lineno, "NAME is no algorithm of the collective", err, errlen);
    if (get_long(f[3], 0, r->looks, &look) != 0) return bad(path, lineno, "OUT_LOOK (0 to LOOKS)", err, errlen);
    c.out_look = (int)look;
    if (get_double(f[4], 0, 1, &c.out_p) != 0) return bad(path, lineno, "OUT_P (0 to 1)", err, errlen);
    if (get_long(f[5], 1, CKP_RACE_MAX_SAMPLES, &count) != 0 || count > r->explored)
        return bad(path, lineno, "N (1 to EXPLORED)", err, errlen);
    c.n = (size_t)count;
    c.t = malloc(c.n * sizeof *c.t);
    if (!c.t) return bad(path, lineno, "out of memory", err, errlen);
    r->cand[r->ncand++] = c;
    return 0;
}

static int samples(ckp_races *rs, char **f, int n, int lineno, const char *path, char *err, size_t errlen)
{
    long id;
    if (n < 4) return bad(path, lineno, "expected race_samples ID NAME T ...", err, errlen);
    if (get_long(f[1], 1, 1000000000L, &id) != 0) return bad(path, lineno, "ID", err, errlen);
    ckp_race *r = find(rs, id);
    ckp_race_cand *c = r ? find_cand(r, f[2]) : NULL;
    if (!c) return bad(path, lineno, "samples of no race_candidate line above", err, errlen);
    for (int i = 3; i < n; i++) {
        if (c->have == c->n) return bad(path, lineno, "more samples than the candidate's N", err, errlen);
        if (get_double(f[i], 0, 1e6, &c->t[c->have]) != 0) return bad(path, lineno, "a sample (seconds)", err, errlen);
        c->have++;
    }
    return 0;
}

int ckp_race_line(ckp_races *rs, char *line, int lineno, const char *path, char *err, size_t errlen)
{
    char *f[MAX_FIELDS];
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        if (n == MAX_FIELDS) return bad(path, lineno, "too many fields", err, errlen);
        f[n++] = t;
    }
    if (n && strcmp(f[0], "race") == 0) return header(rs, f, n, lineno, path, err, errlen);
    if (n && strcmp(f[0], "race_candidate") == 0) return candidate(rs, f, n, lineno, path, err, errlen);
    return samples(rs, f, n, lineno, path, err, errlen);
}

int ckp_race_done(const ckp_races *rs, const char *path, char *err, size_t errlen)
{
    for (size_t i = 0; i < rs->n; i++) {
        const ckp_race *r = &rs->race[i];
        int alive = 0;
        long total = 0;
        if (r->ncand < 2) return bad(path, r->lineno, "fewer than two candidates", err, errlen);
        for (int j = 0; j < r->ncand; j++) {
            if (r->cand[j].have != r->cand[j].n)
                return bad(path, r->lineno, "a candidate lacks samples (the file was cut?)", err, errlen);
            alive += r->cand[j].out_look == 0;
            total += (long)r->cand[j].n;
        }
        if (alive < 2) return bad(path, r->lineno, "fewer than two candidates in the race", err, errlen);
        if (total != r->explored) return bad(path, r->lineno, "the candidates' N do not add up to EXPLORED", err, errlen);
    }
    if (rs->n && rs->world_size == 0)
        return bad(path, rs->race[0].lineno, "no world_size line", err, errlen);
    return 0;
}

void ckp_races_free(ckp_races *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        for (int j = 0; j < rs->race[i].ncand; j++) free(rs->race[i].cand[j].t);
    free(rs->race);
    rs->race = NULL;
    rs->n = rs->cap = 0;
}
