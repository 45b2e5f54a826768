/* The collkit rules format (docs/preload.md): one rule a line,
 *     COLLECTIVE  RANKS  BYTES  CHOICE
 * RANKS and BYTES are N, A-B, A-* or *; BYTES is count times the datatype size
 * (one block for per-block collectives), as in collkit-bench's points; CHOICE
 * is an algorithm of the collective, `library`, or `library:NAME`. '#' starts
 * a comment; the first rule that matches a call wins, no rule means the
 * library. One setting line, `allow_fp_rank_variant = true|false` (default
 * false), lets rules run CK_TRAIT_FP_RANK_VARIANT algorithms on
 * floating-point reductions; and `mpi_library = TEXT`, the library the
 * autotuner learned them on (its TEXT may hold '#'). The autotuner's race
 * states (`world_size = N` and the race lines) are race_state.h's. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include "rules_grammar.h"
#include "race_state.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest line read whole; a longer one is refused, not cut. */
#define LINE_MAX_BYTES 1024

static int parse_num(const char *s, unsigned long long *v)
{
    if (*s < '0' || *s > '9') return -1;
    char *end = NULL;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return (errno || *end) ? -1 : 0;
}

/* "N", "A-B", "A-*", "*" into [lo, hi]; -1 when malformed or empty. The
 * field is left as written (the error message quotes it). */
static int parse_range(const char *field, unsigned long long maxv, unsigned long long *lo, unsigned long long *hi)
{
    if (strcmp(field, "*") == 0) {
        *lo = 0;
        *hi = maxv;
        return 0;
    }
    char s[LINE_MAX_BYTES];
    snprintf(s, sizeof s, "%s", field);
    char *dash = strchr(s, '-');
    if (!dash) {
        if (parse_num(s, lo)) return -1;
        *hi = *lo;
    } else {
        *dash = '\0';
        if (parse_num(s, lo)) return -1;
        if (strcmp(dash + 1, "*") == 0) *hi = maxv;
        else if (parse_num(dash + 1, hi)) return -1;
    }
    return (*lo > *hi || *hi > maxv) ? -1 : 0;
}

/* `KEY = VALUE`: allow_fp_rank_variant, and the autotuner's world_size. */
static int parse_setting(char **fields, ckp_rules_line *out, const char *path, char *err, size_t errlen)
{
    if (strcmp(fields[0], "world_size") == 0) {
        unsigned long long n = 0;
        if (parse_num(fields[2], &n) != 0 || n < 1 || n > INT32_MAX) {
            snprintf(err, errlen, "COLLKIT_RULES: %s:%d: world_size = '%s'; fix: a rank count from 1 (the line "
                     "collkit-preload --autotune wrote)", path, out->lineno, fields[2]);
            return -1;
        }
        out->world_size = (long)n;
        out->kind = CKP_RULES_WORLD_SIZE;
        return 0;
    }
    if (strcmp(fields[0], "allow_fp_rank_variant") != 0) {
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: unknown setting '%s'; fix: the settings are "
                 "allow_fp_rank_variant = true|false and the autotuner's world_size = N", path, out->lineno,
                 fields[0]);
        return -1;
    }
    if (strcmp(fields[2], "true") == 0) out->allow_fp_rank_variant = 1;
    else if (strcmp(fields[2], "false") == 0) out->allow_fp_rank_variant = 0;
    else {
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: allow_fp_rank_variant = '%s'; fix: true or false",
                 path, out->lineno, fields[2]);
        return -1;
    }
    out->kind = CKP_RULES_SETTING;
    return 0;
}

/* `mpi_library = TEXT` (rest: what follows the key), trimmed into out->library. */
static int parse_library(char *rest, ckp_rules_line *out, const char *path, char *err, size_t errlen)
{
    while (*rest == ' ' || *rest == '\t') rest++;
    if (*rest != '=') {
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: expected mpi_library = TEXT; fix: see docs/preload.md", path,
                 out->lineno);
        return -1;
    }
    rest++;
    while (*rest == ' ' || *rest == '\t') rest++;
    size_t end = strlen(rest);
    while (end && (rest[end - 1] == '\n' || rest[end - 1] == '\r' || rest[end - 1] == ' ' || rest[end - 1] == '\t'))
        rest[--end] = '\0';
    out->kind = CKP_RULES_LIBRARY;
    out->library = rest;
    return 0;
}

