/*
 * Unit test of collkit-bench-instr's aggregation (bench/instrument.c) at any
 * rank count, with synthetic call times and real tags: which iterations count
 * (a late one is dropped), the outermost-category rule, per-(tag, step) sums
 * across ranks, the slowest-rank breakdown of the median iteration and the
 * mean breakdown, and an unclosed tag counted as unbalanced. The expected
 * values are recomputed here from the raw records, independently of the
 * aggregation code.
 */
#include "instrument.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", rank, __FILE__, __LINE__, #cond); \
            failures++;                                                                     \
        }                                                                                   \
    } while (0)

static int rank, p;

/* Kept iterations of this rank, in order: call (us) and the outermost
 * comm / reduce / copy time (us) as recomputed from the records. */
#define MAX_KEPT 8
static double kept[MAX_KEPT][4];
static int nkept;

static int category(const char *name)
{
    size_t len = strcspn(name, ".");
    if (len == 4 && strncmp(name, "comm", 4) == 0) return 1;
    if (len == 6 && strncmp(name, "reduce", 6) == 0) return 2;
    if (len == 4 && strncmp(name, "copy", 4) == 0) return 3;
    return 0;
}

/* Runs iteration j of a round: the tags, then the recomputation, then
 * instr_iteration with a synthetic call time. */
