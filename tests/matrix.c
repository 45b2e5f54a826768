/*
 * ck_matrix: the correctness matrix of libcollkit, in one MPI launch.
 *
 * Every registered algorithm (or those selected) runs over roots, counts,
 * datatypes, ops, in place and out of place, on MPI_COMM_WORLD and on a split
 * communicator with reversed rank order. Results are compared with a direct
 * formula over the known inputs (tests/matrix_data.c), never with another
 * algorithm of the library. Guard bytes around every buffer catch writes out
 * of bounds; inputs are checked to be left untouched; buffers that MPI says
 * are not significant on a rank are passed as NULL. Algorithms called outside
 * their registry constraints must refuse with an error code. Invalid
 * arguments must give the matching MPI error class.
 *
 * Output (rank 0): `FAIL ...` lines, then one `ALG <collective> <name>
 * <passed> <failed> <refused>` line per algorithm, then `N passed, M failed`.
 * Exit status 0 only when nothing failed.
 */
#include "matrix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CK_MATRIX_MUTANTS
#include "mutants.h"
#define ALG_COUNT() mutant_count()
#define ALG_AT(i) mutant_at(i)
#else
#define ALG_COUNT() ck_algorithm_count()
#define ALG_AT(i) ck_algorithm_at(i)
#endif

#define MAX_SELECT 64
#define MAX_FAIL_LINES 10

typedef enum { LEVEL_QUICK, LEVEL_STANDARD, LEVEL_FULL } level_t;

typedef struct {
    level_t level;
    int ncoll;
    ck_collective colls[CK_NUM_COLLECTIVES];
    int nalg;
    const char *algs[MAX_SELECT];
    int verbose;
    int skip_invalid;
    int expect_fail; /* pass iff every selected algorithm fails (mutants) */
} options;

typedef struct {
    int passed, failed, refused, fail_lines;
} tally;

typedef struct {
    MPI_Comm comm;
    const char *name;
    int rank, p;
} commctx;

/* One configuration of the matrix; every selected algorithm of the collective
 * runs it against the same expected output. */
typedef struct {
    ck_collective coll;
    tkind t;
    okind o;
    size_t count;
    int root, inplace, seed;
    int rank, p;
} config;

static options opt;
static size_t nalgs;
static tally *tallies;

/* ---------------------------------------------------------------- dispatch */

static int call_alg(const ck_algorithm *a, const void *sbuf, void *rbuf, size_t count,
                    MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    switch (a->collective) {
    case CK_BCAST: return a->fn.bcast(rbuf, count, dt, root, comm);
    case CK_REDUCE: return a->fn.reduce(sbuf, rbuf, count, dt, op, root, comm);
    case CK_GATHER: return a->fn.gather(sbuf, rbuf, count, dt, root, comm);
    case CK_SCATTER: return a->fn.scatter(sbuf, rbuf, count, dt, root, comm);
    case CK_ALLGATHER: return a->fn.allgather(sbuf, rbuf, count, dt, comm);
    case CK_REDUCE_SCATTER: return a->fn.reduce_scatter(sbuf, rbuf, count, dt, op, comm);
    case CK_ALLREDUCE: return a->fn.allreduce(sbuf, rbuf, count, dt, op, comm);
    case CK_ALLTOALL: return a->fn.alltoall(sbuf, rbuf, count, dt, comm);
    default: return MPI_ERR_ARG;
    }
}

/* ---------------------------------------------------------------- buffers of a config */

static int is_root(const config *c) { return c->rank == c->root; }

/* Input element j of this rank (its send buffer, or its in-place data). */
static int64_t in_val(const config *c, size_t j)
{
    switch (c->coll) {
    case CK_BCAST: return mov_val(c->root, 0, j, c->seed);
    case CK_REDUCE:
    case CK_ALLREDUCE:
    case CK_REDUCE_SCATTER: return red_val(c->rank, j, c->seed, c->o);
    case CK_GATHER:
    case CK_ALLGATHER: return mov_val(c->rank, 0, j, c->seed);
    case CK_SCATTER:
    case CK_ALLTOALL:
        return c->count ? mov_val(c->rank, (int)(j / c->count), j % c->count, c->seed) : 0;
    default: return 0;
    }
}

