/*
 * ck_matrix: the correctness matrix of libcollkit, in one MPI launch.
 *
 * Every registered algorithm (or those selected) runs over roots, counts,
 * datatypes, ops, in place and out of place, on MPI_COMM_WORLD and on a split
 * communicator with reversed rank order. Buffers, inputs and the check of
 * every call come from the validator shared with collkit-bench
 * (validate/validate.h): a direct formula over the known inputs, never
 * another algorithm of the library, guard bytes around every buffer, inputs
 * left untouched, NULL for buffers that are not significant on a rank, and
 * MPI_IN_PLACE where the collective's descriptor says. Algorithms called outside
 * their registry constraints must refuse with an error code. Invalid
 * arguments must give the matching MPI error class.
 *
 * Output (rank 0): `FAIL ...` lines, then one `VARIANT <collective> <name>
 * <cases>` line per selected CK_TRAIT_FP_RANK_VARIANT algorithm (spread
 * cases whose results differed across ranks, within the bound), one `ALG
 * <collective> <name> <passed> <failed> <refused>` line per algorithm, then
 * `N passed, M failed`.
 * Exit status 0 only when nothing failed.
 */
#include "matrix_mixed.h"
#include "validate.h"

#include <inttypes.h>
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

/* --algorithm options one launch takes, and so the algorithms of one
 * collective run_collective handles: collkit check names every algorithm of
 * a run on the command line (65 in the registry in November 2026). */
#define MAX_SELECT 256
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
    int mixed;       /* --mixed-types: only the mixed-datatype cases (matrix_mixed.c) */
    int expect_rank_variant; /* fail unless every selected trait algorithm differed across ranks */
    int fp_rank_variant;     /* treat every selected algorithm as CK_TRAIT_FP_RANK_VARIANT */
    const char *fp_rank_variant_coll; /* ... or only those of this collective (NULL: every one) */
} options;

typedef struct {
    int passed, failed, refused, fail_lines;
    int rank_variant; /* spread cases whose results differed across ranks (allowed by the trait) */
} tally;

typedef struct {
    MPI_Comm comm;
    const char *name;
    int rank, p;
} commctx;

/* One configuration of the matrix: a case on this rank and its seed; every
 * selected algorithm of the collective runs it. */
typedef struct {
    ckv_case c;
    uint64_t seed;
} config;

/* The datatypes and ops the matrix runs (quick: the first two types). */
static const char *const type_names[] = {"int32", "double", "int64", "float"};
#define NTYPES (sizeof type_names / sizeof type_names[0])
#define NTYPES_QUICK 2
static const ckv_op matrix_ops[] = {CKV_SUM, CKV_MAX, CKV_NONCOMM};
#define NOPS (sizeof matrix_ops / sizeof matrix_ops[0])

static options opt;
static size_t nalgs;
static tally *tallies;

/* ---------------------------------------------------------------- running one case */

/* run_alg judges one call on this rank only. The ranks agree on the verdicts
 * of all algorithms of a configuration at once (one allreduce per config,
 * not per call): fewer synchronisations, and the algorithms run back to back
 * without a barrier between them, as they do in applications. */

typedef enum { CASE_PASS, CASE_FAIL, CASE_REFUSED } case_result;

/* Must this algorithm refuse the config (registry constraints)? */
static int must_refuse(const ck_algorithm *a, const ckv_case *c, MPI_Comm comm)
{
    if ((a->constraints & CK_REQUIRES_COMMUTATIVE) && c->coll->has_op &&
        !ckv_op_commutative(c->op))
        return 1;
    if ((a->constraints & CK_REQUIRES_POW2_RANKS) && (c->p & (c->p - 1)) != 0) return 1;
    if (a->constraints & CK_REQUIRES_FATTREE) {
        /* The radices of COLLKIT_FATTREE (ctest sets them per p) must fit p. */
        int m[CK_FATTREE_MAX_LEVELS + 1], levels;
        if (ck_fattree_radices(c->p, m, &levels) != MPI_SUCCESS) return 1;
    }
    if (a->constraints & CK_REQUIRES_EQUAL_NODES) {
        /* The nodes of this communicator (COLLKIT_RANKS_PER_NODE, set per
         * ctest entry, or shared memory) must all hold the same count. */
        const ck_nodes *nd;
        if (ck_nodes_get(comm, &nd) != MPI_SUCCESS || !nd->equal) return 1;
    }
    if (c->count < a->min_count) return 1;
    return 0;
}

