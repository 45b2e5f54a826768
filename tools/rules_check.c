/* collkit-rules: the preload's own reading of a collkit rules file and its
 * fallback rule, for the Python side (predict, trial, replay, tune's check of
 * what it wrote) so that one grammar and one rule serve both
 * (preload/rules_grammar.c, preload/fallback_rule.c). Runs no MPI function.
 *
 *   collkit-rules FILE
 *       the file as JSON: {"rules": [{"line", "collective", "ranks": [lo, hi],
 *       "bytes": [lo, hi], "choice"}], "allow_fp_rank_variant", "mpi_library",
 *       "world_size", "race_states"} (race states checked as the preload checks them);
 *       a bad file: the preload's one line on standard error, status 2.
 *       library:NAME and the mpi_library line are checked against the library
 *       a program runs on, at its MPI_Init, as only it can.
 *   collkit-rules --fallback
 *       standard input, one call a line: COLLECTIVE ALGORITHM INTER SIZE ROOT
 *       BYTES COUNT DATATYPE_OK OP_KNOWN COMMUTATIVE INTEGER FP_ALLOWED
 *       (integers; fallback_rule.h says what each is); standard output, one
 *       line each: the fallback reason, or "runs". Status 2 on a bad line.
 *   collkit-rules --cvar-values
 *       standard input: MPICH CVAR descriptions, each ended by a line holding
 *       one form feed; standard output, for each: its value lines as
 *       "NAME<TAB>TEXT" (preload/cvar_values.c), then the form-feed line.
 *   collkit-rules --working
 *       standard input, one call a line: COLLECTIVE ROOT A0 E0 A1 E1 ... (each
 *       rank's arrival and exit, seconds on one clock; ROOT -1 where the
 *       collective has none); standard output, one line each: the call's
 *       working and whole time as the autotuner agrees them
 *       (preload/working_rule.c: each rank's values, reduced by maximum as
 *       its MPI_MAX allreduce does). Status 2 on a bad line. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include "cvar_values.h"
#include "fallback_rule.h"
#include "race_state.h"
#include "rules_grammar.h"
#include "working_rule.h"

#include <collkit/collkit.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

typedef struct {
    int rules, allow_fp;
    char library[1024];
    int has_library;
    ckp_races races;
} reading;

static int take(const ckp_rules_line *line, void *ctx, const char *path, char *err, size_t errlen)
{
    reading *rd = ctx;
    if (line->kind == CKP_RULES_SETTING) {
        rd->allow_fp = line->allow_fp_rank_variant;
        return 0;
    }
    if (line->kind == CKP_RULES_LIBRARY) {
        snprintf(rd->library, sizeof rd->library, "%s", line->library);
        rd->has_library = 1;
        return 0;
    }
    if (line->kind == CKP_RULES_WORLD_SIZE) {
        rd->races.world_size = line->world_size;
        return 0;
    }
    if (line->kind == CKP_RULES_RACE) return ckp_race_line(&rd->races, line->race, line->lineno, path, err, errlen);
    const char *choice = line->choice;
    const int per_call = strncmp(choice, "library:", 8) == 0 && choice[8] != '\0';
    if (strcmp(choice, "library") != 0 && !per_call && ck_algorithm_find(line->coll, choice) == NULL) {
        ckp_rules_unknown_choice(line, path, err, errlen);
        return -1;
    }
    printf("%s{\"line\": %d, \"collective\": ", rd->rules++ ? ", " : "", line->lineno);
    json_string(ck_collective_name(line->coll));
    printf(", \"ranks\": [%d, %d], \"bytes\": [%zu, %zu], \"choice\": ", line->pmin, line->pmax, line->bmin,
           line->bmax);
    json_string(choice);
    putchar('}');
    return 0;
}

static int read_rules(const char *path)
{
    char err[2048];
    reading rd = {0};
    /* The rules go out as they are read; a bad line later discards them all
     * (the caller reads standard output only at status 0). */
    printf("{\"rules\": [");
    if (ckp_rules_read(path, take, &rd, err, sizeof err) != 0 || ckp_race_done(&rd.races, path, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        ckp_races_free(&rd.races);
        return 2;
    }
    printf("], \"allow_fp_rank_variant\": %s, \"mpi_library\": ", rd.allow_fp ? "true" : "false");
    if (rd.has_library) json_string(rd.library);
    else printf("null");
    printf(", \"world_size\": ");
    if (rd.races.world_size) printf("%ld", rd.races.world_size);
    else printf("null");
    printf(", \"race_states\": %zu}\n", rd.races.n);
    ckp_races_free(&rd.races);
    return fflush(stdout) == 0 ? 0 : 1;
}

static int parse_ll(const char *s, long long *v)
{
    char *end = NULL;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return (errno || end == s || *end) ? -1 : 0;
}