/* Elements of the send buffer at this rank (0: passed as NULL or IN_PLACE). */
static size_t send_elems(const config *c)
{
    size_t n = c->count, pn = (size_t)c->p * c->count;
    switch (c->coll) {
    case CK_BCAST: return 0;
    case CK_REDUCE:
    case CK_GATHER: return (c->inplace && is_root(c)) ? 0 : n;
    case CK_SCATTER: return is_root(c) ? pn : 0;
    case CK_ALLGATHER:
    case CK_ALLREDUCE: return c->inplace ? 0 : n;
    case CK_REDUCE_SCATTER:
    case CK_ALLTOALL: return c->inplace ? 0 : pn;
    default: return 0;
    }
}

static int send_is_inplace(const config *c)
{
    switch (c->coll) {
    case CK_REDUCE:
    case CK_GATHER: return c->inplace && is_root(c);
    case CK_ALLGATHER:
    case CK_ALLREDUCE:
    case CK_REDUCE_SCATTER:
    case CK_ALLTOALL: return c->inplace;
    default: return 0;
    }
}

/* Elements of the receive buffer at this rank (0: passed as NULL/IN_PLACE). */
static size_t recv_elems(const config *c)
{
    size_t n = c->count, pn = (size_t)c->p * c->count;
    switch (c->coll) {
    case CK_BCAST: return n;
    case CK_REDUCE: return is_root(c) ? n : 0;
    case CK_GATHER: return is_root(c) ? pn : 0;
    case CK_SCATTER: return (c->inplace && is_root(c)) ? 0 : n;
    case CK_ALLGATHER:
    case CK_ALLTOALL: return pn;
    case CK_REDUCE_SCATTER: return c->inplace ? pn : n;
    case CK_ALLREDUCE: return n;
    default: return 0;
    }
}

/* Elements of the receive buffer that hold the result at this rank. */
static size_t result_elems(const config *c)
{
    if (c->coll == CK_REDUCE_SCATTER) return c->count;
    return recv_elems(c);
}

static int64_t expected_val(const config *c, size_t j)
{
    size_t n = c->count;
    switch (c->coll) {
    case CK_BCAST: return mov_val(c->root, 0, j, c->seed);
    case CK_REDUCE:
    case CK_ALLREDUCE: return red_expected(c->p, j, c->seed, c->o);
    case CK_REDUCE_SCATTER: return red_expected(c->p, (size_t)c->rank * n + j, c->seed, c->o);
    case CK_GATHER:
    case CK_ALLGATHER: return mov_val((int)(j / n), 0, j % n, c->seed);
    case CK_SCATTER: return mov_val(c->root, c->rank, j, c->seed);
    case CK_ALLTOALL: return mov_val((int)(j / n), c->rank, j % n, c->seed);
    default: return 0;
    }
}

/* Put this rank's input in place before a call (in-place inputs live in rbuf). */
static void fill_inputs(const config *c, gbuf *s, gbuf *r)
{
    size_t ns = send_elems(c), nr = recv_elems(c);
    for (size_t j = 0; j < ns; j++) put(s->data, j, c->t, in_val(c, j));
    if (nr) gbuf_scramble(r);
    switch (c->coll) {
    case CK_BCAST:
        if (is_root(c))
            for (size_t j = 0; j < nr; j++) put(r->data, j, c->t, in_val(c, j));
        break;
    case CK_REDUCE:
    case CK_ALLREDUCE:
    case CK_REDUCE_SCATTER:
    case CK_ALLTOALL:
        if (send_is_inplace(c))
            for (size_t j = 0; j < nr; j++) put(r->data, j, c->t, in_val(c, j));
        break;
    case CK_GATHER:
    case CK_ALLGATHER:
        if (send_is_inplace(c))
            for (size_t i = 0; i < c->count; i++)
                put(r->data, (size_t)c->rank * c->count + i, c->t, in_val(c, i));
        break;
    default: break;
    }
}

