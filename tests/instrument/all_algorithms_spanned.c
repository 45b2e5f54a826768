/*
 * all_algorithms_spanned: every algorithm of the registry is instrumented, so
 * that none can stay silently untagged (issue #7).
 *
 *   all_algorithms_spanned [--list]
 *
 * At this communicator's size, each registry algorithm runs a few calls (MPI_INT,
 * MPI_SUM; one element and several per rank; roots 0 and p-1 where there is
 * a root) with recording on, and after every call each rank checks:
 *   - no END was unbalanced, no tag is left open, nothing was dropped;
 *   - every "step" record lies inside a phase (depth > 0) and has an index;
 *   - with p > 1, the rank recorded at least one phase tag other than "step"
 *     (every rank takes part in every algorithm at p > 1);
 *   - with p > 1, for bcast, allgather, reduce_scatter and allreduce, some
 *     rank recorded a step; except the algorithms in no_steps[] below, which
 *     must then record none (so the list cannot go stale unnoticed).
 * A failure prints one line per algorithm and call; the exit status is 1.
 * With --list, rank 0 prints each algorithm's phase names and step range (the
 * union over ranks and calls), as docs/algorithms.md lists them.
 */
#include <collkit/collkit.h>
#include <collkit/spans.h>
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CK_INSTRUMENT
#error "build this test with CK_INSTRUMENT (it links collkit_instr)"
#endif

/* Algorithms instrumented at phase level only (none at present; the first
 * entry is a placeholder that matches no algorithm). */
static const char *const no_steps[] = {""};

/* --list: the phase names one rank saw for one algorithm, space-separated.
 * Tag ids are interned per process in the order of first use, so ranks
 * exchange names, not ids. */
#define NAMES_LEN 512

static void add_name(char *names, const char *name)
{
    size_t n = strlen(name), at = 0, len = strlen(names);
    while (at < len) {
        size_t w = strcspn(names + at, " ");
        if (w == n && strncmp(names + at, name, n) == 0) return;
        at += w + 1;
    }
    if (len + n + 2 <= NAMES_LEN) {
        if (len > 0) names[len++] = ' ';
        memcpy(names + len, name, n + 1);
    }
}

/* The collectives whose algorithms promise step records (docs/algorithms.md):
 * a choice of the instrumentation, not a trait of the collective, so it is
 * listed here by name rather than derived from the descriptors. */
static const char *const step_collectives[] = {"bcast", "allgather", "reduce_scatter",
                                               "allreduce"};

static int needs_steps(const ck_algorithm *a)
{
    const char *name = ck_collective_name(a->collective);
    for (size_t i = 0; i < sizeof step_collectives / sizeof *step_collectives; i++)
        if (strcmp(step_collectives[i], name) == 0) return 1;
    return 0;
}

static int exempt_from_steps(const char *full)
{
    for (size_t i = 0; i < sizeof no_steps / sizeof *no_steps; i++)
        if (strcmp(no_steps[i], full) == 0) return 1;
    return 0;
}

/* Elements a buffer needs for any rank's role at count (never in place). */
static size_t role_elems(size_t (*elems)(const ck_collective_desc *, size_t, int, int, int, int),
                         const ck_collective_desc *d, size_t count, int p)
{
    size_t at_root = elems(d, count, p, 0, 0, 0), other = elems(d, count, p, 1, 0, 0);
    return at_root > other ? at_root : other;
}

