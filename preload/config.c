/* The shim's configuration: COLLKIT_ALGORITHMS, COLLKIT_RULES, COLLKIT_REPORT.
 * Errors are one line naming the variable and the fix; ckp_after_init prints
 * it on rank 0 and stops every rank, since a silent fallback would hide a typo. */
#include "ck_preload.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ckp_config ckp_cfg;

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Names of a collective's algorithms, for the fix in an error message. */
static void list_algs(ck_collective c, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < ckp_nalgs[c] && used + 1 < len; k++) {
        int n = snprintf(out + used, len - used, "%s%s", k ? ", " : "", ckp_algs[c][k]->name);
        if (n < 0) break;
        used += (size_t)n;
    }
}

static const char *collective_list =
    "bcast, reduce, gather, scatter, allgather, reduce_scatter, allreduce, alltoall";

/* "allreduce=ring,bcast=bine": one algorithm per collective. */
static int parse_algorithms(const char *spec, char *err, size_t errlen)
{
    char buf[4096];
    if (strlen(spec) >= sizeof buf) {
        fail(err, errlen, "COLLKIT_ALGORITHMS is longer than %zu characters; fix: name each collective once",
             sizeof buf - 1);
        return -1;
    }
    strcpy(buf, spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*item)) item++;
        if (*item == '\0') continue;
        char *eq = strchr(item, '=');
        if (!eq) {
            fail(err, errlen, "COLLKIT_ALGORITHMS: '%s' is not COLLECTIVE=ALGORITHM; fix: e.g. allreduce=ring", item);
            return -1;
        }
        *eq = '\0';
        const char *alg = eq + 1;
        ck_collective c;
        if (ck_collective_parse(item, &c) != 0) {
            fail(err, errlen, "COLLKIT_ALGORITHMS: unknown collective '%s'; fix: use one of %s", item,
                 collective_list);
            return -1;
        }
        int k = ckp_alg_find(c, alg);
        if (k < 0) {
            char names[1024];
            list_algs(c, names, sizeof names);
            fail(err, errlen, "COLLKIT_ALGORITHMS: unknown %s algorithm '%s'; fix: use one of %s", item, alg,
                 names);
            return -1;
        }
        ckp_cfg.forced[c] = k;
        ckp_cfg.active = 1;
    }
    return 0;
}

int ckp_config_load(char *err, size_t errlen)
{
    memset(&ckp_cfg, 0, sizeof ckp_cfg);
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) ckp_cfg.forced[c] = -1;
    ckp_algs_index();
    ckp_lib_algs_setup();     /* before the rules: they may name library:NAME */
    const char *algs = getenv("COLLKIT_ALGORITHMS");
    if (algs && *algs && parse_algorithms(algs, err, errlen) != 0) return -1;
    const char *rules = getenv("COLLKIT_RULES");
    if (rules && *rules) {
        if (ckp_rules_load(rules, &ckp_cfg, err, errlen) != 0) return -1;
        ckp_cfg.active = 1;
    }
    const char *report = getenv("COLLKIT_REPORT");
    if (report && *report && strcmp(report, "0") != 0) {
        ckp_cfg.report = 1;
        if (strcmp(report, "1") != 0) {
            if (strlen(report) >= sizeof ckp_cfg.report_path) {
                fail(err, errlen, "COLLKIT_REPORT: path too long; fix: use a shorter path or 1 (standard error)");
                return -1;
            }
            strcpy(ckp_cfg.report_path, report);
        }
    }
    return 0;
}

/* The column for this call: an algorithm index, CKP_LIB_COL(i), or -1 (library). */
int ckp_choose(ck_collective c, int p, size_t bytes)
{
    if (ckp_cfg.forced[c] >= 0) return ckp_cfg.forced[c];
    for (size_t i = 0; i < ckp_cfg.nrules; i++) {
        const ckp_rule *r = &ckp_cfg.rules[i];
        if (r->coll == c && p >= r->pmin && p <= r->pmax && bytes >= r->bmin && bytes <= r->bmax)
            return r->alg;
    }
    return -1;
}
