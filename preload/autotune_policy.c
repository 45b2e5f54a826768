/* The selection rule (autotune_policy.h; docs/preload.md, "Deciding" and
 * "Budget").
 *
 * Racing by successive elimination: at each look the candidate with the
 * lowest median leads, and every other one whose calls are slower by a
 * one-sided Mann-Whitney test at level alpha / ((K - 1) x L) is out (K the
 * class's candidates, L the most looks the call cap allows): Bonferroni over
 * every comparison the race can make, so the chance that the truly fastest
 * candidate is ever eliminated stays below alpha, whatever the looks see.
 * Samples per candidate run 4, 8, 16, ... (stages double), so L is small.
 *
 * Bounds: exploration stops at max_calls calls; and its cost (the calls'
 * working time above what the current choice takes, at its median) may not
 * exceed `budget` of the class's working time so far: when it would, the
 * class runs the current choice until its calls paid for the next stage,
 * then explores on. When one candidate is left, or the calls are spent, the
 * class settles: on the library where it is still in the race (nothing beat
 * it significantly), else on the lowest median left. A class the program
 * stops calling before it settles stays undecided (the rules keep the
 * library and its race state, race_state.h). */
#include "autotune_policy.h"
#include "ck_preload.h"

#include <math.h>

static double cand_median(tune_cand *c)
{
    /* t is kept sorted after each look (autotune.c, look()). */
    return ckp_median_sorted(c->t, c->n);
}

/* The choice as it stands: the library while it is in the race, else the
 * lowest median left. */
static tune_cand *current_choice(tune_class *k)
{
    tune_cand *best = NULL;
    for (int i = 0; i < k->ncand; i++) {
        tune_cand *c = &k->cand[i];
        if (!c->alive) continue;
        if (c->col == CKP_LIBRARY) return c;
        if (!best || cand_median(c) < cand_median(best)) best = c;
    }
    return best;
}

/* After the candidates' samples changed (a look, a continued race): the
 * choice as it stands, exploration's cost above it and the time on the
 * others. */
void ckp_policy_tally(tune_class *k)
{
    tune_cand *choice = current_choice(k);
    const double ref = cand_median(choice);
    /* The cost of exploring: each candidate's calls at its median above the
     * choice's. Medians, not the calls' sum: an algorithm's first call pays
     * once for what it sets up (bine_hierarchical's split communicator: 50 us
     * against 0.5 us a call), which would otherwise eat a short class's
     * whole budget at the first look. */
    k->cost_s = 0.0;
    for (int i = 0; i < k->ncand; i++)
        k->cost_s += (double)k->cand[i].n * (cand_median(&k->cand[i]) - ref);
    k->choice = choice->col;
    k->lost_s = 0.0;
    for (int i = 0; i < k->ncand; i++)
        if (k->cand[i].col != k->choice)
            for (size_t j = 0; j < k->cand[i].n; j++) k->lost_s += k->cand[i].t[j];
}

ckp_verdict ckp_policy_look(tune_class *k, long next, double *scratch)
{
    tune_cand *lead = NULL;
    for (int i = 0; i < k->ncand; i++)
        if (k->cand[i].alive && (!lead || cand_median(&k->cand[i]) < cand_median(lead))) lead = &k->cand[i];
    const double level = k->alpha / ((double)(k->ncand - 1) * (double)k->max_looks);
    for (int i = 0; i < k->ncand; i++) {
        tune_cand *c = &k->cand[i];
        if (!c->alive || c == lead) continue;
        double p = ckp_mann_whitney_greater(lead->t, lead->n, c->t, c->n, scratch);
        if (p < level) {
            c->alive = 0;
            c->out_look = k->looks;
            c->out_p = p;
        }
    }
    ckp_policy_tally(k);
    tune_cand *choice = current_choice(k);
    const double ref = cand_median(choice);
    int left = 0;
    for (int i = 0; i < k->ncand; i++) left += k->cand[i].alive;
    if (left == 1) return (ckp_verdict){1, choice->col, "the others were slower"};
    if (k->explored + next * left > ckp_tune_cfg.max_calls || k->looks >= k->max_looks)
        return (ckp_verdict){1, choice->col, choice->col == CKP_LIBRARY ? "calls spent, none faster than the library"
                                                                          : "calls spent, the lowest median left"};
    /* Over budget: run the choice until the class's time pays for the cost. */
    const double time_s = k->explore_s + k->paused_s;
    if (k->cost_s > ckp_tune_cfg.budget * time_s && ref > 0.0) {
        long wait = (long)ceil((k->cost_s / ckp_tune_cfg.budget - time_s) / ref);
        k->resume_at = k->calls + wait;
        k->paused_s += (double)wait * ref;
        k->state = PAUSED;
    }
    return (ckp_verdict){0, choice->col, NULL};
}