int main(int argc, char **argv)
{
    int rank, size, list = 0, failures = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--list") == 0) {
            list = 1;
        } else {
            if (rank == 0) fprintf(stderr, "usage: all_algorithms_spanned [--list]\n");
            MPI_Finalize();
            return 2;
        }
    }

    /* One pair of buffers for every call: as large as the largest send and
     * receive side of any collective at the largest count. */
    const size_t counts[2] = {1, 5 * (size_t)size + 3};
    size_t cap = 1;
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) {
        const ck_collective_desc *d = ck_collective_describe((ck_collective)c);
        size_t s = role_elems(ck_collective_send_elems, d, counts[1], size);
        size_t r = role_elems(ck_collective_recv_elems, d, counts[1], size);
        if (s > cap) cap = s;
        if (r > cap) cap = r;
    }
    int *sbuf = malloc(cap * sizeof *sbuf), *rbuf = malloc(cap * sizeof *rbuf);
    char names[NAMES_LEN], *all_names = malloc((size_t)size * NAMES_LEN);
    if (sbuf == NULL || rbuf == NULL || all_names == NULL ||
        ck_spans_init((size_t)1 << 16) != MPI_SUCCESS) {
        fprintf(stderr, "all_algorithms_spanned: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }

    for (size_t ai = 0; ai < ck_algorithm_count(); ai++) {
        const ck_algorithm *a = ck_algorithm_at(ai);
        char full[128];
        snprintf(full, sizeof full, "%s/%s", ck_collective_name(a->collective), a->name);
        if ((a->constraints & CK_REQUIRES_POW2_RANKS) && (size & (size - 1)) != 0) continue;
        const int exempt = exempt_from_steps(full);
        int step_lo = -1, step_hi = -1, any_steps = 0;
        names[0] = '\0';
        const int nroots = ck_collective_has_root(a->collective) && size > 1 ? 2 : 1;

        for (int ci = 0; ci < 2; ci++) {
            const size_t count = counts[ci] < a->min_count ? a->min_count : counts[ci];
            if (count > counts[1]) continue;
            for (int ri = 0; ri < nroots; ri++) {
                const int root = ri == 0 ? 0 : size - 1;
                for (size_t i = 0; i < cap; i++) sbuf[i] = rbuf[i] = rank + (int)i;
                ck_spans_reset();
                ck_spans_enable(1);
                int rc = ck_algorithm_call(a, sbuf, rbuf, count, MPI_INT, MPI_SUM, root,
                                           MPI_COMM_WORLD);
                ck_spans_enable(0);

                /* This rank's verdict on the call. */
                char why[160] = "";
                int phases = 0, steps = 0, bad_step = 0;
                const ck_span_record *r = ck_spans_records();
                for (size_t i = 0; i < ck_spans_count(); i++) {
                    if (ck_span_category_of(r[i].span) != CK_CAT_PHASE) continue;
                    const char *name = ck_span_name(r[i].span);
                    if (strcmp(name, "step") != 0) {
                        phases++;
                        add_name(names, name);
                        continue;
                    }
                    steps++;
                    if (r[i].depth == 0 || r[i].step < 0) bad_step = 1;
                    if (step_lo < 0 || r[i].step < step_lo) step_lo = r[i].step;
                    if (r[i].step > step_hi) step_hi = r[i].step;
                }
                if (rc != MPI_SUCCESS)
                    snprintf(why, sizeof why, "returned error %d", rc);
                else if (ck_spans_unbalanced() != 0 || ck_spans_open() != 0)
                    snprintf(why, sizeof why, "%llu unbalanced ENDs, %d tags left open",
                             (unsigned long long)ck_spans_unbalanced(), ck_spans_open());
                else if (ck_spans_dropped() != 0)
                    snprintf(why, sizeof why, "%llu records dropped",
                             (unsigned long long)ck_spans_dropped());
                else if (bad_step)
                    snprintf(why, sizeof why, "a step outside any phase or without an index");
                else if (size > 1 && phases == 0)
                    snprintf(why, sizeof why, "rank %d recorded no phase tag", rank);

                int gsteps = 0;
                MPI_Allreduce(&steps, &gsteps, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                if (gsteps > 0) any_steps = 1;
                if (why[0] == '\0' && size > 1 && needs_steps(a)) {
                    if (!exempt && gsteps == 0 && rank == 0)
                        snprintf(why, sizeof why, "no rank recorded a step");
                    if (exempt && gsteps > 0 && rank == 0)
                        snprintf(why, sizeof why,
                                 "records steps now: remove it from no_steps[] in %s", __FILE__);
                }
                int bad = why[0] != '\0', gbad = 0;
                MPI_Allreduce(&bad, &gbad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                if (bad) {
                    fprintf(stderr, "FAIL %s p=%d count=%zu root=%d (rank %d): %s\n", full, size,
                            count, root, rank, why);
                }
                failures += gbad;
            }
        }

        if (list) {
            int lo = step_lo < 0 ? 1 << 30 : step_lo, hi = step_hi, glo, ghi, gany;
            MPI_Gather(names, NAMES_LEN, MPI_CHAR, all_names, NAMES_LEN, MPI_CHAR, 0,
                       MPI_COMM_WORLD);
            MPI_Reduce(&lo, &glo, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
            MPI_Reduce(&hi, &ghi, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
            MPI_Reduce(&any_steps, &gany, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                /* rank 0's names first, then those only other ranks saw */
                for (int q = 1; q < size; q++) {
                    char *other = all_names + (size_t)q * NAMES_LEN;
                    for (char *w = strtok(other, " "); w != NULL; w = strtok(NULL, " "))
                        add_name(names, w);
                }
                printf("%-34s %s", full, names);
                if (gany) printf("  [steps %d..%d]", glo, ghi);
                printf("\n");
            }
        }
    }

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("all_algorithms_spanned: p=%d, %zu algorithms, %d failed calls\n", size,
               ck_algorithm_count(), total);
    ck_spans_finalize();
    free(sbuf);
    free(rbuf);
    free(all_names);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
