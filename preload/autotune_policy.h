/* The autotuner's selection rule (autotune_policy.c), behind the one call a
 * look makes: the timing, the stages and the agreement stay in autotune.c,
 * so another rule (another test, a bandit, a model) is tried by changing
 * autotune_policy.c alone. */
#ifndef COLLKIT_PRELOAD_AUTOTUNE_POLICY_H
#define COLLKIT_PRELOAD_AUTOTUNE_POLICY_H

#include "autotune.h"

/* What a look decided: settle on `choice` (a column) for `why`, or go on
 * with the next stage (after a pause the policy set in the class:
 * state PAUSED until resume_at). */
typedef struct {
    int settle;
    int choice;
    const char *why;
} ckp_verdict;

/* A look: the class's candidates hold their agreed samples, sorted, this
 * look counted (k->looks); `next` is the coming stage's calls per candidate
 * and scratch room for 4 x the most samples a candidate has. Reads and
 * writes the race's fields of the class (alive, out_look, out_p, choice,
 * cost_s, lost_s; resume_at, paused_s and state for a budget pause). Decides
 * from agreed numbers only, so every rank alike. */
ckp_verdict ckp_policy_look(tune_class *k, long next, double *scratch);

/* The choice as the samples stand, exploration's cost above it and the
 * working time on the others (after a look, or a race continued from a
 * rules file). */
void ckp_policy_tally(tune_class *k);

#endif
