/* Tag collection of collkit-bench-instr: see instrument.h. */
#include "instrument.h"

#include "agree.h"
#include "tags.h"

#include <collkit/collkit.h>
#include <stdlib.h>
#include <string.h>

/* Figures kept per iteration: the rank's own call time (the harness's
 * measurement, MPI_Wtime) and its outermost comm, reduce and copy time. */
#define NFIG 4

int instr_setup(size_t capacity) { return ck_spans_init(capacity); }

void instr_teardown(void) { ck_spans_finalize(); }

void instr_acc_free(instr_acc *a)
{
    free(a->key_tag);
    free(a->key_step);
    free(a->next_key);
    free(a->count);
    free(a->total_ns);
    free(a->it_count);
    free(a->it_ns);
    free(a->touched);
    free(a->log);
    free(a->seg);
    free(a->r_fig);
    free(a->r_dropped);
    free(a->r_unbal);
    free(a->fig);
    memset(a, 0, sizeof *a);
}

/* realloc that leaves *p alone on failure; n elements of size sz. */
static int grow(void *pp, size_t n, size_t sz)
{
    void **p = pp;
    if (n > SIZE_MAX / sz) return -1;
    void *q = realloc(*p, n * sz);
    if (q == NULL) return -1;
    *p = q;
    return 0;
}

static int grow_keys(instr_acc *a)
{
    size_t cap = a->kcap ? 2 * a->kcap : 64;
    if (grow(&a->key_tag, cap, sizeof *a->key_tag) || grow(&a->key_step, cap, sizeof *a->key_step) ||
        grow(&a->next_key, cap, sizeof *a->next_key) || grow(&a->count, cap, sizeof *a->count) ||
        grow(&a->total_ns, cap, sizeof *a->total_ns) || grow(&a->it_count, cap, sizeof *a->it_count) ||
        grow(&a->it_ns, cap, sizeof *a->it_ns) || grow(&a->touched, cap, sizeof *a->touched))
        return -1;
    a->kcap = cap;
    return 0;
}

/* Index of (tag, step), created on first sight; -1 when out of memory. */
static long key_of(instr_acc *a, int tag, int step)
{
    if (a->kcap == 0) {
        for (int i = 0; i < CK_SPAN_MAX_NAMES; i++) a->first_key[i] = -1;
    }
    if (tag < 0 || tag >= CK_SPAN_MAX_NAMES) return -1;
    for (int k = a->first_key[tag]; k >= 0; k = a->next_key[k])
        if (a->key_step[k] == step) return k;
    if (a->nkeys == a->kcap && grow_keys(a) != 0) return -1;
    size_t k = a->nkeys++;
    a->key_tag[k] = tag;
    a->key_step[k] = step;
    a->next_key[k] = a->first_key[tag];
    a->first_key[tag] = (int)k;
    a->count[k] = 0;
    a->total_ns[k] = 0.0;
    a->it_count[k] = 0;
    a->it_ns[k] = 0.0;
    return (long)k;
}

void instr_round_begin(instr_acc *a, long n)
{
    if (n > a->rcap) {
        size_t m = (size_t)n;
        if (grow(&a->seg, m + 1, sizeof *a->seg) || grow(&a->r_fig, m * NFIG, sizeof *a->r_fig) ||
            grow(&a->r_dropped, m, sizeof *a->r_dropped) || grow(&a->r_unbal, m, sizeof *a->r_unbal)) {
            a->oom = 1;
            return;
        }
        a->rcap = n;
    }
    a->nlog = 0;
    a->seg[0] = 0;
    memset(a->r_fig, 0, (size_t)n * NFIG * sizeof *a->r_fig);
    memset(a->r_dropped, 0, (size_t)n * sizeof *a->r_dropped);
    memset(a->r_unbal, 0, (size_t)n * sizeof *a->r_unbal);
}