/* ---------------------------------------------------------------- running one case */

/* run_alg judges one call on this rank only. The ranks agree on the verdicts
 * of all algorithms of a configuration at once (one allreduce per config,
 * not per call): fewer synchronisations, and the algorithms run back to back
 * without a barrier between them, as they do in applications. */

typedef enum { CASE_PASS, CASE_FAIL, CASE_REFUSED } case_result;

/* Must this algorithm refuse the config (registry constraints)? */
static int must_refuse(const ck_algorithm *a, const config *c)
{
    if ((a->constraints & CK_REQUIRES_COMMUTATIVE) && ck_collective_has_op(c->coll) &&
        c->o == OP_NONCOMM)
        return 1;
    if ((a->constraints & CK_REQUIRES_POW2_RANKS) && (c->p & (c->p - 1)) != 0) return 1;
    if (c->count < a->min_count) return 1;
    return 0;
}

static case_result run_alg(const ck_algorithm *a, const config *c, const commctx *cc,
                           gbuf *s, gbuf *r, const int64_t *exp, char *why, size_t whylen)
{
    int bad = 0;
    why[0] = '\0';
    fill_inputs(c, s, r);
    const void *sbuf = send_is_inplace(c) ? MPI_IN_PLACE : (send_elems(c) ? s->data : NULL);
    void *rbuf = recv_elems(c) ? r->data : NULL;
    if (c->coll == CK_SCATTER && c->inplace && is_root(c)) rbuf = MPI_IN_PLACE;

    int rc = call_alg(a, sbuf, rbuf, c->count, tk_mpi(c->t), ok_mpi(c->o), c->root, cc->comm);
    int refuse = must_refuse(a, c);

    if (refuse) {
        if (rc == MPI_SUCCESS) {
            bad = 1;
            snprintf(why, whylen, "accepted a case outside its constraints");
        }
    } else if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        bad = 1;
        snprintf(why, whylen, "returned error %d (%.120s)", rc, msg);
    } else {
        size_t nres = result_elems(c);
        for (size_t j = 0; j < nres; j++) {
            if (!same(r->data, j, c->t, exp[j])) {
                bad = 1;
                snprintf(why, whylen, "element %zu is %lld, expected %lld", j,
                         (long long)get(r->data, j, c->t), (long long)exp[j]);
                break;
            }
        }
        size_t ns = send_elems(c);
        for (size_t j = 0; !bad && j < ns; j++) {
            if (!same(s->data, j, c->t, in_val(c, j))) {
                bad = 1;
                snprintf(why, whylen, "send buffer modified at element %zu", j);
            }
        }
    }
    if (!bad && ((send_elems(c) && !gbuf_guards_ok(s)) || (recv_elems(c) && !gbuf_guards_ok(r)))) {
        bad = 1;
        snprintf(why, whylen, "wrote outside its buffers");
    }

    if (bad) return CASE_FAIL;
    return refuse ? CASE_REFUSED : CASE_PASS;
}

/* ---------------------------------------------------------------- selection */

static int selected(const ck_algorithm *a)
{
    if (opt.ncoll) {
        int ok = 0;
        for (int i = 0; i < opt.ncoll; i++) ok |= opt.colls[i] == a->collective;
        if (!ok) return 0;
    }
    if (opt.nalg) {
        char full[128];
        snprintf(full, sizeof full, "%s/%s", ck_collective_name(a->collective), a->name);
        for (int i = 0; i < opt.nalg; i++)
            if (strcmp(opt.algs[i], a->name) == 0 || strcmp(opt.algs[i], full) == 0) return 1;
        return 0;
    }
    return 1;
}

