/* What the autotuner learned, written out (docs/preload.md, "Autotune"): the
 * collkit rules file rank 0 writes at MPI_Finalize, each rule with the
 * provenance of its class, and the section of the report. Every rank holds
 * the same agreed numbers, so rank 0's stand for all. */
#include "autotune.h"
#include "ck_preload.h"
#include "profile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A column's name; four buffers in turn, so one printf may name two. */
static const char *col_name(int coll, int col)
{
    static char bufs[4][64];
    static int next;
    char *b = bufs[next++ % 4];
    return ckp_column_name((ck_collective)coll, col, b, sizeof bufs[0]);
}

/* A reduction class's op: the key holds a user op as MPI_OP_NULL (autotune.c). */
static const char *class_op(const tune_class *k)
{
    const char *name = ckp_op_name(k->op);
    return name && strcmp(name, "user") != 0 ? name : "user op";
}

static const char *state_name(const tune_class *k)
{
    if (k->state == SETTLED) return k->why;
    if (k->state == PAUSED) return "undecided: exploring paused by the budget when the program ended (the library)";
    return "undecided: still exploring when the program ended (the library)";
}

/* One class in words: "allreduce, 4 ranks (world), 8 B, MPI_DOUBLE sum, root 0, in place". */
static void describe(const tune_class *k, char *out, size_t len)
{
    char dt[MPI_MAX_OBJECT_NAME] = "", extra[160] = "";
    int n = 0;
    if (k->dt != MPI_DATATYPE_NULL && PMPI_Type_get_name(k->dt, dt, &n) != MPI_SUCCESS) dt[0] = '\0';
    size_t used = 0;
    if (k->dt != MPI_DATATYPE_NULL)
        used += (size_t)snprintf(extra + used, sizeof extra - used, ", %s %s", dt[0] ? dt : "a datatype",
                                 class_op(k));
    if (k->root >= 0 && used < sizeof extra)
        used += (size_t)snprintf(extra + used, sizeof extra - used, ", root %d", k->root);
    if (k->in_place && used < sizeof extra) snprintf(extra + used, sizeof extra - used, ", in place");
    snprintf(out, len, "%s, %d ranks%s, %zu B%s", ck_collective_name((ck_collective)k->coll), k->p,
             k->world ? " (world)" : "", k->bytes, extra);
}

static void write_candidates(FILE *f, const tune_class *k, const char *lead)
{
    for (int i = 0; i < k->ncand; i++) {
        const tune_cand *c = &k->cand[i];
        double lo = 0, hi = 0, med = ckp_median_sorted(c->t, c->n), sum = 0;
        for (size_t j = 0; j < c->n; j++) sum += c->t[j];
        ckp_median_interval_sorted(c->t, c->n, &lo, &hi);
        fprintf(f, "%s  %-28s %6zu calls %12.6f s  median %10.3f us [%.3f, %.3f]  ", lead, col_name(k->coll, c->col),
                c->n, sum, med * 1e6, lo * 1e6, hi * 1e6);
        if (c->col == k->choice && k->state == SETTLED) fprintf(f, "chosen\n");
        else if (!c->alive) fprintf(f, "out at look %d (p = %.2g)\n", c->out_look, c->out_p);
        else fprintf(f, "in the race\n");
    }
}

/* The race state of each class not yet decided that has agreed samples (a
 * look), for COLLKIT_AUTOTUNE_FROM to continue (race_state.h). Samples at
 * 7 significant digits, 60 to a line (lines stay under the grammar's 1,022 bytes). */
static void write_races(FILE *f)
{
    long id = 0;
    for (tune_class *k = ckp_autotune_classes(); k; k = k->created) {
        if (k->state == SETTLED || k->looks == 0) continue;
        if (id == 0) {
            int world = 0;
            PMPI_Comm_size(MPI_COMM_WORLD, &world);
            fprintf(f, "\n# Race states of the classes not yet decided: --autotune-from continues them (docs/preload.md,\n"
                       "# \"Evidence across runs\"); the rules above keep the library for them meanwhile.\n"
                       "world_size = %d\n", world);
        }
        id++;
        char dt[CKP_RACE_NAME], op[CKP_RACE_NAME];
        ckp_autotune_class_names(k, dt, op);
        long explored = 0;
        for (int i = 0; i < k->ncand; i++) explored += (long)k->cand[i].n;
        fprintf(f, "race %ld %s %016llx %zu %d %s %s %d %ld %ld %d %d %.9g %ld %.9e %.9e %.9e %ld\n", id,
                ck_collective_name((ck_collective)k->coll), (unsigned long long)k->comm, k->bytes, k->root, dt, op,
                k->in_place, k->calls, explored, k->looks, k->max_looks, k->alpha, k->resume_at, k->explore_s,
                k->wait_s, k->paused_s, k->calls - k->start_calls);
        for (int i = 0; i < k->ncand; i++) {
            const tune_cand *c = &k->cand[i];
            const char *name = col_name(k->coll, c->col);
            fprintf(f, "race_candidate %ld %s %d %.9g %zu\n", id, name, c->alive ? 0 : c->out_look,
                    c->alive ? 1.0 : c->out_p, c->n);
            for (size_t j = 0; j < c->n; j += 60) {
                fprintf(f, "race_samples %ld %s", id, name);
                for (size_t m = j; m < c->n && m < j + 60; m++) fprintf(f, " %.7g", c->t[m]);
                fputc('\n', f);
            }
        }
    }
}