void instr_iteration(instr_acc *a, long j, double call_seconds)
{
    if (a->oom || j >= a->rcap) {
        a->oom = 1;
        ck_spans_reset();
        return;
    }
    const ck_span_record *rec = ck_spans_records();
    size_t n = ck_spans_count();
    double part_ns[3] = {0.0, 0.0, 0.0};
    a->ntouched = 0;
    for (size_t i = 0; i < n; i++) {
        const ck_span_record *r = &rec[i];
        double ns = (double)(r->end_ns - r->start_ns);
        long k = key_of(a, r->span, r->step);
        if (k < 0) {
            a->oom = 1;
            break;
        }
        if (a->it_count[k]++ == 0) a->touched[a->ntouched++] = (uint32_t)k;
        a->it_ns[k] += ns;
        ck_span_category c = ck_span_category_of(r->span);
        /* A category tag inside another (a "comm" inside a "copy") is
         * already in its parent's time. */
        if (c != CK_CAT_PHASE && !r->nested) part_ns[c - 1] += ns;
    }
    if (a->nlog + a->ntouched > a->logcap) {
        size_t cap = a->logcap ? 2 * a->logcap : 1024;
        while (cap < a->nlog + a->ntouched) cap *= 2;
        if (grow(&a->log, cap, sizeof *a->log) != 0) a->oom = 1;
        else a->logcap = cap;
    }
    for (size_t t = 0; t < a->ntouched; t++) {
        uint32_t k = a->touched[t];
        if (!a->oom) a->log[a->nlog++] = (instr_log_entry){k, a->it_count[k], a->it_ns[k]};
        a->it_count[k] = 0;
        a->it_ns[k] = 0.0;
    }
    a->seg[j + 1] = a->nlog;
    double *f = &a->r_fig[(size_t)j * NFIG];
    f[0] = call_seconds * 1e6;
    f[1] = part_ns[0] * 1e-3;
    f[2] = part_ns[1] * 1e-3;
    f[3] = part_ns[2] * 1e-3;
    a->r_dropped[j] = ck_spans_dropped();
    /* A tag still open after the call never saw its END. */
    a->r_unbal[j] = ck_spans_unbalanced() + (uint64_t)ck_spans_open();
    ck_spans_reset();
}

void instr_round_end(instr_acc *a, long n, const double *late)
{
    if (a->oom) return;
    for (long j = 0; j < n; j++) {
        if (late[j] > 0.0) continue;
        for (size_t e = a->seg[j]; e < a->seg[j + 1]; e++) {
            a->count[a->log[e].key] += a->log[e].count;
            a->total_ns[a->log[e].key] += a->log[e].ns;
        }
        if (a->nkept == a->figcap) {
            size_t cap = a->figcap ? 2 * a->figcap : 256;
            if (grow(&a->fig, cap * NFIG, sizeof *a->fig) != 0) {
                a->oom = 1;
                return;
            }
            a->figcap = cap;
        }
        memcpy(&a->fig[a->nkept * NFIG], &a->r_fig[(size_t)j * NFIG], NFIG * sizeof *a->fig);
        a->nkept++;
        a->dropped += a->r_dropped[j];
        a->unbalanced += a->r_unbal[j];
    }
}

/* ------------------------------------------------------- to rank 0 */

/* One (tag, step) of one rank on the wire (MPI_BYTE: every rank runs the
 * same binary, so the layout is the same). */
typedef struct {
    char name[INSTR_NAME_LEN];
    int32_t step, category;
    uint64_t count;
    double total_ns;
} wire_tag;

enum { H_OOM, H_DROPPED, H_UNBAL, H_NTAGS, H_LEN };

void instr_summary_free(instr_summary *s)
{
    if (s == NULL) return;
    free(s->tags);
    free(s);
}

typedef struct {
    double t;
    long j;
} timed_iter;