static size_t count_list(int p, size_t *out)
{
    size_t cand[] = {0, 1, (size_t)(p - 1), (size_t)p, (size_t)p + 1, 1009, 65536};
    size_t n = 0, ncand = sizeof cand / sizeof cand[0];
    if (opt.level == LEVEL_QUICK) ncand = 6; /* no 65536 */
    for (size_t i = 0; i < ncand; i++) {
        int dup = 0;
        for (size_t k = 0; k < n; k++) dup |= out[k] == cand[i];
        if (!dup) out[n++] = cand[i];
    }
    return n;
}

static int root_list(int p, ck_collective coll, int *out)
{
    if (!ck_collective_has_root(coll)) {
        out[0] = 0;
        return 1;
    }
    if (p <= 8 && opt.level != LEVEL_QUICK) {
        for (int r = 0; r < p; r++) out[r] = r;
        return p;
    }
    int cand[] = {0, 1, p - 1}, n = 0;
    for (int i = 0; i < 3; i++) {
        int dup = cand[i] >= p;
        for (int k = 0; k < n; k++) dup |= out[k] == cand[i];
        if (!dup) out[n++] = cand[i];
    }
    return n;
}

/* Big vectors multiply the run time, not the coverage of the code paths;
 * below the full level they run with one datatype and op per width class. */
static int config_wanted(size_t count, tkind t, okind o, int root, int p, ck_collective coll)
{
    if (opt.level == LEVEL_FULL || count < 65536) return 1;
    (void)o;
    if (t != T_INT && t != T_DOUBLE) return 0;
    if (ck_collective_has_root(coll) && root != 0 && root != p - 1) return 0;
    return 1;
}

/* ---------------------------------------------------------------- the matrix on one communicator */

