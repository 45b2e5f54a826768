/* What one collective call cost, apart from what the program made it wait
 * for: the dependence rule of python/collkit/program/waits.py (its docstring
 * is the definition; tests/python/test_working_parity.py feeds both the same
 * calls). Runs no MPI function: the autotuner (autotune.c) agrees the values
 * with one MPI_MAX reduction, collkit-rules --working replays that for the
 * parity test.
 *
 * Rank r arrives at a_r, leaves at e_r (one clock), depends on the arrivals
 * D(r); it works max(0, e_r - max(a_d, d in D(r))); the call's working time
 * is the most any rank worked, its whole time the most any rank spent in it. */
#ifndef COLLKIT_PRELOAD_WORKING_RULE_H
#define COLLKIT_PRELOAD_WORKING_RULE_H

#include <collkit/collkit.h>

typedef enum {
    CKP_DEP_ALL,       /* every rank's data: D(r) = all ranks */
    CKP_DEP_FROM_ROOT, /* the root's data (bcast, scatter): D(r) = {root, r} */
    CKP_DEP_TO_ROOT    /* everyone's data at the root (reduce, gather): all at the root, {r} elsewhere */
} ckp_dep_kind;

ckp_dep_kind ckp_dep_kind_of(ck_collective c);

/* Whether a rank must know, before the agreement, the arrival it waits for
 * beyond its own (FROM_ROOT: the root's, which the autotuner broadcasts). */
int ckp_dep_needs_root_arrival(ckp_dep_kind k);

/* The values one rank puts into the MPI_MAX reduction for one call. */
#define CKP_WORK_VALUES 4
void ckp_work_contribute(ckp_dep_kind k, int is_root, double arrival, double exit, double root_arrival,
                         double out[CKP_WORK_VALUES]);

/* From the reduced values: the call's working and whole time (s). */
void ckp_work_agreed(ckp_dep_kind k, const double in[CKP_WORK_VALUES], double *working, double *whole);

#endif