static int write_rules(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "collkit-preload: COLLKIT_AUTOTUNE_OUT: cannot write %s (%s); fix: a path in a writable "
                        "directory (what was learned is lost)\n", path, strerror(errno));
        return -1;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    ckp_library_line(lib, sizeof lib);
    fprintf(f, "# collkit rules v1: COLLECTIVE RANKS BYTES CHOICE, learned by collkit-preload --autotune\n"
               "# (docs/preload.md, \"Autotune\"). Per class: its candidates' exploration calls (working time,\n"
               "# after the arrivals each call depends on), medians with 95 %% intervals, and the verdict:\n"
               "# one-sided Mann-Whitney against the lowest median, family error rate %g split over candidates\n"
               "# and looks (Bonferroni); budget %g %% of the class's working time, at most %ld exploration\n"
               "# calls a class, from its call after %ld.\n",
            ckp_tune_cfg.alpha, ckp_tune_cfg.budget * 100.0, ckp_tune_cfg.max_calls, ckp_tune_cfg.after);
    if (lib[0]) fprintf(f, "mpi_library = %s\n", lib);
    if (ckp_cfg.allow_fp_rank_variant) fprintf(f, "allow_fp_rank_variant = true\n");
    /* One rule per (collective, ranks, bytes), the key the format has: the
     * choice of the class with the most calls; classes that differ only in
     * communicator, datatype, op, root or in place and chose otherwise are
     * named in the comment. */
    for (tune_class *k = ckp_autotune_classes(); k; k = k->created) {
        int first = 1;
        for (tune_class *o = ckp_autotune_classes(); o != k; o = o->created)
            if (o->coll == k->coll && o->p == k->p && o->bytes == k->bytes) first = 0;
        if (!first) continue;
        const tune_class *rule = NULL;
        for (tune_class *o = k; o; o = o->created) {
            if (o->coll != k->coll || o->p != k->p || o->bytes != k->bytes) continue;
            char what[256];
            describe(o, what, sizeof what);
            fprintf(f, "\n# %s: %ld calls; %s%s", what, o->calls, state_name(o),
                    o->continued ? "; continued from a race state" : "");
            if (o->explored)
                fprintf(f, "; %ld exploration calls, %.6f s working, of which %.6f s on the candidates not "
                           "chosen, and %.6f s waiting for late ranks (not raced); cost %.6f s above the choice's "
                           "median (at the candidates' medians)",
                        o->explored, o->explore_s, o->lost_s, o->wait_s, o->cost_s);
            fprintf(f, "\n");
            /* Candidates only once the ranks agreed on some of their calls (a look): a
             * class that ended inside its first stage has none (mpi4py's test suite:
             * 827 classes, most of a few calls; 7,000 lines of "0 calls"). */
            if (o->looks) write_candidates(f, o, "#");
            if (o->state == SETTLED && (!rule || o->calls > rule->calls)) rule = o;
        }
        if (!rule) continue;
        for (tune_class *o = k; o; o = o->created)
            if (o->coll == k->coll && o->p == k->p && o->bytes == k->bytes && o->state == SETTLED &&
                o->choice != rule->choice)
                fprintf(f, "# (another class of these ranks and bytes chose %s: the rule keeps %s, its class "
                           "has the most calls)\n", col_name(o->coll, o->choice), col_name(rule->coll, rule->choice));
        fprintf(f, "%-15s %-6d %-10zu %s\n", ck_collective_name((ck_collective)rule->coll), rule->p, rule->bytes,
                col_name(rule->coll, rule->choice));
    }
    write_races(f);
    if (fclose(f) != 0) {
        fprintf(stderr, "collkit-preload: COLLKIT_AUTOTUNE_OUT: error writing %s; fix: a filesystem with room\n",
                path);
        return -1;
    }
    return 0;
}