static int run_collective(ck_collective coll, const commctx *cc, int *seed)
{
    size_t idx[256];
    int nsel = 0;
    for (size_t i = 0; i < nalgs; i++) {
        const ck_algorithm *a = ALG_AT(i);
        if (a->collective == coll && selected(a) && nsel < 256) idx[nsel++] = i;
    }
    if (nsel == 0) return 0;

    size_t counts[8];
    size_t ncounts = count_list(cc->p, counts);
    int roots[64];
    int nroots = root_list(cc->p, coll, roots);
    int has_op = ck_collective_has_op(coll);
    int nops = has_op ? OP_COUNT : 1;
    int ntypes = opt.level == LEVEL_QUICK ? 2 : T_COUNT;
    const tkind quick_types[2] = {T_INT, T_DOUBLE};
    int ninplace = coll == CK_BCAST ? 1 : 2;

    for (size_t ci = 0; ci < ncounts; ci++)
        for (int ti = 0; ti < ntypes; ti++)
            for (int oi = 0; oi < nops; oi++)
                for (int ri = 0; ri < nroots; ri++)
                    for (int ip = 0; ip < ninplace; ip++) {
                        config c = {.coll = coll,
                                    .t = opt.level == LEVEL_QUICK ? quick_types[ti] : (tkind)ti,
                                    .o = (okind)oi,
                                    .count = counts[ci],
                                    .root = roots[ri],
                                    .inplace = ip,
                                    .seed = (*seed)++ % 1000,
                                    .rank = cc->rank,
                                    .p = cc->p};
                        if (has_op && !ok_supports(c.o, c.t)) continue;
                        if (!config_wanted(c.count, c.t, c.o, c.root, c.p, coll)) continue;

                        gbuf s = {0}, r = {0};
                        size_t nres = result_elems(&c);
                        int64_t *exp = malloc((nres ? nres : 1) * sizeof *exp);
                        if (gbuf_alloc(&s, send_elems(&c) * tk_size(c.t)) ||
                            gbuf_alloc(&r, recv_elems(&c) * tk_size(c.t)) || !exp) {
                            fprintf(stderr, "ck_matrix: out of memory\n");
                            MPI_Abort(MPI_COMM_WORLD, 3);
                        }
                        for (size_t j = 0; j < nres; j++) exp[j] = expected_val(&c, j);

                        int verdict[256], agreed[256];
                        case_result res[256];
                        char why[256][160];
                        for (int k = 0; k < nsel; k++) {
                            const ck_algorithm *a = ALG_AT(idx[k]);
                            res[k] = run_alg(a, &c, cc, &s, &r, exp, why[k], sizeof why[k]);
                            /* highest failing rank + 1, or 0 when it passed here */
                            verdict[k] = res[k] == CASE_FAIL ? cc->rank + 1 : 0;
                        }
                        MPI_Allreduce(verdict, agreed, nsel, MPI_INT, MPI_MAX, cc->comm);
                        for (int k = 0; k < nsel; k++) {
                            const ck_algorithm *a = ALG_AT(idx[k]);
                            if (agreed[k] && res[k] != CASE_FAIL) {
                                res[k] = CASE_FAIL;
                                snprintf(why[k], sizeof why[k], "failed on rank %d", agreed[k] - 1);
                            } else if (res[k] == CASE_FAIL) {
                                size_t l = strlen(why[k]);
                                snprintf(why[k] + l, sizeof why[k] - l, " (rank %d)", cc->rank);
                            }
                            /* each failing rank's leader-side view: the leader prints its own
                             * reason, or which rank failed */
                            if (cc->rank != 0) continue; /* the leader of this comm tallies */
                            tally *t = &tallies[idx[k]];
                            if (res[k] == CASE_FAIL) {
                                t->failed++;
                                if (t->fail_lines++ < MAX_FAIL_LINES || opt.verbose)
                                    printf("FAIL %s/%s comm=%s p=%d root=%d count=%zu dtype=%s "
                                           "op=%s inplace=%d: %s\n",
                                           ck_collective_name(coll), a->name, cc->name, cc->p,
                                           c.root, c.count, tkind_names[c.t],
                                           has_op ? okind_names[c.o] : "-", c.inplace, why[k]);
                            } else if (res[k] == CASE_REFUSED) {
                                t->passed++;
                                t->refused++;
                            } else {
                                t->passed++;
                            }
                            if (opt.verbose && res[k] != CASE_FAIL)
                                printf("ok   %s/%s comm=%s p=%d root=%d count=%zu dtype=%s op=%s "
                                       "inplace=%d%s\n",
                                       ck_collective_name(coll), a->name, cc->name, cc->p, c.root,
                                       c.count, tkind_names[c.t], has_op ? okind_names[c.o] : "-",
                                       c.inplace, res[k] == CASE_REFUSED ? " (refused)" : "");
                        }
                        fflush(stdout);
                        free(exp);
                        gbuf_free(&s);
                        gbuf_free(&r);
                    }
    return 0;
}

/* ---------------------------------------------------------------- invalid arguments */

typedef struct {
    const char *what;
    int expected;
} invalid_case;

/* Each invalid call is made identically on every rank, so every rank must
 * return the error before communicating. */