static int fallbacks(void)
{
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, stdin)) {
        lineno++;
        char *f[13] = {0};
        int n = 0;
        char *save = NULL;
        for (char *t = strtok_r(line, " \t\r\n", &save); t && n < 13; t = strtok_r(NULL, " \t\r\n", &save))
            f[n++] = t;
        if (n == 0) continue;
        long long v[10];
        int ok = n == 12;
        for (int i = 0; ok && i < 10; i++) ok = parse_ll(f[2 + i], &v[i]) == 0;
        ck_collective c;
        const ck_algorithm *a = NULL;
        if (ok && ck_collective_parse(f[0], &c) == 0) a = ck_algorithm_find(c, f[1]);
        if (!a || v[1] < 1 || v[1] > INT32_MAX || v[2] < INT32_MIN || v[2] > INT32_MAX || v[3] < 0) {
            fprintf(stderr, "collkit-rules --fallback: line %d: expected COLLECTIVE ALGORITHM INTER SIZE ROOT BYTES "
                    "COUNT DATATYPE_OK OP_KNOWN COMMUTATIVE INTEGER FP_ALLOWED with a known algorithm\n", lineno);
            return 2;
        }
        ckp_call_facts facts = {.inter = v[0] != 0, .size = (int)v[1], .root = (int)v[2], .bytes = (size_t)v[3],
                                .count = v[4], .datatype_ok = v[5] != 0, .op_known = v[6] != 0,
                                .commutative = v[7] != 0, .integer = v[8] != 0, .fp_allowed = v[9] != 0};
        int why = ckp_fallback_rule(a, c, &facts);
        puts(why < 0 ? "runs" : ckp_reason_name((ckp_reason)why));
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static int cvar_values(void)
{
    char line[8192];
    while (fgets(line, sizeof line, stdin)) {
        size_t len = strcspn(line, "\r\n"), w, text;
        if (len == 1 && line[0] == '\f') puts("\f");
        else if (ckp_cvar_value_line(line, len, &w, &text))
            printf("%.*s\t%.*s\n", (int)w, line, (int)(len - text), line + text);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

#define WORKING_MAX_RANKS 256

static int working(void)
{
    char line[16384];
    int lineno = 0;
    while (fgets(line, sizeof line, stdin)) {
        lineno++;
        char *f[2 + 2 * WORKING_MAX_RANKS + 1] = {0};
        int n = 0;
        char *save = NULL;
        for (char *t = strtok_r(line, " \t\r\n", &save); t && n < (int)(sizeof f / sizeof f[0]);
             t = strtok_r(NULL, " \t\r\n", &save))
            f[n++] = t;
        if (n == 0) continue;
        ck_collective c;
        long long root = 0;
        const int p = (n - 2) / 2;
        int ok = n >= 4 && n % 2 == 0 && p <= WORKING_MAX_RANKS && ck_collective_parse(f[0], &c) == 0 &&
                 parse_ll(f[1], &root) == 0 && (ck_collective_has_root(c) ? root >= 0 && root < p : root == -1);
        double t[2 * WORKING_MAX_RANKS];
        for (int i = 0; ok && i < 2 * p; i++) {
            char *end = NULL;
            errno = 0;
            t[i] = strtod(f[2 + i], &end);
            ok = !errno && end != f[2 + i] && !*end && t[i] == t[i] && t[i] > -1e300 && t[i] < 1e300;
        }
        if (!ok) {
            fprintf(stderr, "collkit-rules --working: line %d: expected COLLECTIVE ROOT then an arrival and an exit "
                    "per rank (1 to %d ranks, finite seconds; ROOT -1 unless the collective has one)\n", lineno,
                    WORKING_MAX_RANKS);
            return 2;
        }
        const ckp_dep_kind kind = ckp_dep_kind_of(c);
        double agreed[CKP_WORK_VALUES], mine[CKP_WORK_VALUES];
        for (int r = 0; r < p; r++) {
            const double gate = ckp_dep_needs_root_arrival(kind) ? t[2 * root] : t[2 * r];
            ckp_work_contribute(kind, r == root, t[2 * r], t[2 * r + 1], gate, mine);
            for (int i = 0; i < CKP_WORK_VALUES; i++)
                agreed[i] = r == 0 || mine[i] > agreed[i] ? mine[i] : agreed[i];
        }
        double w, whole;
        ckp_work_agreed(kind, agreed, &w, &whole);
        printf("%.17g %.17g\n", w, whole);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--cvar-values") == 0) return cvar_values();
    if (argc == 2 && strcmp(argv[1], "--fallback") == 0) return fallbacks();
    if (argc == 2 && strcmp(argv[1], "--working") == 0) return working();
    if (argc == 2 && argv[1][0] != '-') return read_rules(argv[1]);
    fprintf(stderr, "usage: collkit-rules FILE | collkit-rules --fallback | collkit-rules --cvar-values | "
            "collkit-rules --working (standard input)\n");
    return 2;
}
