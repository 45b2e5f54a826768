/* The collkit rules format (docs/preload.md): one rule a line,
 *     COLLECTIVE  RANKS  BYTES  CHOICE
 * RANKS and BYTES are N, A-B, A-* or *; BYTES is count times the datatype size
 * (one block for per-block collectives), as in collkit-bench's points; CHOICE
 * is an algorithm of the collective or `library`. '#' starts a comment; the
 * first rule that matches a call wins, no rule means the library. One setting
 * line, `allow_fp_rank_variant = true|false` (default false), lets rules run
 * CK_TRAIT_FP_RANK_VARIANT algorithms on floating-point reductions; and
 * `mpi_library = TEXT`, the library the autotuner learned them on, which
 * must be the program's. */
#include "ck_preload.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_num(const char *s, unsigned long long *v)
{
    if (*s < '0' || *s > '9') return -1;
    char *end = NULL;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return (errno || *end) ? -1 : 0;
}

/* "N", "A-B", "A-*", "*" into [lo, hi]; -1 when malformed or empty. */
static int parse_range(char *s, unsigned long long maxv, unsigned long long *lo, unsigned long long *hi)
{
    if (strcmp(s, "*") == 0) {
        *lo = 0;
        *hi = maxv;
        return 0;
    }
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

/* `KEY = VALUE`: the one setting the format has. 0, or -1 with a message. */
static int parse_setting(ckp_config *cfg, char **fields, const char *path, int lineno, char *err,
                         size_t errlen)
{
    if (strcmp(fields[0], "allow_fp_rank_variant") != 0) {
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: unknown setting '%s'; fix: the one setting is "
                 "allow_fp_rank_variant = true|false", path, lineno, fields[0]);
        return -1;
    }
    if (strcmp(fields[2], "true") == 0) cfg->allow_fp_rank_variant = 1;
    else if (strcmp(fields[2], "false") == 0) cfg->allow_fp_rank_variant = 0;
    else {
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: allow_fp_rank_variant = '%s'; fix: true or false",
                 path, lineno, fields[2]);
        return -1;
    }
    return 0;
}

static int check_library(char *rest, const char *path, int lineno, char *err, size_t errlen)
{
    while (*rest == ' ' || *rest == '\t') rest++;
    if (*rest != '=') {
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: expected mpi_library = TEXT; fix: see docs/preload.md", path,
                 lineno);
        return -1;
    }
    rest++;
    while (*rest == ' ' || *rest == '\t') rest++;
    size_t end = strlen(rest);
    while (end && (rest[end - 1] == '\n' || rest[end - 1] == '\r' || rest[end - 1] == ' ' || rest[end - 1] == '\t'))
        rest[--end] = '\0';
    char mine[MPI_MAX_LIBRARY_VERSION_STRING];
    ckp_library_line(mine, sizeof mine);
    if (strcmp(rest, mine) != 0) {
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: learned on MPI library '%s', this program runs on '%s'; fix: "
                 "autotune again on this MPI (collkit preload --autotune), or delete the mpi_library line to use "
                 "the rules anyway", path, lineno, rest, mine);
        return -1;
    }
    return 0;
}

static int add_rule(ckp_config *cfg, const ckp_rule *r, size_t *cap)
{
    if (cfg->nrules == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        ckp_rule *n = realloc(cfg->rules, ncap * sizeof *n);
        if (!n) return -1;
        cfg->rules = n;
        *cap = ncap;
    }
    cfg->rules[cfg->nrules++] = *r;
    return 0;
}

int ckp_rules_load(const char *path, ckp_config *cfg, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "COLLKIT_RULES: cannot read %s (%s); fix: point it at a collkit rules file",
                 path, strerror(errno));
        return -1;
    }
    char line[1024];
    size_t cap = 0;
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        /* `mpi_library = TEXT`: the library the rules were learned on (the
         * autotuner writes it); rules learned on another MPI describe another
         * library's collectives and stop the program. Its text may hold '#'. */
        if (strncmp(line, "mpi_library", 11) == 0 && (line[11] == ' ' || line[11] == '\t' || line[11] == '=')) {
            if (check_library(line + 11, path, lineno, err, errlen) != 0) {
                rc = -1;
                break;
            }
            continue;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *fields[5] = {0};
        int n = 0;
        char *save = NULL;
        for (char *t = strtok_r(line, " \t\r\n", &save); t && n < 5; t = strtok_r(NULL, " \t\r\n", &save))
            fields[n++] = t;
        if (n == 0) continue;
        if (n == 3 && strcmp(fields[1], "=") == 0) {
            if (parse_setting(cfg, fields, path, lineno, err, errlen) != 0) {
                rc = -1;
                break;
            }
            continue;
        }
        ckp_rule r;
        unsigned long long lo, hi;
        if (n != 4) {
            snprintf(err, errlen, "COLLKIT_RULES: %s:%d: expected COLLECTIVE RANKS BYTES CHOICE; fix: see docs/preload.md",
                     path, lineno);
            rc = -1;
            break;
        }
        if (ck_collective_parse(fields[0], &r.coll) != 0) {
            snprintf(err, errlen, "COLLKIT_RULES: %s:%d: unknown collective '%s'; fix: use bcast, reduce, gather, "
                     "scatter, allgather, reduce_scatter, allreduce or alltoall", path, lineno, fields[0]);
            rc = -1;
            break;
        }
        const int any_ranks = strcmp(fields[1], "*") == 0;
        if (parse_range(fields[1], INT32_MAX, &lo, &hi) || (lo < 1 && !any_ranks)) {
            snprintf(err, errlen, "COLLKIT_RULES: %s:%d: bad rank range '%s'; fix: N, A-B, A-* or * with A >= 1",
                     path, lineno, fields[1]);
            rc = -1;
            break;
        }
        r.pmin = any_ranks ? 1 : (int)lo;
        r.pmax = (int)hi;
        if (parse_range(fields[2], SIZE_MAX, &lo, &hi)) {
            snprintf(err, errlen, "COLLKIT_RULES: %s:%d: bad byte range '%s'; fix: N, A-B, A-* or *",
                     path, lineno, fields[2]);
            rc = -1;
            break;
        }
        r.bmin = (size_t)lo;
        r.bmax = (size_t)hi;
        r.alg = -1;
        if (strcmp(fields[3], "library") != 0) {
            int col = ckp_column_find(r.coll, fields[3]);
            if (col == -2) {
                snprintf(err, errlen, "COLLKIT_RULES: %s:%d: unknown %s algorithm '%s'; fix: a name from "
                         "`collkit algorithms`, library, or library:NAME of an algorithm this MPI switches per "
                         "call (docs/preload.md)", path, lineno, fields[0], fields[3]);
                rc = -1;
                break;
            }
            r.alg = col;
        }
        if (add_rule(cfg, &r, &cap) != 0) {
            snprintf(err, errlen, "COLLKIT_RULES: %s: out of memory reading the rules", path);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "COLLKIT_RULES: error reading %s; fix: point it at a readable file", path);
        rc = -1;
    }
    fclose(f);
    return rc;
}