static case_result run_alg(const ck_algorithm *a, const config *cf, const commctx *cc,
                           ckv_buffers *b, char *why, size_t whylen)
{
    const ckv_case *c = &cf->c;
    why[0] = '\0';
    ckv_fill(c, b, cf->seed);
    int rc = ck_algorithm_call(a, ckv_send_arg(b), ckv_recv_arg(b), c->count,
                               ck_datatype_mpi(c->dtype), ckv_op_mpi(c->op), c->root, cc->comm);
    int refuse = must_refuse(a, c, cc->comm);

    if (refuse) {
        if (rc == MPI_SUCCESS) {
            snprintf(why, whylen, "rank %d: accepted a case outside its constraints", c->rank);
            return CASE_FAIL;
        }
        /* A refusal still must not write out of bounds. */
        if (ckv_buf_guards(&b->send) || ckv_buf_guards(&b->recv)) {
            snprintf(why, whylen, "rank %d: wrote outside its buffers", c->rank);
            return CASE_FAIL;
        }
        return CASE_REFUSED;
    }
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        snprintf(why, whylen, "rank %d: returned error %d (%.100s)", c->rank, rc, msg);
        return CASE_FAIL;
    }
    return ckv_check(c, b, cf->seed, why, whylen) ? CASE_FAIL : CASE_PASS;
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
static int config_wanted(const ckv_case *c)
{
    if (opt.level == LEVEL_FULL || c->count < 65536) return 1;
    for (size_t i = 0; i < NTYPES_QUICK; i++)
        if (c->dtype == ck_datatype_find(type_names[i]))
            return !c->coll->has_root || c->root == 0 || c->root == c->p - 1;
    return 0;
}

/* ---------------------------------------------------------------- floating-point rank variance */

/* CK_TRAIT_FP_RANK_VARIANT: an algorithm whose ranks add the inputs in
 * different orders may return floating-point sums that differ across ranks in
 * the last bits. Only there, and only for the spread inputs (the one case
 * whose sum is inexact), are differing results across ranks allowed; every
 * rank's result must still lie within the rounding bound of its own order,
 * |got - exact| <= p eps sum|x| (validate/check.c: a sum of p terms in any
 * tree has at most p - 1 roundings, each at most eps times the partial
 * sum's magnitude, which is at most sum|x|), and the exact inputs (integer
 * types and small-integer floats) must still match the reference on every
 * rank, hence bitwise across ranks. */
static int rank_variance_allowed(const ck_algorithm *a, const ckv_case *c)
{
    int told = opt.fp_rank_variant &&
               (!opt.fp_rank_variant_coll || strcmp(opt.fp_rank_variant_coll, ck_collective_name(a->collective)) == 0);
    return ((a->constraints & CK_TRAIT_FP_RANK_VARIANT) || told) && c->spread && ckv_spread_applies(c);
}

/* Rank 0 prints how many spread cases of each trait algorithm differed across
 * ranks (VARIANT lines); with --expect-rank-variant, a selected trait
 * algorithm that never differed counts as a failure: then the trait, or the
 * test, no longer says anything. Returns the failures (rank 0). */
