/* Program conditions: the skew rows and each rank's pacing (conditions.h). */
#include "conditions.h"

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    uint64_t h = 0xCBF29CE484222325ULL;
    for (const unsigned char *q = (const unsigned char *)point_id; *q; q++) h = (h ^ *q) * 0x100000001B3ULL;
    pc->state = h ^ ((uint64_t)rank * 0xD1B54A32D192ED03ULL);
    pc->gap_s = c->gap_us * 1e-6;
    pc->q_us = c->skew_us != NULL && rank < c->ranks ? c->skew_us + (size_t)rank * COND_QUANTILES : NULL;
    pc->prev_exit = -1.0;
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

void program_pacer_wait(program_pacer *pc)
{
    double wait = pc->gap_s + program_pacer_draw_s(pc);
    double until = (pc->prev_exit >= 0.0 ? pc->prev_exit : MPI_Wtime()) + wait;
    /* A spin, not a sleep: the program between its calls computes, and a
     * sleep's wake-up jitter (tens of us) is as large as the skews. */
    while (MPI_Wtime() < until) continue;
}

void program_pacer_exit(program_pacer *pc, double t) { pc->prev_exit = t; }

void program_pacer_resume(program_pacer *pc) { pc->prev_exit = -1.0; }
