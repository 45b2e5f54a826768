/* The dependence rule as one MPI_MAX reduction (working_rule.h). Per call,
 * each rank gives four values, reduced by maximum over the ranks:
 *
 *   [0] A: its arrival where the working time starts at the last arrival of
 *       all (ALL everywhere, TO_ROOT everywhere: the root waits for all)
 *   [1] E: its exit where that working time ends there (ALL everywhere,
 *       TO_ROOT at the root only)
 *   [2] W: its working time where it knows its gate already (TO_ROOT's
 *       non-roots: their own arrival; FROM_ROOT: the root's arrival, which
 *       the autotuner broadcasts before the reduction)
 *   [3] D: its whole time in the call, e - a
 *
 * so that working = max(0, max(E - A, W)), the most any rank worked, and
 * whole = D. A value a rank does not give is NONE, below any time. */
#include "working_rule.h"

#define NONE (-1e300)

static double later(double x, double y) { return x > y ? x : y; }

ckp_dep_kind ckp_dep_kind_of(ck_collective c)
{
    switch (c) {
    case CK_BCAST:
    case CK_SCATTER:
        return CKP_DEP_FROM_ROOT;
    case CK_REDUCE:
    case CK_GATHER:
        return CKP_DEP_TO_ROOT;
    default: /* allgather, reduce_scatter, allreduce, alltoall */
        return CKP_DEP_ALL;
    }
}

int ckp_dep_needs_root_arrival(ckp_dep_kind k) { return k == CKP_DEP_FROM_ROOT; }

void ckp_work_contribute(ckp_dep_kind k, int is_root, double arrival, double exit, double root_arrival,
                         double out[CKP_WORK_VALUES])
{
    out[0] = out[1] = out[2] = NONE;
    out[3] = later(0.0, exit - arrival);
    switch (k) {
    case CKP_DEP_ALL:
        out[0] = arrival;
        out[1] = exit;
        break;
    case CKP_DEP_TO_ROOT:
        out[0] = arrival;
        if (is_root) out[1] = exit;
        else out[2] = out[3]; /* it only gives: all of its time is the algorithm's */
        break;
    case CKP_DEP_FROM_ROOT:
        out[2] = later(0.0, exit - later(arrival, root_arrival));
        break;
    }
}

void ckp_work_agreed(ckp_dep_kind k, const double in[CKP_WORK_VALUES], double *working, double *whole)
{
    (void)k; /* the values already say which terms hold */
    const double from_last = in[1] > NONE ? in[1] - in[0] : NONE;
    *working = later(0.0, later(from_last, in[2]));
    *whole = in[3];
}
