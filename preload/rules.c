/* COLLKIT_RULES at MPI_Init: the rules file through the shared grammar
 * (rules_grammar.c), each choice resolved to the shim's column (an
 * algorithm, the library, or library:NAME of the algorithms this MPI can
 * switch: library_algs.c), and the autotuner's `mpi_library` line compared
 * with the library this program runs on. */
#include "ck_preload.h"
#include "rules_grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    ckp_config *cfg;
    size_t cap;
} reading;

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

static int take(const ckp_rules_line *line, void *ctx, const char *path, char *err, size_t errlen)
{
    reading *rd = ctx;
    if (line->kind == CKP_RULES_SETTING) {
        rd->cfg->allow_fp_rank_variant = line->allow_fp_rank_variant;
        return 0;
    }
    if (line->kind == CKP_RULES_WORLD_SIZE) {
        rd->cfg->races.world_size = line->world_size;
        rd->cfg->races.world_lineno = line->lineno;
        return 0;
    }
    if (line->kind == CKP_RULES_RACE) return ckp_race_line(&rd->cfg->races, line->race, line->lineno, path, err, errlen);
    if (line->kind == CKP_RULES_LIBRARY) {
        /* Rules learned on another MPI describe another library's collectives. */
        char mine[MPI_MAX_LIBRARY_VERSION_STRING];
        ckp_library_line(mine, sizeof mine);
        if (strcmp(line->library, mine) == 0) return 0;
        snprintf(err, errlen, "COLLKIT_RULES: %s:%d: learned on MPI library '%s', this program runs on '%s'; fix: "
                 "autotune again on this MPI (collkit preload --autotune), or delete the mpi_library line to use "
                 "the rules anyway", path, line->lineno, line->library, mine);
        return -1;
    }
    ckp_rule r = {.coll = line->coll, .pmin = line->pmin, .pmax = line->pmax, .bmin = line->bmin,
                  .bmax = line->bmax, .alg = -1};
    if (strcmp(line->choice, "library") != 0) {
        int col = ckp_column_find(r.coll, line->choice);
        if (col == -2) {
            ckp_rules_unknown_choice(line, path, err, errlen);
            return -1;
        }
        r.alg = col;
    }
    if (add_rule(rd->cfg, &r, &rd->cap) != 0) {
        snprintf(err, errlen, "COLLKIT_RULES: %s: out of memory reading the rules", path);
        return -1;
    }
    return 0;
}

int ckp_rules_load(const char *path, ckp_config *cfg, char *err, size_t errlen)
{
    reading rd = {.cfg = cfg, .cap = 0};
    if (ckp_rules_read(path, take, &rd, err, errlen) != 0 || ckp_race_done(&cfg->races, path, err, errlen) != 0) {
        ckp_races_free(&cfg->races);
        return -1;
    }
    return 0;
}