static void one_iteration(instr_acc *a, long j, int round, int late, int leave_open)
{
    CK_SPAN_BEGIN_STEP("step", j % 2);
    CK_SPAN_BEGIN("copy");
    CK_SPAN_BEGIN("comm"); /* inside copy: not counted again */
    CK_SPAN_END("comm");
    CK_SPAN_END("copy");
    CK_SPAN_END("step");
    for (long k = 0; k <= j; k++) {
        CK_SPAN_BEGIN("comm"); /* outermost, no step */
        CK_SPAN_END("comm");
    }
    if (rank % 2) {
        CK_SPAN_BEGIN("rank.odd");
        CK_SPAN_END("rank.odd");
    }
    if (leave_open) CK_SPAN_BEGIN("never_closed");
    /* The slowest rank of iteration j is j % p; its call takes 5 + j s more. */
    double call_s = 10.0 + (rank == (int)(j % p) ? 5.0 + (double)j + (double)round : 0.0);
    if (!late) {
        double part[4] = {call_s * 1e6, 0, 0, 0};
        const ck_span_record *r = ck_spans_records();
        /* A category tag counts unless one is open around it: records come
         * innermost first, so look for an enclosing category record. */
        for (size_t i = 0; i < ck_spans_count(); i++) {
            int c = category(ck_span_name(r[i].span));
            if (c == 0) continue;
            int inside = 0;
            for (size_t o = 0; o < ck_spans_count(); o++)
                if (o != i && category(ck_span_name(r[o].span)) && r[o].depth < r[i].depth &&
                    r[o].start_ns <= r[i].start_ns && r[i].end_ns <= r[o].end_ns)
                    inside = 1;
            if (!inside) part[c] += (double)(r[i].end_ns - r[i].start_ns) * 1e-3;
        }
        memcpy(kept[nkept++], part, sizeof part);
    }
    instr_iteration(a, j, call_s);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    CHECK(instr_setup(1024) == MPI_SUCCESS);
    instr_acc a;
    memset(&a, 0, sizeof a);

    /* Round 1: three iterations, the middle one late (dropped). */
    double late1[3] = {0, 1, 0};
    instr_round_begin(&a, 3);
    ck_spans_enable(1);
    for (long j = 0; j < 3; j++) one_iteration(&a, j, 1, late1[j] > 0, 0);
    ck_spans_enable(0);
    instr_round_end(&a, 3, late1);
    /* Round 2: two iterations; rank 0 leaves a tag open in the second. */
    double late2[2] = {0, 0};
    instr_round_begin(&a, 2);
    ck_spans_enable(1);
    for (long j = 0; j < 2; j++) one_iteration(&a, j, 2, 0, rank == 0 && j == 1);
    ck_spans_enable(0);
    instr_round_end(&a, 2, late2);
    CHECK(nkept == 4);

    instr_summary *s = NULL;
    int oom_rank = 5;
    CHECK(instr_point_end(&a, rank, p, MPI_COMM_WORLD, &s, &oom_rank) == MPI_SUCCESS);
    CHECK(oom_rank == -1);
    CHECK((s != NULL) == (rank == 0));

    /* The expected breakdown, from every rank's recomputed kept figures. */
    double *all = rank == 0 ? calloc((size_t)p * MAX_KEPT * 4, sizeof *all) : NULL;
    MPI_Gather(kept, MAX_KEPT * 4, MPI_DOUBLE, all, MAX_KEPT * 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0 && s != NULL) {
        CHECK(s->iterations == 4);
        CHECK(s->dropped == 0);
        CHECK(s->unbalanced == 1);
        /* Kept iterations: (round, j) = (1,0) (1,2) (2,0) (2,1); the slowest
         * rank is j % p with 10 + 5 + j + round seconds. */
        const int round_of[4] = {1, 1, 2, 2}, j_of[4] = {0, 2, 0, 1};
        double t[4], parts[4][4];
        for (int k = 0; k < 4; k++) {
            int slow = j_of[k] % p;
            t[k] = (15.0 + j_of[k] + round_of[k]) * 1e6;
            const double *f = &all[((size_t)slow * MAX_KEPT + (size_t)k) * 4];
            CHECK(fabs(f[0] - t[k]) < 1e-6);
            parts[k][0] = f[1];
            parts[k][1] = f[2];
            parts[k][2] = f[3];
            parts[k][3] = f[0] - f[1] - f[2] - f[3];
        }
        /* Times 16, 18, 17, 18 s: sorted 16 (k0), 17 (k2), 18 (k1), 18 (k3)
         * (ties in kept order); the median is the mean of k2 and k1. */
        double e2e = 0.5 * (t[2] + t[1]);
        CHECK(fabs(s->end_to_end_us - e2e) < 1e-6);
        double sum = 0.0, mean_t = 0.25 * (t[0] + t[1] + t[2] + t[3]);
        for (int q = 0; q < INSTR_PARTS; q++) {
            double want = 0.5 * (parts[2][q] + parts[1][q]);
            CHECK(fabs(s->part_us[q] - want) < 1e-6);
            sum += s->part_us[q];
            double mean = 0.25 * (parts[0][q] + parts[1][q] + parts[2][q] + parts[3][q]);
            CHECK(fabs(s->mean_part_us[q] - mean) < 1e-6);
        }
        CHECK(fabs(sum - s->end_to_end_us) < 1e-6);
        CHECK(fabs(s->mean_end_to_end_us - mean_t) < 1e-6);
        CHECK(s->part_us[INSTR_COPY] > 0.0 && s->part_us[INSTR_COMM] > 0.0 && s->part_us[INSTR_REDUCE] == 0.0);

        /* Tags, per rank over kept iterations: step 0 x3 (1,0)(1,2)(2,0),
         * step 1 x1 (2,1); copy and the nested comm inherit them; the
         * outermost comm (no step) j + 1 times: 1 + 3 + 1 + 2 = 7. */
        struct {
            const char *name;
            int step, category;
            uint64_t count_per_rank;
            int ranks;
        } want[] = {{"comm", -1, CK_CAT_COMM, 7, p},  {"comm", 0, CK_CAT_COMM, 3, p},
                    {"comm", 1, CK_CAT_COMM, 1, p},   {"copy", 0, CK_CAT_COPY, 3, p},
                    {"copy", 1, CK_CAT_COPY, 1, p},   {"rank.odd", -1, CK_CAT_PHASE, 4, p / 2},
                    {"step", 0, CK_CAT_PHASE, 3, p},  {"step", 1, CK_CAT_PHASE, 1, p}};
        size_t nwant = sizeof want / sizeof want[0];
        size_t k = 0;
        for (size_t w = 0; w < nwant; w++) {
            if (want[w].ranks == 0) continue; /* rank.odd at p = 1 */
            CHECK(k < s->ntags);
            if (k >= s->ntags) break;
            const instr_tag_summary *g = &s->tags[k++];
            CHECK(strcmp(g->name, want[w].name) == 0 && g->step == want[w].step);
            CHECK(g->category == want[w].category);
            CHECK(g->count == want[w].count_per_rank * (uint64_t)want[w].ranks);
            CHECK(g->ranks == want[w].ranks);
            CHECK(g->total_us > 0.0 && g->median_us <= g->max_us && g->max_us * 4 <= g->total_us * (1 + 1e-12));
            /* Absent ranks count as 0: with fewer than half the ranks, the
             * median across ranks is 0. */
            if (2 * want[w].ranks < p) CHECK(g->median_us == 0.0);
        }
        CHECK(k == s->ntags);
    }
    free(all);
    instr_summary_free(s);
    instr_acc_free(&a);
    instr_teardown();
    int any = failures;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_instrument at p=%d: %s\n", p, any ? "FAILED" : "all checks passed");
    MPI_Finalize();
    return any ? 1 : 0;
}