static int cmp_timed(const void *x, const void *y)
{
    const timed_iter *a = x, *b = y;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    return a->j < b->j ? -1 : a->j > b->j;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static int cmp_tag(const void *x, const void *y)
{
    const instr_tag_summary *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    if (c != 0) return c;
    return a->step < b->step ? -1 : a->step > b->step;
}

/* Rank 0: the breakdown from every rank's per-iteration figures
 * (all[r * n * NFIG + j * NFIG + f]). For each iteration the slowest rank
 * (largest own call time, which is the iteration's time in times_us; the
 * lowest rank on a tie) supplies comm, reduce and copy, and other is its call
 * time minus them, so the four add up to the iteration's time exactly. */
static int breakdown(instr_summary *s, const double *all, int p, size_t n)
{
    if (n == 0) return 0;
    double(*parts)[INSTR_PARTS] = calloc(n, sizeof *parts);
    timed_iter *order = calloc(n, sizeof *order);
    if (parts == NULL || order == NULL) {
        free(parts);
        free(order);
        return -1;
    }
    for (size_t j = 0; j < n; j++) {
        int slow = 0;
        for (int r = 1; r < p; r++)
            if (all[((size_t)r * n + j) * NFIG] > all[((size_t)slow * n + j) * NFIG]) slow = r;
        const double *f = &all[((size_t)slow * n + j) * NFIG];
        parts[j][INSTR_COMM] = f[1];
        parts[j][INSTR_REDUCE] = f[2];
        parts[j][INSTR_COPY] = f[3];
        parts[j][INSTR_OTHER] = f[0] - f[1] - f[2] - f[3];
        order[j] = (timed_iter){f[0], (long)j};
        for (int k = 0; k < INSTR_PARTS; k++) s->mean_part_us[k] += parts[j][k] / (double)n;
        s->mean_end_to_end_us += f[0] / (double)n;
    }
    qsort(order, n, sizeof *order, cmp_timed);
    /* The median iteration; for an even count the mean of the two middle
     * ones, as the median time itself is (linear interpolation). */
    size_t lo = (n - 1) / 2, hi = n / 2;
    for (int k = 0; k < INSTR_PARTS; k++)
        s->part_us[k] = 0.5 * (parts[order[lo].j][k] + parts[order[hi].j][k]);
    s->end_to_end_us = 0.5 * (order[lo].t + order[hi].t);
    free(parts);
    free(order);
    return 0;
}

/* Rank 0: merges every rank's (name, step) sums. */
static int merge_tags(instr_summary *s, const wire_tag *w, const uint64_t *hdr, int p, size_t n)
{
    size_t total = 0;
    for (int r = 0; r < p; r++) total += hdr[(size_t)r * H_LEN + H_NTAGS];
    if (total == 0) return 0;
    s->tags = calloc(total, sizeof *s->tags);
    double *means = calloc(total * (size_t)p, sizeof *means); /* [tag][rank] */
    double *scratch = calloc((size_t)p, sizeof *scratch);
    if (s->tags == NULL || means == NULL || scratch == NULL) {
        free(means);
        free(scratch);
        return -1;
    }
    size_t off = 0;
    for (int r = 0; r < p; r++) {
        size_t nt = hdr[(size_t)r * H_LEN + H_NTAGS];
        for (size_t i = 0; i < nt; i++) {
            const wire_tag *e = &w[off + i];
            size_t k = 0;
            while (k < s->ntags && !(s->tags[k].step == e->step && strcmp(s->tags[k].name, e->name) == 0)) k++;
            instr_tag_summary *t = &s->tags[k];
            if (k == s->ntags) {
                s->ntags++;
                memcpy(t->name, e->name, INSTR_NAME_LEN);
                t->step = e->step;
                t->category = e->category;
            }
            t->ranks++;
            t->count += e->count;
            t->total_us += e->total_ns * 1e-3;
            means[k * (size_t)p + (size_t)r] += n > 0 ? e->total_ns * 1e-3 / (double)n : 0.0;
        }
        off += nt;
    }
    for (size_t k = 0; k < s->ntags; k++) {
        memcpy(scratch, &means[k * (size_t)p], (size_t)p * sizeof *scratch);
        qsort(scratch, (size_t)p, sizeof *scratch, cmp_double);
        s->tags[k].max_us = scratch[p - 1];
        s->tags[k].median_us = 0.5 * (scratch[(p - 1) / 2] + scratch[p / 2]);
    }
    qsort(s->tags, s->ntags, sizeof *s->tags, cmp_tag);
    free(means);
    free(scratch);
    return 0;
}

int instr_point_end(instr_acc *a, int rank, int p, MPI_Comm ctrl, instr_summary **out, int *oom_rank)
{
    *out = NULL;
    *oom_rank = -1;
    size_t n = a->nkept; /* the same on every rank: kept iterations are agreed */
    wire_tag *mine = NULL;
    if (!a->oom && a->nkeys > 0 && !(mine = calloc(a->nkeys, sizeof *mine))) a->oom = 1;
    size_t nmine = 0;
    for (size_t k = 0; mine != NULL && k < a->nkeys; k++) {
        if (a->count[k] == 0) continue; /* seen only in dropped iterations */
        const char *name = ck_span_name(a->key_tag[k]);
        strncpy(mine[nmine].name, name ? name : "?", INSTR_NAME_LEN - 1);
        mine[nmine].step = a->key_step[k];
        mine[nmine].category = (int32_t)ck_span_category_of(a->key_tag[k]);
        mine[nmine].count = a->count[k];
        mine[nmine].total_ns = a->total_ns[k];
        nmine++;
    }
    uint64_t hdr[H_LEN] = {(uint64_t)a->oom, a->dropped, a->unbalanced, (uint64_t)nmine};
    uint64_t *hdrs = NULL;
    double *figs = NULL;
    wire_tag *tags = NULL;
    if (rank == 0 && !(hdrs = calloc((size_t)p * H_LEN, sizeof *hdrs))) a->oom = 1;
    /* First whether every rank could keep everything (the lowest rank that
     * could not is named), then the sizes, then rank 0's room for them. */
    double mark = agree_mark(a->oom, rank, p);
    int rc = agree_max(&mark, 1, ctrl);
    if (rc != MPI_SUCCESS) goto done;
    if ((*oom_rank = agree_marked_rank(mark, p)) >= 0) goto done;
    /* libcollkit's gather, not MPI_Gather: the library's gather may be forced;
     * binomial, for SimGrid's cost of many pending receives (main.c). */
    rc = ck_gather_binomial(hdr, hdrs, H_LEN, MPI_UINT64_T, 0, ctrl);
    if (rc != MPI_SUCCESS) goto done;
    double room = 1.0;
    if (rank == 0) {
        size_t total = 0;
        for (int r = 0; r < p; r++) total += hdrs[(size_t)r * H_LEN + H_NTAGS];
        if ((n > 0 && !(figs = calloc((size_t)p * n * NFIG, sizeof *figs))) ||
            (total > 0 && !(tags = calloc(total, sizeof *tags))))
            room = 0.0;
    }
    rc = agree_bcast(&room, 1, ctrl);
    if (rc != MPI_SUCCESS) goto done;
    if (room == 0.0) {
        *oom_rank = 0;
        goto done;
    }
    if (n > 0) rc = ck_gather_linear(a->fig, figs, n * NFIG, MPI_DOUBLE, 0, ctrl);
    if (rc != MPI_SUCCESS) goto done;
    if (rank == 0) {
        if (nmine > 0) memcpy(tags, mine, nmine * sizeof *tags);
        size_t off = nmine;
        for (int r = 1; r < p && rc == MPI_SUCCESS; r++) {
            size_t nt = hdrs[(size_t)r * H_LEN + H_NTAGS];
            if (nt > 0)
                rc = MPI_Recv(tags + off, (int)(nt * sizeof *tags), MPI_BYTE, r, BENCH_TAG_INSTR, ctrl,
                              MPI_STATUS_IGNORE);
            off += nt;
        }
    } else if (nmine > 0) {
        rc = MPI_Send(mine, (int)(nmine * sizeof *mine), MPI_BYTE, 0, BENCH_TAG_INSTR, ctrl);
    }
    if (rc != MPI_SUCCESS || rank != 0) goto done;
    instr_summary *s = calloc(1, sizeof *s);
    if (s == NULL || breakdown(s, figs, p, n) != 0 || merge_tags(s, tags, hdrs, p, n) != 0) {
        /* Only rank 0 knows; it alone writes the record. */
        instr_summary_free(s);
        *oom_rank = 0;
        goto done;
    }
    s->iterations = (long)n;
    for (int r = 0; r < p; r++) {
        s->dropped += hdrs[(size_t)r * H_LEN + H_DROPPED];
        s->unbalanced += hdrs[(size_t)r * H_LEN + H_UNBAL];
    }
    *out = s;
done:
    free(mine);
    free(hdrs);
    free(figs);
    free(tags);
    return rc;
}