void ckp_autotune_finish(int rank)
{
    if (!ckp_tune_cfg.on || rank != 0) return;
    /* Written next to the target and renamed: a reader never sees half a file. */
    char tmp[4096 + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", ckp_tune_cfg.out);
    if (write_rules(tmp) == 0 && rename(tmp, ckp_tune_cfg.out) != 0) {
        fprintf(stderr, "collkit-preload: COLLKIT_AUTOTUNE_OUT: cannot write %s (%s); the rules are in %s\n",
                ckp_tune_cfg.out, strerror(errno), tmp);
    }
}

void ckp_autotune_report(FILE *f)
{
    if (!ckp_tune_cfg.on) return;
    fprintf(f, "autotune (rules written to %s):\n", ckp_tune_cfg.out);
    int any = 0;
    for (tune_class *k = ckp_autotune_classes(); k; k = k->created) {
        char what[256];
        describe(k, what, sizeof what);
        fprintf(f, "  %s: %ld calls, %s: %s", what, k->calls, k->state == SETTLED ? "chose" : "undecided",
                k->state == SETTLED ? col_name(k->coll, k->choice) : "library");
        if (k->explored)
            fprintf(f, "; %d candidates, %ld exploration calls, %.6f s working on the candidates not chosen, "
                       "%.6f s waiting (not raced)", k->ncand, k->explored, k->lost_s, k->wait_s);
        fprintf(f, " (%s)\n", state_name(k));
        if (k->looks) write_candidates(f, k, "   ");
        any = 1;
    }
    if (!any) fprintf(f, "  no class\n");
}

/* The profile's view (rank files, docs/application-loop.md "Profile"): the
 * same per-class facts as the rules' comments, as JSON, on every rank. */
static const char *state_word(const tune_class *k)
{
    return k->state == SETTLED ? "settled" : k->state == PAUSED ? "paused" : "exploring";
}

void ckp_autotune_json(FILE *f)
{
    fprintf(f, "{\"out\": ");
    ckp_json_string(f, ckp_tune_cfg.out);
    fprintf(f, ", \"budget\": %.6g, \"alpha\": %.6g, \"max_calls\": %ld, \"classes\": [", ckp_tune_cfg.budget,
            ckp_tune_cfg.alpha, ckp_tune_cfg.max_calls);
    int first = 1;
    for (tune_class *k = ckp_autotune_classes(); k; k = k->created) {
        /* the datatype's name as the race states give it (predefined names hold no space) */
        char dt[CKP_RACE_NAME], op[CKP_RACE_NAME];
        ckp_autotune_class_names(k, dt, op);
        const int red = ck_collective_has_op((ck_collective)k->coll);
        fprintf(f, "%s{\"collective\": \"%s\", \"comm_size\": %d, \"world\": %s, \"bytes\": %zu, \"datatype\": ",
                first ? "" : ", ", ck_collective_name((ck_collective)k->coll), k->p, k->world ? "true" : "false",
                k->bytes);
        first = 0;
        if (red) ckp_json_string(f, dt);
        else fputs("null", f);
        fputs(", \"op\": ", f);
        if (red) ckp_json_string(f, class_op(k));
        else fputs("null", f);
        fprintf(f, ", \"root\": ");
        if (k->root >= 0) fprintf(f, "%d", k->root);
        else fputs("null", f);
        fprintf(f, ", \"in_place\": %s, \"calls\": %ld, \"state\": \"%s\", \"why\": ", k->in_place ? "true" : "false",
                k->calls, state_word(k));
        ckp_json_string(f, state_name(k));
        fprintf(f, ", \"choice\": \"%s\", \"explored\": %ld, \"explore_s\": %.9e, \"wait_s\": %.9e, "
                   "\"lost_s\": %.9e, \"cost_s\": %.9e, \"candidates\": [",
                k->state == SETTLED ? col_name(k->coll, k->choice) : "library", k->explored, k->explore_s,
                k->wait_s, k->lost_s, k->cost_s);
        for (int i = 0; i < k->ncand && k->looks; i++) { /* none before the first look: nothing agreed */
            const tune_cand *c = &k->cand[i];
            double lo = 0, hi = 0, sum = 0;
            for (size_t j = 0; j < c->n; j++) sum += c->t[j];
            ckp_median_interval_sorted(c->t, c->n, &lo, &hi);
            const char *verdict = c->col == k->choice && k->state == SETTLED ? "chosen" : !c->alive ? "out" : "racing";
            fprintf(f, "%s{\"name\": \"%s\", \"calls\": %zu, \"time_s\": %.9e, \"median_s\": %.9e, "
                       "\"ci_s\": [%.9e, %.9e], \"verdict\": \"%s\", \"out_look\": %d, \"p\": %.6g}",
                    i ? ", " : "", col_name(k->coll, c->col), c->n, sum, ckp_median_sorted(c->t, c->n), lo, hi,
                    verdict, c->out_look, c->alive ? 1.0 : c->out_p);
        }
        fputs("]}", f);
    }
    fputs("]}", f);
}
