/* COLLKIT_AUTOTUNE*: the autotuner's settings (docs/preload.md, "Autotune").
 * Every rank reads them; an error is one line naming the variable and the
 * fix, agreed like the rest of the configuration (intercept.c). */
#include "autotune_settings.h"
#include "ck_preload.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ckp_tune_config ckp_tune_cfg;

#define MAX_CALLS ((long)CKP_AUTOTUNE_CALLS_MAX)

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int parse_double(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v)) return -1;
    *out = v;
    return 0;
}


/* "allreduce=ring,rabenseifner;bcast=binomial": per collective, the
 * algorithms that may be candidates (the library always is). */
static int parse_candidates(const char *spec, char *err, size_t errlen)
{
    char buf[4096];
    if (strlen(spec) >= sizeof buf) {
        snprintf(err, errlen, "COLLKIT_AUTOTUNE_CANDIDATES is longer than %zu characters; fix: shorten it",
                 sizeof buf - 1);
        return -1;
    }
    strcpy(buf, spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        while (isspace((unsigned char)*item)) item++;
        if (!*item) continue;
        char *eq = strchr(item, '=');
        ck_collective c;
        if (!eq) {
            snprintf(err, errlen, "COLLKIT_AUTOTUNE_CANDIDATES: '%s' is not COLLECTIVE=NAME,...; fix: e.g. "
                     "allreduce=ring,rabenseifner;bcast=binomial", item);
            return -1;
        }
        *eq = '\0';
        if (ck_collective_parse(item, &c) != 0) {
            snprintf(err, errlen, "COLLKIT_AUTOTUNE_CANDIDATES: unknown collective '%s'; fix: bcast, reduce, "
                     "gather, scatter, allgather, reduce_scatter, allreduce or alltoall", item);
            return -1;
        }
        uint32_t mask = 0, lib = 0;
        char *save2 = NULL;
        for (char *name = strtok_r(eq + 1, ",", &save2); name; name = strtok_r(NULL, ",", &save2)) {
            if (strcmp(name, "library:*") == 0) {   /* every one the library can switch */
                lib = UINT32_MAX;
                continue;
            }
            if (strcmp(name, "*") == 0) {           /* every libcollkit algorithm */
                mask = UINT32_MAX;
                continue;
            }
            int col = ckp_column_find(c, name);
            if (col == -2) {
                snprintf(err, errlen, "COLLKIT_AUTOTUNE_CANDIDATES: unknown %s algorithm '%s'; fix: a name "
                         "from `collkit algorithms --collective %s`, library, or library:NAME of an algorithm "
                         "this MPI can switch (MPICH; Open MPI under coll_tuned_use_dynamic_rules=1)",
                         item, name, item);
                return -1;
            }
            if (col > CKP_LIBRARY) lib |= 1u << (col - CKP_LIB_COL(0));
            else if (col != CKP_LIBRARY) mask |= 1u << col;
        }
        ckp_tune_cfg.allowed[c] = mask;
        ckp_tune_cfg.allowed_lib[c] = lib;
    }
    return 0;
}

/* "allreduce=library:20@1,bcast=binomial:5": test-only slowdowns. */
static int parse_slow(const char *spec, char *err, size_t errlen)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '='), *colon = eq ? strchr(eq, ':') : NULL;
        ck_collective c;
        if (!eq || !colon || ckp_tune_cfg.nslow == (int)(sizeof ckp_tune_cfg.slow / sizeof ckp_tune_cfg.slow[0])) {
            snprintf(err, errlen, "COLLKIT_AUTOTUNE_TEST_SLOW: '%s' is not COLLECTIVE=NAME:US[@RANK] (at most "
                     "16); fix: e.g. allreduce=library:20", item);
            return -1;
        }
        *eq = *colon = '\0';
        char *at = strchr(colon + 1, '@');
        if (at) *at = '\0';
        double us, rank = -1;
        int col = ck_collective_parse(item, &c) == 0 ? ckp_column_find(c, eq + 1) : -2;
        if (col == -2 || parse_double(colon + 1, &us) || us < 0 || us > 1e6 ||
            (at && (parse_double(at + 1, &rank) || rank < 0 || rank != floor(rank)))) {
            snprintf(err, errlen, "COLLKIT_AUTOTUNE_TEST_SLOW: bad item '%s'; fix: COLLECTIVE=NAME:US[@RANK]", item);
            return -1;
        }
        ckp_tune_cfg.slow[ckp_tune_cfg.nslow].coll = (int)c;
        ckp_tune_cfg.slow[ckp_tune_cfg.nslow].col = col;
        ckp_tune_cfg.slow[ckp_tune_cfg.nslow].rank = (int)rank;
        ckp_tune_cfg.slow[ckp_tune_cfg.nslow++].us = us;
    }
    return 0;
}