static long report_rank_variants(void)
{
    long failed = 0;
    int *mine = calloc(nalgs, sizeof(int)), *sum = calloc(nalgs, sizeof(int));
    if (!mine || !sum) MPI_Abort(MPI_COMM_WORLD, 3);
    for (size_t i = 0; i < nalgs; i++) mine[i] = tallies[i].rank_variant;
    MPI_Reduce(mine, sum, (int)nalgs, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    for (size_t i = 0; wrank == 0 && i < nalgs; i++) {
        const ck_algorithm *a = ALG_AT(i);
        if (!selected(a) || !(a->constraints & CK_TRAIT_FP_RANK_VARIANT)) continue;
        printf("VARIANT %s %s %d\n", ck_collective_name(a->collective), a->name, sum[i]);
        if (opt.expect_rank_variant && sum[i] == 0) {
            failed++;
            printf("FAIL %s/%s: results never differed across ranks (--expect-rank-variant)\n",
                   ck_collective_name(a->collective), a->name);
        }
    }
    free(mine);
    free(sum);
    return failed;
}

/* ---------------------------------------------------------------- the matrix on one communicator */

static int run_collective(ck_collective coll, const commctx *cc, int *seed)
{
    size_t idx[MAX_SELECT];
    int nsel = 0;
    for (size_t i = 0; i < nalgs; i++) {
        const ck_algorithm *a = ALG_AT(i);
        if (a->collective == coll && selected(a) && nsel < MAX_SELECT) idx[nsel++] = i;
    }
    if (nsel == 0) return 0;

    size_t counts[8];
    size_t ncounts = count_list(cc->p, counts);
    int roots[64];
    int nroots = root_list(cc->p, coll, roots);
    const ck_collective_desc *d = ck_collective_describe(coll);
    int nops = d->has_op ? (int)NOPS : 1;
    int ntypes = opt.level == LEVEL_QUICK ? NTYPES_QUICK : (int)NTYPES;
    int ninplace = d->in_place == CK_IN_PLACE_NONE ? 1 : 2;

    /* (datatype, op, inputs) combinations: every type and op with exact
     * inputs, and, where the result is replicated and reduced, sums over
     * float and double with spread inputs (validate.h) at every level: the
     * only inputs where an order of additions that differs between ranks
     * shows in the bits of the result. */
    struct {
        const ck_datatype_desc *dtype;
        ckv_op op;
        int spread;
    } combos[NTYPES * NOPS + 2];
    int ncombos = 0;
    for (int ti = 0; ti < ntypes; ti++)
        for (int oi = 0; oi < nops; oi++) {
            combos[ncombos].dtype = ck_datatype_find(type_names[ti]);
            combos[ncombos].op = matrix_ops[oi];
            combos[ncombos++].spread = 0;
        }
    if (d->has_op && d->replicated) {
        const char *spread_types[] = {"float", "double"};
        for (int k = 0; k < 2; k++) {
            combos[ncombos].dtype = ck_datatype_find(spread_types[k]);
            combos[ncombos].op = CKV_SUM;
            combos[ncombos++].spread = 1;
        }
    }

    for (size_t ci = 0; ci < ncounts; ci++)
        for (int mi = 0; mi < ncombos; mi++)
                for (int ri = 0; ri < nroots; ri++)
                    for (int ip = 0; ip < ninplace; ip++) {
                        config cf = {.c = {.coll = d,
                                           .dtype = combos[mi].dtype,
                                           .op = combos[mi].op,
                                           .count = counts[ci],
                                           .root = roots[ri],
                                           .in_place = ip,
                                           .rank = cc->rank,
                                           .p = cc->p,
                                           .spread = combos[mi].spread},
                                     .seed = (uint64_t)((*seed)++ % 1000)};
                        const ckv_case *c = &cf.c;
                        if (d->has_op && !ckv_op_supports(c->op, c->dtype)) continue;
                        if (!config_wanted(c)) continue;

                        ckv_buffers b;
                        if (ckv_buffers_alloc(c, &b) != 0) {
                            fprintf(stderr, "ck_matrix: out of memory\n");
                            MPI_Abort(MPI_COMM_WORLD, 3);
                        }

                        /* Per algorithm: [0] highest failing rank + 1 (0 when it
                         * passed here), [1] the result's digest, [2] its complement.
                         * One MPI_MAX over all three gives the verdict and the
                         * largest and smallest digest: a replicated result is
                         * bitwise the same on every rank iff they are equal. The
                         * MPI library compares, never the algorithm under test. */
                        uint64_t mine[3 * MAX_SELECT], agreed[3 * MAX_SELECT];
                        case_result res[MAX_SELECT];
                        char why[MAX_SELECT][200];
                        for (int k = 0; k < nsel; k++) {
                            const ck_algorithm *a = ALG_AT(idx[k]);
                            res[k] = run_alg(a, &cf, cc, &b, why[k], sizeof why[k]);
                            uint64_t dg = d->replicated && res[k] == CASE_PASS
                                              ? ckv_result_digest(c, &b) : 0;
                            mine[3 * k] = res[k] == CASE_FAIL ? (uint64_t)cc->rank + 1 : 0;
                            mine[3 * k + 1] = dg;
                            mine[3 * k + 2] = ~dg;
                        }
                        MPI_Allreduce(mine, agreed, 3 * nsel, MPI_UINT64_T, MPI_MAX, cc->comm);
                        for (int k = 0; k < nsel; k++) {
                            const ck_algorithm *a = ALG_AT(idx[k]);
                            if (agreed[3 * k] && res[k] != CASE_FAIL) {
                                res[k] = CASE_FAIL;
                                snprintf(why[k], sizeof why[k], "failed on rank %d",
                                         (int)agreed[3 * k] - 1);
                            } else if (!agreed[3 * k] && res[k] == CASE_PASS &&
                                       agreed[3 * k + 1] != ~agreed[3 * k + 2] &&
                                       rank_variance_allowed(a, c)) {
                                if (cc->rank == 0) tallies[idx[k]].rank_variant++;
                            } else if (!agreed[3 * k] && res[k] == CASE_PASS &&
                                       agreed[3 * k + 1] != ~agreed[3 * k + 2]) {
                                res[k] = CASE_FAIL;
                                snprintf(why[k], sizeof why[k],
                                         "result not bitwise identical on all ranks (digests "
                                         "from %016" PRIx64 " to %016" PRIx64 ")",
                                         ~agreed[3 * k + 2], agreed[3 * k + 1]);
                            }
                            /* each failing rank's leader-side view: the leader prints its own
                             * reason, or which rank failed */
                            if (cc->rank != 0) continue; /* the leader of this comm tallies */
                            tally *t = &tallies[idx[k]];
                            if (res[k] == CASE_FAIL) {
                                t->failed++;
                                if (t->fail_lines++ < MAX_FAIL_LINES || opt.verbose)
                                    printf("FAIL %s/%s comm=%s p=%d root=%d count=%zu dtype=%s%s "
                                           "op=%s inplace=%d: %s\n",
                                           ck_collective_name(coll), a->name, cc->name, cc->p,
                                           c->root, c->count, c->dtype->name,
                                           c->spread ? "(spread)" : "",
                                           d->has_op ? ckv_op_name(c->op) : "-", c->in_place,
                                           why[k]);
                            } else if (res[k] == CASE_REFUSED) {
                                t->passed++;
                                t->refused++;
                            } else {
                                t->passed++;
                            }
                            if (opt.verbose && res[k] != CASE_FAIL)
                                printf("ok   %s/%s comm=%s p=%d root=%d count=%zu dtype=%s%s op=%s "
                                       "inplace=%d%s\n",
                                       ck_collective_name(coll), a->name, cc->name, cc->p, c->root,
                                       c->count, c->dtype->name, c->spread ? "(spread)" : "",
                                       d->has_op ? ckv_op_name(c->op) : "-", c->in_place,
                                       res[k] == CASE_REFUSED ? " (refused)" : "");
                        }
                        fflush(stdout);
                        ckv_buffers_free(&b);
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
        int rc = ck_algorithm_call(a, cases[i].s, cases[i].r, cases[i].count, cases[i].dt, cases[i].op,
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
               "[--level quick|standard|full] [--no-invalid] [--verbose] [--list] [--expect-fail] "
               "[--mixed-types] [--expect-rank-variant] [--fp-rank-variant[=COLL]]\n");
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
            if (opt.nalg >= MAX_SELECT) {
                fprintf(stderr, "ck_matrix: more than %d --algorithm options\n", MAX_SELECT);
                return -1;
            }
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
        } else if (strcmp(arg, "--mixed-types") == 0) {
            opt.mixed = 1;
        } else if (strcmp(arg, "--expect-rank-variant") == 0) {
            opt.expect_rank_variant = 1;
        } else if (strcmp(arg, "--fp-rank-variant") == 0 || strncmp(arg, "--fp-rank-variant=", 18) == 0) {
            /* The preload sweep's label algorithm stands for a forced one that
             * has the trait (tests/preload/sweep.py); =COLL: only that
             * collective's (a sweep round forces one algorithm of each). */
            opt.fp_rank_variant = 1;
            opt.fp_rank_variant_coll = arg[17] == '=' ? arg + 18 : NULL;
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
    if (ckv_ops_init() != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 3);
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
    for (int k = 0; opt.mixed && k < 2; k++)
        for (size_t i = 0; i < nalgs; i++) {
            if (!selected(ALG_AT(i))) continue;
            ckm_tally mt = {0, 0, 0, tallies[i].fail_lines};
            ckm_mixed_run(ALG_AT(i), ck_algorithm_call, must_refuse, comms[k].comm, comms[k].name,
                          opt.verbose, MAX_FAIL_LINES, &mt);
            tallies[i].passed += mt.passed;
            tallies[i].failed += mt.failed;
            tallies[i].refused += mt.refused;
            tallies[i].fail_lines = mt.fail_lines;
        }
    for (int k = 0; !opt.mixed && k < 2; k++) {
        for (int coll = 0; coll < CK_NUM_COLLECTIVES; coll++) {
            run_collective((ck_collective)coll, &comms[k], &seed);
            if (wrank == 0) {
                fprintf(stderr, "ck_matrix: p=%d %s %s done\n", wsize, comms[k].name,
                        ck_collective_name((ck_collective)coll));
            }
        }
    }
    if (!opt.skip_invalid && !opt.mixed)
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
    long passed = 0, failed = report_rank_variants();
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
    ckv_ops_free();
    MPI_Finalize();
    return failed ? 1 : 0;
}