static void check_invalid(const ck_algorithm *a, const commctx *cc, tally *t)
{
    int p = cc->p;
    int has_root = ck_collective_has_root(a->collective);
    int has_op = ck_collective_has_op(a->collective);
    size_t n = 4;
    size_t elems = (size_t)p * n;
    int *sb = calloc(elems, sizeof(int)), *rb = calloc(elems, sizeof(int));
    if (!sb || !rb) MPI_Abort(MPI_COMM_WORLD, 3);

    struct {
        const char *what;
        int expected;
        const void *s;
        void *r;
        size_t count;
        MPI_Datatype dt;
        MPI_Op op;
        int root;
        MPI_Comm comm;
    } cases[] = {
        {"count above INT_MAX", MPI_ERR_COUNT, sb, rb, CK_MAX_COUNT + 1, MPI_INT, MPI_SUM, 0, cc->comm},
        {"count (size_t)-1", MPI_ERR_COUNT, sb, rb, (size_t)-1, MPI_INT, MPI_SUM, 0, cc->comm},
        {"NULL buffers with count > 0", MPI_ERR_BUFFER, NULL, NULL, n, MPI_INT, MPI_SUM, 0, cc->comm},
        {"MPI_DATATYPE_NULL", MPI_ERR_TYPE, sb, rb, n, MPI_DATATYPE_NULL, MPI_SUM, 0, cc->comm},
        {"MPI_COMM_NULL", MPI_ERR_COMM, sb, rb, n, MPI_INT, MPI_SUM, 0, MPI_COMM_NULL},
        {"root == p", MPI_ERR_ROOT, sb, rb, n, MPI_INT, MPI_SUM, p, cc->comm},
        {"root == -1", MPI_ERR_ROOT, sb, rb, n, MPI_INT, MPI_SUM, -1, cc->comm},
        {"MPI_OP_NULL", MPI_ERR_OP, sb, rb, n, MPI_INT, MPI_OP_NULL, 0, cc->comm},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!has_root && cases[i].expected == MPI_ERR_ROOT) continue;
        if (!has_op && cases[i].expected == MPI_ERR_OP) continue;
        int rc = call_alg(a, cases[i].s, cases[i].r, cases[i].count, cases[i].dt, cases[i].op,
                          cases[i].root, cases[i].comm);
        int cls = -1;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        int bad = cls != cases[i].expected, any = 0;
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, cc->comm);
        if (cc->rank != 0) continue;
        if (any) {
            t->failed++;
            if (t->fail_lines++ < MAX_FAIL_LINES || opt.verbose)
                printf("FAIL %s/%s comm=%s p=%d invalid argument (%s): returned class %d, "
                       "expected %d\n",
                       ck_collective_name(a->collective), a->name, cc->name, p, cases[i].what,
                       cls, cases[i].expected);
        } else {
            t->passed++;
        }
    }
    free(sb);
    free(rb);
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *f)
{
    fprintf(f, "usage: ck_matrix [--collective C]... [--algorithm NAME|C/NAME]... "
               "[--level quick|standard|full] [--no-invalid] [--verbose] [--list] [--expect-fail]\n");
}

