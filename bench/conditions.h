/*
 * [measure] conditions (docs/bench-protocol.md, "Program conditions"): what a
 * point's calls are measured under. "synchronised" (the default) separates
 * every iteration (sync) and times the slowest rank of calls that start
 * together; "program" runs the iterations back to back, as a program's calls
 * do, and before each call every rank spends the program's gap between calls
 * plus a draw from its own arrival-skew distribution, so the calls see the
 * program's imbalance and pipelining.
 */
#ifndef CK_BENCH_CONDITIONS_H
#define CK_BENCH_CONDITIONS_H

#include <collkit/collkit.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { COND_SYNCHRONISED, COND_PROGRAM } bench_conditions;

/* Per rank, the quantiles 0, 10, ..., 100 % of its arrival after a call's
 * first arrival: the shape the profile reports and the spec writes
 * (CK_SKEW_QUANTILES, collkit.h: Python reads it from registry.json). */
#define COND_QUANTILES CK_SKEW_QUANTILES
/* Bound on gap_us and every skew quantile: one second between calls is
 * already a program that calls collectives rarely; larger values only make
 * a campaign wait. */
#define COND_MAX_US 1e6

/* The program conditions of a point (parsed by points.c). */
typedef struct {
    double gap_us;   /* common to every rank */
    int ranks;       /* rows of skew_us */
    double *skew_us; /* ranks x COND_QUANTILES, each row non-decreasing */
} program_conditions;

/* "q0,...,q10;q0,...,q10;...": one row per rank, rows separated by ';'.
 * Returns 0 with *out filled (its skew_us malloc'ed), or -1 with a short
 * description of what is wrong in why. */
int conditions_parse_skew(const char *s, program_conditions *out, char *why, size_t whylen);

/* This rank's pacing through a point's calls: a generator of its own, seeded
 * from the point's id and the rank, so a run is repeatable and ranks (and
 * points) draw independent sequences.
 *
 * Arrival skew is relative to a call's first arrival, so the ranks pace on a
 * common schedule once one is set (program_pacer_schedule): call k of it is
 * due at origin + k x cycle, and a rank arrives its draw after that, or gap
 * after its previous exit where that is later (it runs behind: back to back,
 * the program's pipelined regime). Without a schedule (the first warm-up
 * calls) a rank arrives gap + its draw after its previous exit; a call that
 * does not synchronise its ranks (a bcast's root, a gather's leaves) would
 * then let the draws add up call after call, and one rank run ahead of the
 * others until the library's flow control stops it. */
#define PACER_CALLS 64
typedef struct {
    double gap_s;
    const double *q_us; /* this rank's COND_QUANTILES */
    uint64_t state;     /* splitmix64 */
    double prev_exit;   /* MPI_Wtime at this rank's previous exit; < 0 before the first call */
    double arrival;     /* MPI_Wtime at this rank's last arrival */
    double origin;      /* the schedule's call 0 on this rank's MPI_Wtime; < 0: none */
    double cycle_s;
    long k;             /* calls since the schedule's origin */
    double calls_s[PACER_CALLS]; /* this rank's latest call times: the next cycle's estimate */
    long n_calls;
} program_pacer;

void program_pacer_begin(program_pacer *pc, const program_conditions *c, const char *point_id, int rank);
/* One draw of the rank's skew in seconds: the inverse of its quantile
 * function, linear between the quantiles, at a uniform [0, 1). */
double program_pacer_draw_s(program_pacer *pc);
/* Waits until this rank's next arrival (above); whatever the harness did
 * since the previous call (a fill, a check) counts as part of the gap, as the
 * program's own work would. */
void program_pacer_wait(program_pacer *pc);
/* The call's exit on this rank's MPI_Wtime. */
void program_pacer_exit(program_pacer *pc, double t);
/* This rank's estimate of the cycle a common schedule needs: its median
 * call time since the last schedule, plus the gap, plus its median skew; the
 * ranks agree on the largest. 0 when it made no call. */
double program_pacer_cycle_s(program_pacer *pc);
/* After one of the harness's agreements (the only synchronisation left): a
 * new schedule, call 0 at `origin` (this rank's MPI_Wtime) every cycle_s;
 * cycle_s <= 0: none, the next wait runs from now, not from a call's exit
 * before the agreement, whose time would otherwise eat the gap and the skew
 * of the next call. Harmless on a pacer never begun (synchronised
 * conditions: it never waits). */
void program_pacer_schedule(program_pacer *pc, double origin, double cycle_s);

#endif