static int parse_rule(char **fields, int n, ckp_rules_line *out, const char *path, char *err, size_t errlen)
{
    unsigned long long lo, hi;
    if (n != 4) {
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: expected COLLECTIVE RANKS BYTES CHOICE; fix: see docs/preload.md",
                 path, out->lineno);
        return -1;
    }
    if (ck_collective_parse(fields[0], &out->coll) != 0) {
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: unknown collective '%s'; fix: use bcast, reduce, gather, "
                 "scatter, allgather, reduce_scatter, allreduce or alltoall", path, out->lineno, fields[0]);
        return -1;
    }
    const int any_ranks = strcmp(fields[1], "*") == 0;
    if (parse_range(fields[1], INT32_MAX, &lo, &hi) || (lo < 1 && !any_ranks)) {
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: bad rank range '%s'; fix: N, A-B, A-* or * with A >= 1",
                 path, out->lineno, fields[1]);
        return -1;
    }
    out->pmin = any_ranks ? 1 : (int)lo;
    out->pmax = (int)hi;
    if (parse_range(fields[2], SIZE_MAX, &lo, &hi)) {
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: bad byte range '%s'; fix: N, A-B, A-* or *",
                 path, out->lineno, fields[2]);
        return -1;
    }
    out->bmin = (size_t)lo;
    out->bmax = (size_t)hi;
    out->choice = fields[3];
    out->kind = CKP_RULES_RULE;
    return 0;
}

void ckp_rules_unknown_choice(const ckp_rules_line *line, const char *path, char *err, size_t errlen)
{
    snprintf(err, errlen, "COLLKIT_RULES: %s:%d: unknown %s algorithm '%s'; fix: a name from "
             "`collkit algorithms`, library, or library:NAME of an algorithm this MPI switches per "
             "call (docs/preload.md)", path, line->lineno, ck_collective_name(line->coll), line->choice);
}

int ckp_rules_read(const char *path, ckp_rules_take take, void *ctx, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "COLLKIT_RULES: cannot read %s (%s); fix: point it at a collkit rules file",
                 path, strerror(errno));
        return -1;
    }
    char line[LINE_MAX_BYTES];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            snprintf(err, errlen, "COLLKIT_RULES: %s:%d: line longer than %d bytes; fix: see docs/preload.md",
                     path, lineno, LINE_MAX_BYTES - 2);
            rc = -1;
            break;
        }
        ckp_rules_line out = {.lineno = lineno};
        /* The library line first: its text may hold '#'. */
        if (strncmp(line, "mpi_library", 11) == 0 && (line[11] == ' ' || line[11] == '\t' || line[11] == '=')) {
            rc = parse_library(line + 11, &out, path, err, errlen);
            if (rc == 0) rc = take(&out, ctx, path, err, errlen);
            continue;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        if (ckp_race_is_line(line)) {
            out.kind = CKP_RULES_RACE;
            out.race = line;
            rc = take(&out, ctx, path, err, errlen);
            continue;
        }
        char *fields[5] = {0};
        int n = 0;
        char *save = NULL;
        for (char *t = strtok_r(line, " \t\r\n", &save); t && n < 5; t = strtok_r(NULL, " \t\r\n", &save))
            fields[n++] = t;
        if (n == 0) continue;
        if (n == 3 && strcmp(fields[1], "=") == 0) rc = parse_setting(fields, &out, path, err, errlen);
        else rc = parse_rule(fields, n, &out, path, err, errlen);
        if (rc == 0) rc = take(&out, ctx, path, err, errlen);
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "COLLKIT_RULES: error reading %s; fix: point it at a readable file", path);
        rc = -1;
    }
    fclose(f);
    return rc;
}