/* A count of calls from `lo` to MAX_CALLS in variable `name`, when set;
 * *out keeps its default otherwise. */
static int whole_calls(const char *name, long lo, long *out, char *err, size_t errlen)
{
    const char *v = env(name);
    double d;
    if (!v) return 0;
    if (parse_double(v, &d) || d < (double)lo || d > (double)MAX_CALLS || d != floor(d)) {
        snprintf(err, errlen, "%s='%s'; fix: a whole number of calls from %ld to %ld", name, v, lo, MAX_CALLS);
        return -1;
    }
    *out = (long)d;
    return 0;
}

/* Whether rank 0 will be able to write the rules at MPI_Finalize: the file
 * writable if it exists, else its directory. Checked now, so that a run does
 * not explore for hours and then lose what it learned. */
static int writable(const char *path)
{
    if (access(path, F_OK) == 0) return access(path, W_OK) == 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return access(".", W_OK) == 0;
    if (slash == dir) slash[1] = '\0';
    else *slash = '\0';
    return access(dir, W_OK) == 0;
}

int ckp_autotune_setup(char *err, size_t errlen)
{
    memset(&ckp_tune_cfg, 0, sizeof ckp_tune_cfg);
    const char *on = env("COLLKIT_AUTOTUNE");
    const char *names[] = {"COLLKIT_AUTOTUNE_OUT", "COLLKIT_AUTOTUNE_BUDGET", "COLLKIT_AUTOTUNE_CALLS",
                           "COLLKIT_AUTOTUNE_ALPHA", "COLLKIT_AUTOTUNE_AFTER", "COLLKIT_AUTOTUNE_CANDIDATES", "COLLKIT_AUTOTUNE_FROM",
                           "COLLKIT_AUTOTUNE_TEST_SLOW"};
    if (!on || strcmp(on, "0") == 0) {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (env(names[i])) {
                snprintf(err, errlen, "%s is set but COLLKIT_AUTOTUNE is not; fix: set COLLKIT_AUTOTUNE=1 or "
                         "unset %s", names[i], names[i]);
                return -1;
            }
        return 0;
    }
    if (strcmp(on, "1") != 0) {
        snprintf(err, errlen, "COLLKIT_AUTOTUNE='%s'; fix: 1 (on) or 0 (off)", on);
        return -1;
    }
    ckp_tune_cfg.on = 1;
    ckp_tune_cfg.budget = CKP_AUTOTUNE_BUDGET_PCT / 100.0;
    ckp_tune_cfg.max_calls = CKP_AUTOTUNE_CALLS;
    ckp_tune_cfg.after = CKP_AUTOTUNE_AFTER;
    ckp_tune_cfg.alpha = CKP_AUTOTUNE_ALPHA;
    /* The library's own algorithms only where named (library:NAME or library:*): each of
     * their calls writes two CVARs before and two after, and on mpi4py's test suite under
     * MPICH (827 classes of a few calls) offering them all made the run 6 % slower, where
     * libcollkit's alone left it a tie (docs/experiments/applications.md). */
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) {
        ckp_tune_cfg.allowed[c] = UINT32_MAX;
        ckp_tune_cfg.allowed_lib[c] = 0;
    }
    const char *v;
    if ((v = env("COLLKIT_RULES"))) {
        snprintf(err, errlen, "COLLKIT_RULES and COLLKIT_AUTOTUNE are both set; fix: start the autotuner "
                 "from the rules with COLLKIT_AUTOTUNE_FROM=%s instead", v);
        return -1;
    }
    const char *out = env("COLLKIT_AUTOTUNE_OUT");
    if (!out) out = CKP_AUTOTUNE_OUT;
    if (strlen(out) >= sizeof ckp_tune_cfg.out) {
        snprintf(err, errlen, "COLLKIT_AUTOTUNE_OUT: path too long; fix: a shorter path");
        return -1;
    }
    strcpy(ckp_tune_cfg.out, out);
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 && !writable(out)) {
        snprintf(err, errlen, "COLLKIT_AUTOTUNE_OUT: cannot write %s (%s); fix: a path in a writable directory",
                 out, strerror(errno));
        return -1;
    }
    double d;
    if ((v = env("COLLKIT_AUTOTUNE_BUDGET"))) {
        if (parse_double(v, &d) || !(d > 0.0) || d > CKP_AUTOTUNE_BUDGET_PCT_MAX) {
            snprintf(err, errlen, "COLLKIT_AUTOTUNE_BUDGET='%s'; fix: a percentage above 0 and at most %g", v,
                     CKP_AUTOTUNE_BUDGET_PCT_MAX);
            return -1;
        }
        ckp_tune_cfg.budget = d / 100.0;
    }
    if (whole_calls("COLLKIT_AUTOTUNE_CALLS", 1, &ckp_tune_cfg.max_calls, err, errlen) != 0) return -1;
    if (whole_calls("COLLKIT_AUTOTUNE_AFTER", 0, &ckp_tune_cfg.after, err, errlen) != 0) return -1;
    if ((v = env("COLLKIT_AUTOTUNE_ALPHA"))) {
        if (parse_double(v, &d) || !(d > 0.0) || d > CKP_AUTOTUNE_ALPHA_MAX) {
            snprintf(err, errlen, "COLLKIT_AUTOTUNE_ALPHA='%s'; fix: an error rate above 0 and at most %g", v,
                     CKP_AUTOTUNE_ALPHA_MAX);
            return -1;
        }
        ckp_tune_cfg.alpha = d;
    }
    if ((v = env("COLLKIT_AUTOTUNE_CANDIDATES")) && parse_candidates(v, err, errlen) != 0) return -1;
    if ((v = env("COLLKIT_AUTOTUNE_FROM"))) {
        if (ckp_rules_load(v, &ckp_cfg, err, errlen) != 0) {
            /* ckp_rules_load names COLLKIT_RULES: the same file format, this variable. */
            char inner[1024];
            snprintf(inner, sizeof inner, "%s", err);
            const char *rest = strncmp(inner, "COLLKIT_RULES: ", 15) == 0 ? inner + 15 : inner;
            snprintf(err, errlen, "COLLKIT_AUTOTUNE_FROM: %s", rest);
            return -1;
        }
        ckp_tune_cfg.from = 1;
        /* Race states count calls of this many ranks' communicators. */
        int world = 0;
        PMPI_Comm_size(MPI_COMM_WORLD, &world);
        if (ckp_cfg.races.n && ckp_cfg.races.world_size != world) {
            snprintf(err, errlen, "COLLKIT_AUTOTUNE_FROM: %s:%d: race states learned at %ld ranks, this program runs "
                     "at %d; fix: continue them at %ld ranks, or start from a file learned at %d (or delete its race "
                     "lines)", v, ckp_cfg.races.world_lineno, ckp_cfg.races.world_size, world,
                     ckp_cfg.races.world_size, world);
            return -1;
        }
    }
    if ((v = env("COLLKIT_AUTOTUNE_TEST_SLOW")) && parse_slow(v, err, errlen) != 0) return -1;
    return 0;
}