static int parse_args(int argc, char **argv, int *list_only)
{
    opt.level = LEVEL_STANDARD;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--collective") == 0 && val) {
            if (opt.ncoll >= CK_NUM_COLLECTIVES || ck_collective_parse(val, &opt.colls[opt.ncoll]) != 0) {
                fprintf(stderr, "ck_matrix: unknown collective '%s'\n", val);
                return -1;
            }
            opt.ncoll++;
            i++;
        } else if (strcmp(arg, "--algorithm") == 0 && val) {
            if (opt.nalg >= MAX_SELECT) return -1;
            opt.algs[opt.nalg++] = val;
            i++;
        } else if (strcmp(arg, "--level") == 0 && val) {
            if (strcmp(val, "quick") == 0) opt.level = LEVEL_QUICK;
            else if (strcmp(val, "standard") == 0) opt.level = LEVEL_STANDARD;
            else if (strcmp(val, "full") == 0) opt.level = LEVEL_FULL;
            else {
                fprintf(stderr, "ck_matrix: unknown level '%s'\n", val);
                return -1;
            }
            i++;
        } else if (strcmp(arg, "--verbose") == 0) {
            opt.verbose = 1;
        } else if (strcmp(arg, "--no-invalid") == 0) {
            opt.skip_invalid = 1;
        } else if (strcmp(arg, "--expect-fail") == 0) {
            opt.expect_fail = 1;
        } else if (strcmp(arg, "--list") == 0) {
            *list_only = 1;
        } else {
            fprintf(stderr, "ck_matrix: unexpected argument '%s'\n", arg);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int wrank, wsize, list_only = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);

    if (parse_args(argc, argv, &list_only) != 0) {
        if (wrank == 0) usage(stderr);
        MPI_Finalize();
        return 2;
    }
    nalgs = ALG_COUNT();
    size_t nsel = 0;
    for (size_t i = 0; i < nalgs; i++) nsel += selected(ALG_AT(i));
    if (nsel == 0) {
        if (wrank == 0) fprintf(stderr, "ck_matrix: no registered algorithm matches the selection\n");
        MPI_Finalize();
        return 2;
    }
    if (list_only) {
        for (size_t i = 0; wrank == 0 && i < nalgs; i++) {
            const ck_algorithm *a = ALG_AT(i);
            if (selected(a)) printf("%s/%s\n", ck_collective_name(a->collective), a->name);
        }
        MPI_Finalize();
        return 0;
    }

    /* Errors inside an algorithm must come back as codes, not abort the run. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (matrix_ops_init() != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 3);
    tallies = calloc(nalgs, sizeof *tallies);
    if (!tallies) MPI_Abort(MPI_COMM_WORLD, 3);

    /* Split: two interleaved halves, ranks in reverse order, running concurrently. */
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, -wrank, &split);
    MPI_Comm_set_errhandler(split, MPI_ERRORS_RETURN);
    commctx comms[2] = {{MPI_COMM_WORLD, "world", 0, 0}, {split, "split", 0, 0}};
    for (int k = 0; k < 2; k++) {
        MPI_Comm_rank(comms[k].comm, &comms[k].rank);
        MPI_Comm_size(comms[k].comm, &comms[k].p);
    }

    int seed = 1;
    for (int k = 0; k < 2; k++) {
        for (int coll = 0; coll < CK_NUM_COLLECTIVES; coll++) {
            run_collective((ck_collective)coll, &comms[k], &seed);
            if (wrank == 0) {
                fprintf(stderr, "ck_matrix: p=%d %s %s done\n", wsize, comms[k].name,
                        ck_collective_name((ck_collective)coll));
            }
        }
    }
    if (!opt.skip_invalid)
        for (size_t i = 0; i < nalgs; i++)
            if (selected(ALG_AT(i))) check_invalid(ALG_AT(i), &comms[0], &tallies[i]);

    /* Sum the tallies of both communicators' leaders onto world rank 0. */
    int *mine = calloc(3 * nalgs, sizeof(int)), *sum = calloc(3 * nalgs, sizeof(int));
    if (!mine || !sum) MPI_Abort(MPI_COMM_WORLD, 3);
    for (size_t i = 0; i < nalgs; i++) {
        mine[3 * i] = tallies[i].passed;
        mine[3 * i + 1] = tallies[i].failed;
        mine[3 * i + 2] = tallies[i].refused;
    }
    MPI_Reduce(mine, sum, 3 * (int)nalgs, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    long passed = 0, failed = 0;
    if (wrank == 0) {
        for (size_t i = 0; i < nalgs; i++) {
            const ck_algorithm *a = ALG_AT(i);
            if (!selected(a)) continue;
            printf("ALG %s %s %d %d %d\n", ck_collective_name(a->collective), a->name, sum[3 * i],
                   sum[3 * i + 1], sum[3 * i + 2]);
            if (opt.expect_fail) {
                /* a mutant counts as passed when the matrix caught it */
                if (sum[3 * i + 1] > 0) passed++;
                else {
                    failed++;
                    printf("FAIL %s/%s: mutant not caught by the matrix\n",
                           ck_collective_name(a->collective), a->name);
                }
                continue;
            }
            passed += sum[3 * i];
            failed += sum[3 * i + 1];
        }
        printf("ranks=%d level=%s\n", wsize,
               opt.level == LEVEL_QUICK ? "quick" : opt.level == LEVEL_FULL ? "full" : "standard");
        printf("%ld passed, %ld failed\n", passed, failed);
        fflush(stdout);
    }
    MPI_Bcast(&failed, 1, MPI_LONG, 0, MPI_COMM_WORLD);

    free(mine);
    free(sum);
    free(tallies);
    MPI_Comm_free(&split);
    matrix_ops_free();
    MPI_Finalize();
    return failed ? 1 : 0;
}
