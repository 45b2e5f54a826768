/* Program conditions: the skew rows and each rank's pacing (conditions.h). */
#include "conditions.h"

#include "ck_hash.h"
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The spin at the end of a long wait (wait_until). */
#define SPIN_S 80e-6

int conditions_parse_skew(const char *s, program_conditions *out, char *why, size_t whylen)
{
    out->ranks = 0;
    out->skew_us = NULL;
    size_t rows = 1;
    for (const char *q = s; *q; q++) rows += *q == ';';
    if (*s == '\0' || rows > (size_t)1 << 24) {
        snprintf(why, whylen, "no rank's quantiles");
        return -1;
    }
    double *v = malloc(rows * COND_QUANTILES * sizeof *v);
    if (v == NULL) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    const char *q = s;
    for (size_t r = 0; r < rows; r++) {
        for (int k = 0; k < COND_QUANTILES; k++) {
            char *end;
            errno = 0;
            double d = strtod(q, &end);
            char want = k + 1 < COND_QUANTILES ? ',' : r + 1 < rows ? ';' : '\0';
            if (end == q || errno != 0 || *end != want || *q == ' ' || *q == '+') {
                snprintf(why, whylen, "rank %zu: expected %d comma-separated numbers", r, COND_QUANTILES);
                free(v);
                return -1;
            }
            if (!isfinite(d) || d < 0 || d > COND_MAX_US) {
                snprintf(why, whylen, "rank %zu: quantile %d is not a number of microseconds from 0 to 1e6", r, k);
                free(v);
                return -1;
            }
            if (k > 0 && d < v[r * COND_QUANTILES + k - 1]) {
                snprintf(why, whylen, "rank %zu: quantiles decrease at %d", r, k);
                free(v);
                return -1;
            }
            v[r * COND_QUANTILES + k] = d;
            q = *end ? end + 1 : end;
        }
    }
    out->ranks = (int)rows;
    out->skew_us = v;
    return 0;
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void program_pacer_begin(program_pacer *pc, const program_conditions *c, const char *point_id, int rank)
{
    /* FNV-1a of the point's id, then the rank: the same point on the same
     * rank draws the same sequence in every run, no two ranks share one. */
    pc->state = ck_fnv1a_str(CK_FNV1A_BASIS, point_id) ^ ((uint64_t)rank * 0xD1B54A32D192ED03ULL);
    pc->gap_s = c->gap_us * 1e-6;
    pc->q_us = c->skew_us != NULL && rank < c->ranks ? c->skew_us + (size_t)rank * COND_QUANTILES : NULL;
    pc->n_calls = 0;
    program_pacer_schedule(pc, -1.0, 0.0);
}

double program_pacer_draw_s(program_pacer *pc)
{
    if (pc->q_us == NULL) return 0.0;
    double u = (double)(splitmix64(&pc->state) >> 11) * 0x1.0p-53; /* [0, 1) */
    double x = u * (COND_QUANTILES - 1);
    int i = (int)x;
    double f = x - i;
    return (pc->q_us[i] + f * (pc->q_us[i + 1] - pc->q_us[i])) * 1e-6;
}

/* Waits until `until` (MPI_Wtime). A long wait sleeps until SPIN_S before it
 * and spins the rest: the spin puts the rank on its core, awake, well before
 * the call (a sleep's wake-up is tens of us late on a busy machine, and as
 * large as the skews), and the sleep leaves the core to the other ranks where
 * there are more ranks than cores (4 spinning ranks on 2 cores made a 2 us
 * allreduce take 500-800 us). */
static void wait_until(double until)
{
#ifndef SMPI_H
    double nap = until - SPIN_S - MPI_Wtime();
    if (nap > 0.0) {
        struct timespec t = {(time_t)nap, (long)((nap - (double)(time_t)nap) * 1e9)};
        nanosleep(&t, NULL);
    }
#endif
    while (MPI_Wtime() < until) continue;
}

void program_pacer_wait(program_pacer *pc)
{
    double draw = program_pacer_draw_s(pc);
    double after = pc->prev_exit >= 0.0 ? pc->prev_exit + pc->gap_s : MPI_Wtime() + pc->gap_s;
    double until = after + draw;
    if (pc->origin >= 0.0) {
        double due = pc->origin + (double)pc->k++ * pc->cycle_s + draw;
        until = due > after ? due : after;
    }
    wait_until(until);
    pc->arrival = MPI_Wtime();
}

void program_pacer_exit(program_pacer *pc, double t)
{
    pc->prev_exit = t;
    pc->calls_s[pc->n_calls++ % PACER_CALLS] = t - pc->arrival;
}

double program_pacer_cycle_s(program_pacer *pc)
{
    long n = pc->n_calls < PACER_CALLS ? pc->n_calls : PACER_CALLS;
    if (n == 0) return 0.0;
    double scratch[PACER_CALLS];
    double call = stats_median(pc->calls_s, (size_t)n, scratch);
    double skew = pc->q_us != NULL ? pc->q_us[COND_QUANTILES / 2] * 1e-6 : 0.0;
    return call + pc->gap_s + skew;
}

void program_pacer_schedule(program_pacer *pc, double origin, double cycle_s)
{
    pc->prev_exit = -1.0;
    pc->origin = cycle_s > 0.0 ? origin : -1.0;
    pc->cycle_s = cycle_s;
    pc->k = 0;
    pc->n_calls = 0;
}
