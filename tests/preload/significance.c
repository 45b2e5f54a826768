/* Run under libcollkit-preload (LD_PRELOAD) with COLLKIT_ALGORITHMS forcing
 * one algorithm per collective (tests/preload/sweep.py --program significance
 * forces every algorithm in turn; a hang fails on its timeout). Issue #32:
 * correct calls whose ranks pass DIFFERENT but matching datatypes (a strided
 * vector at one rank, contiguous doubles at another: the same type
 * signature), and pass arguments MPI does not read at that rank as NULL, -1,
 * MPI_DATATYPE_NULL (the send side of scatter's non-roots, the receive side
 * of gather's non-roots and reduce's non-roots, the ignored side of
 * MPI_IN_PLACE). Every rank must take the same decision (the forced
 * algorithm, or a counted fallback), or the ranks wait on each other forever.
 *
 * Checked per call: the result against a trivially computed expectation, the
 * shim decided (its counters moved: a call on the algorithm or a counted
 * fallback, never a silent pass to the library), and at the end, that every
 * rank decided alike on every call. */
#define _POSIX_C_SOURCE 200809L
#include "preload_check.h"

#include <collkit/collkit.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 5          /* doubles a block */
#define MAX_CALLS 64 /* calls recorded for the agreement check */

static int root;
static int forced[CK_NUM_COLLECTIVES];
static int decided[MAX_CALLS], ncalls;
static long calls0, fallbacks0;
static MPI_Datatype vec;  /* N doubles, every other one: extent 2N-1 doubles */
static MPI_Datatype rvec; /* vec resized to 2N doubles: one block per 2N doubles */
static MPI_Datatype cont; /* N contiguous doubles as one derived element */

static double *dalloc(size_t n, double fill)
{
    double *b = malloc((n ? n : 1) * sizeof(double));
    if (!b) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < n; i++) b[i] = fill;
    return b;
}

/* The forced algorithm of each collective, by index among the collective's
 * registry entries (the shim's numbering), from COLLKIT_ALGORITHMS. */
static void parse_forced(const char *spec)
{
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) forced[c] = -1;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        ck_collective c;
        if (!eq) continue;
        *eq = '\0';
        if (ck_collective_parse(item, &c) != 0) continue;
        int k = 0;
        for (size_t i = 0; i < ck_algorithm_count(); i++) {
            const ck_algorithm *a = ck_algorithm_at(i);
            if (a->collective != c) continue;
            if (strcmp(a->name, eq + 1) == 0) forced[c] = k;
            k++;
        }
    }
}

static long all_fallbacks(ck_collective c)
{
    long n = 0;
    for (int r = 0; r < CKP_NUM_REASONS; r++) n += fallbacks_fn(c, r);
    return n;
}

static void before(ck_collective c)
{
    if (forced[c] < 0) return;
    calls0 = calls_fn(c, forced[c]);
    fallbacks0 = all_fallbacks(c);
}

/* Records this rank's decision: 1 the algorithm ran, 0 a counted fallback. */
static void after(ck_collective c, const char *what)
{
    if (forced[c] < 0 || ncalls >= MAX_CALLS) return;
    const long dc = calls_fn(c, forced[c]) - calls0, df = all_fallbacks(c) - fallbacks0;
    CHECK(dc + df == 1, "%s: the shim did not decide (algorithm calls +%ld, fallbacks +%ld)", what, dc, df);
    decided[ncalls++] = dc == 1 ? 1 : df == 1 ? 0 : -1;
}

static double val(int r, int i) { return 1000.0 * r + i; }
static double tri(void) { return 1000.0 * size * (size - 1) / 2; } /* sum over r of 1000 r */

/* bcast: the root's buffer is strided (vec), the others' contiguous. */
static void test_bcast(void)
{
    double *b = dalloc(2 * N, -1.0);
    if (rank == root)
        for (int i = 0; i < N; i++) b[2 * i] = val(root, i);
    before(CK_BCAST);
    if (rank == root) MPI_Bcast(b, 1, vec, root, MPI_COMM_WORLD);
    else MPI_Bcast(b, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
    after(CK_BCAST, "bcast vec/contiguous");
    for (int i = 0; i < N; i++) {
        double got = rank == root ? b[2 * i] : b[i];
        CHECK(got == val(root, i), "bcast[%d] = %g", i, got);
    }
    if (rank == root)
        for (int i = 0; i < N - 1; i++) CHECK(b[2 * i + 1] == -1.0, "bcast wrote the root's gap %d", i);
    free(b);
}

/* reduce: recvbuf is not significant at the non-roots (NULL), and the root
 * may reduce in place. */
static void test_reduce(void)
{
    double *s = dalloc(N, 0.0), *r = dalloc(N, -1.0);
    for (int i = 0; i < N; i++) s[i] = val(rank, i);
    for (int in_place = 0; in_place < 2; in_place++) {
        if (rank == root && in_place)
            for (int i = 0; i < N; i++) r[i] = val(rank, i);
        before(CK_REDUCE);
        if (rank == root) MPI_Reduce(in_place ? MPI_IN_PLACE : s, r, N, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
        else MPI_Reduce(s, NULL, N, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
        after(CK_REDUCE, in_place ? "reduce in place, recvbuf NULL at non-roots" : "reduce, recvbuf NULL at non-roots");
        if (rank == root)
            for (int i = 0; i < N; i++)
                CHECK(r[i] == tri() + size * i, "reduce%s[%d] = %g", in_place ? " in place" : "", i, r[i]);
    }
    free(s);
    free(r);
}

/* gather: the root receives each block into a strided layout (rvec), the
 * non-roots pass NULL, -1, MPI_DATATYPE_NULL as the receive side, odd ones
 * send from MPI_BOTTOM with an absolute-address type; then the root in place
 * with NULL... as its (ignored) send side. */
static void test_gather(void)
{
    double *s = dalloc(N, 0.0), *r = dalloc((size_t)(2 * N * size), -1.0);
    for (int i = 0; i < N; i++) s[i] = val(rank, i);
    MPI_Datatype abs_t = MPI_DATATYPE_NULL;
    MPI_Aint addr;
    MPI_Get_address(s, &addr);
    int len = N;
    MPI_Type_create_hindexed(1, &len, &addr, MPI_DOUBLE, &abs_t);
    MPI_Type_commit(&abs_t);
    before(CK_GATHER);
    if (rank == root) MPI_Gather(s, N, MPI_DOUBLE, r, 1, rvec, root, MPI_COMM_WORLD);
    else if (rank % 2) MPI_Gather(MPI_BOTTOM, 1, abs_t, NULL, -1, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    else MPI_Gather(s, N, MPI_DOUBLE, NULL, -1, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    after(CK_GATHER, "gather rvec/contiguous/MPI_BOTTOM, recv NULL,-1,NULL at non-roots");
    if (rank == root)
        for (int q = 0; q < size; q++)
            for (int i = 0; i < N; i++) {
                CHECK(r[2 * N * q + 2 * i] == val(q, i), "gather block %d[%d] = %g", q, i, r[2 * N * q + 2 * i]);
                CHECK(r[2 * N * q + 2 * i + 1] == -1.0, "gather wrote a gap of block %d", q);
            }
    /* In place at the root: its send side is ignored. */
    if (rank == root)
        for (int i = 0; i < N * size; i++) r[i] = (i / N == root) ? val(root, i % N) : -1.0;
    before(CK_GATHER);
    if (rank == root) MPI_Gather(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, r, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
    else MPI_Gather(s, N, MPI_DOUBLE, NULL, -1, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    after(CK_GATHER, "gather in place, send NULL,-1,NULL at the root");
    if (rank == root)
        for (int i = 0; i < N * size; i++) CHECK(r[i] == val(i / N, i % N), "in-place gather[%d] = %g", i, r[i]);
    MPI_Type_free(&abs_t);
    free(s);
    free(r);
}

/* scatter, the call of issue #32: the root receives its own block into a
 * strided vector, the others into contiguous doubles, and the non-roots pass
 * NULL, -1, MPI_DATATYPE_NULL as the send side. Then the root in place with
 * NULL, -1, MPI_DATATYPE_NULL as its receive side, then 0 counts. */
static void test_scatter(void)
{
    double *s = NULL, *r = dalloc(2 * N, -1.0);
    if (rank == root) {
        s = dalloc((size_t)(N * size), 0.0);
        for (int i = 0; i < N * size; i++) s[i] = val(i / N, i % N);
    }
    before(CK_SCATTER);
    if (rank == root) MPI_Scatter(s, N, MPI_DOUBLE, r, 1, vec, root, MPI_COMM_WORLD);
    else MPI_Scatter(NULL, -1, MPI_DATATYPE_NULL, r, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
    after(CK_SCATTER, "scatter contiguous/vec, send NULL,-1,NULL at non-roots");
    for (int i = 0; i < N; i++) {
        double got = rank == root ? r[2 * i] : r[i];
        CHECK(got == val(rank, i), "scatter[%d] = %g", i, got);
    }
    if (rank == root)
        for (int i = 0; i < N - 1; i++) CHECK(r[2 * i + 1] == -1.0, "scatter wrote the root's gap %d", i);

    for (int i = 0; i < 2 * N; i++) r[i] = -1.0;
    before(CK_SCATTER);
    if (rank == root) MPI_Scatter(s, N, MPI_DOUBLE, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    else MPI_Scatter(NULL, -1, MPI_DATATYPE_NULL, r, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
    after(CK_SCATTER, "scatter in place, recv NULL,-1,NULL at the root");
    if (rank != root)
        for (int i = 0; i < N; i++) CHECK(r[i] == val(rank, i), "in-place scatter[%d] = %g", i, r[i]);
    else
        for (int i = 0; i < N * size; i++) CHECK(s[i] == val(i / N, i % N), "in-place scatter changed the root's %d", i);

#if MPI_VERSION >= 4
    /* The same through the large-count form (mpi4py 4 under MPICH calls only
     * these): the non-roots' send count -1 must not send them alone to the
     * library. */
    for (int i = 0; i < 2 * N; i++) r[i] = -1.0;
    before(CK_SCATTER);
    if (rank == root) MPI_Scatter_c(s, N, MPI_DOUBLE, r, 1, vec, root, MPI_COMM_WORLD);
    else MPI_Scatter_c(NULL, -1, MPI_DATATYPE_NULL, r, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
    after(CK_SCATTER, "MPI_Scatter_c contiguous/vec, send NULL,-1,NULL at non-roots");
    for (int i = 0; i < N; i++) {
        double got = rank == root ? r[2 * i] : r[i];
        CHECK(got == val(rank, i), "MPI_Scatter_c[%d] = %g", i, got);
    }
    /* And gather's: the non-roots' receive count -1. */
    double *g = rank == root ? dalloc((size_t)(N * size), -1.0) : NULL, mine[N];
    for (int i = 0; i < N; i++) mine[i] = val(rank, i);
    before(CK_GATHER);
    if (rank == root) MPI_Gather_c(mine, N, MPI_DOUBLE, g, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
    else MPI_Gather_c(mine, N, MPI_DOUBLE, NULL, -1, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    after(CK_GATHER, "MPI_Gather_c, recv NULL,-1,NULL at non-roots");
    if (rank == root)
        for (int i = 0; i < N * size; i++) CHECK(g[i] == val(i / N, i % N), "MPI_Gather_c[%d] = %g", i, g[i]);
    free(g);
#endif

    /* Zero counts: every rank falls back alike (0 bytes). */
    for (int i = 0; i < 2 * N; i++) r[i] = -1.0;
    before(CK_SCATTER);
    if (rank == root) MPI_Scatter(s, 0, MPI_DOUBLE, r, 0, vec, root, MPI_COMM_WORLD);
    else MPI_Scatter(NULL, -1, MPI_DATATYPE_NULL, r, 0, MPI_DOUBLE, root, MPI_COMM_WORLD);
    after(CK_SCATTER, "scatter of 0 elements, send NULL,-1,NULL at non-roots");
    for (int i = 0; i < 2 * N; i++) CHECK(r[i] == -1.0, "empty scatter wrote element %d", i);
    free(s);
    free(r);
}

/* allgather: even ranks send one `cont`, odd ranks N doubles; odd ranks
 * receive into rvec. Then in place with NULL, -1, MPI_DATATYPE_NULL as the
 * (ignored) send side at every rank. */
static void test_allgather(void)
{
    double *s = dalloc(N, 0.0), *r = dalloc((size_t)(2 * N * size), -1.0);
    for (int i = 0; i < N; i++) s[i] = val(rank, i);
    const int odd = rank % 2;
    before(CK_ALLGATHER);
    MPI_Allgather(s, odd ? N : 1, odd ? MPI_DOUBLE : cont, r, odd ? 1 : N, odd ? rvec : MPI_DOUBLE, MPI_COMM_WORLD);
    after(CK_ALLGATHER, "allgather cont/contiguous/rvec");
    for (int q = 0; q < size; q++)
        for (int i = 0; i < N; i++) {
            double got = odd ? r[2 * N * q + 2 * i] : r[N * q + i];
            CHECK(got == val(q, i), "allgather block %d[%d] = %g", q, i, got);
        }
    for (int i = 0; i < N * size; i++) r[i] = (i / N == rank) ? val(rank, i % N) : -1.0;
    before(CK_ALLGATHER);
    MPI_Allgather(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, r, N, MPI_DOUBLE, MPI_COMM_WORLD);
    after(CK_ALLGATHER, "allgather in place, send NULL,-1,NULL");
    for (int i = 0; i < N * size; i++) CHECK(r[i] == val(i / N, i % N), "in-place allgather[%d] = %g", i, r[i]);
    free(s);
    free(r);
}

/* MPI_Reduce_scatter_block (the project's reduce_scatter), plain and in place. */
static void test_reduce_scatter(void)
{
    double *s = dalloc((size_t)(N * size), 0.0), *r = dalloc((size_t)(N * size), -1.0);
    for (int i = 0; i < N * size; i++) s[i] = val(rank, i);
    before(CK_REDUCE_SCATTER);
    MPI_Reduce_scatter_block(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    after(CK_REDUCE_SCATTER, "reduce_scatter_block");
    for (int i = 0; i < N; i++)
        CHECK(r[i] == tri() + size * (rank * N + i), "reduce_scatter[%d] = %g", i, r[i]);
    for (int i = 0; i < N * size; i++) r[i] = val(rank, i);
    before(CK_REDUCE_SCATTER);
    MPI_Reduce_scatter_block(MPI_IN_PLACE, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    after(CK_REDUCE_SCATTER, "reduce_scatter_block in place");
    for (int i = 0; i < N; i++)
        CHECK(r[i] == tri() + size * (rank * N + i), "in-place reduce_scatter[%d] = %g", i, r[i]);
    free(s);
    free(r);
}

static void test_allreduce(void)
{
    double s[N], r[N];
    for (int i = 0; i < N; i++) s[i] = val(rank, i), r[i] = -1.0;
    before(CK_ALLREDUCE);
    MPI_Allreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    after(CK_ALLREDUCE, "allreduce");
    for (int i = 0; i < N; i++) CHECK(r[i] == tri() + size * i, "allreduce[%d] = %g", i, r[i]);
    before(CK_ALLREDUCE);
    MPI_Allreduce(MPI_IN_PLACE, s, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    after(CK_ALLREDUCE, "allreduce in place");
    for (int i = 0; i < N; i++) CHECK(s[i] == tri() + size * i, "in-place allreduce[%d] = %g", i, s[i]);
}

/* alltoall: odd ranks send `cont`s and receive N doubles a block, even ranks
 * send N doubles a block and receive into rvec. Then in place with NULL, -1,
 * MPI_DATATYPE_NULL as the send side. Block j of rank q: 10000 q + 100 j + i. */
static double a2a(int q, int j, int i) { return 10000.0 * q + 100.0 * j + i; }

static void test_alltoall(void)
{
    double *s = dalloc((size_t)(N * size), 0.0), *r = dalloc((size_t)(2 * N * size), -1.0);
    for (int i = 0; i < N * size; i++) s[i] = a2a(rank, i / N, i % N);
    const int odd = rank % 2;
    before(CK_ALLTOALL);
    MPI_Alltoall(s, odd ? 1 : N, odd ? cont : MPI_DOUBLE, r, odd ? N : 1, odd ? MPI_DOUBLE : rvec, MPI_COMM_WORLD);
    after(CK_ALLTOALL, "alltoall cont/contiguous/rvec");
    for (int q = 0; q < size; q++)
        for (int i = 0; i < N; i++) {
            double got = odd ? r[N * q + i] : r[2 * N * q + 2 * i];
            CHECK(got == a2a(q, rank, i), "alltoall block %d[%d] = %g", q, i, got);
        }
    for (int i = 0; i < N * size; i++) r[i] = a2a(rank, i / N, i % N);
    before(CK_ALLTOALL);
    MPI_Alltoall(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, r, N, MPI_DOUBLE, MPI_COMM_WORLD);
    after(CK_ALLTOALL, "alltoall in place, send NULL,-1,NULL");
    for (int i = 0; i < N * size; i++) CHECK(r[i] == a2a(i / N, rank, i % N), "in-place alltoall[%d] = %g", i, r[i]);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    /* Run by hand without the sweep: the call on bine. */
    if (!getenv("COLLKIT_ALGORITHMS")) setenv("COLLKIT_ALGORITHMS", "scatter=bine,gather=binomial", 1);
    parse_forced(getenv("COLLKIT_ALGORITHMS"));
    MPI_Init(&argc, &argv);
    preload_check_begin(1);
    root = size - 1; /* not 0: a root-0 assumption shows */
    MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_create_resized(vec, 0, (MPI_Aint)(2 * N * sizeof(double)), &rvec);
    MPI_Type_commit(&rvec);
    MPI_Type_contiguous(N, MPI_DOUBLE, &cont);
    MPI_Type_commit(&cont);

    test_scatter();
    test_gather();
    test_bcast();
    test_reduce();
    test_allgather();
    test_reduce_scatter();
    test_allreduce();
    test_alltoall();

    /* Every rank decided alike on every call (1: algorithm, 0: fallback). */
    int lo[MAX_CALLS], hi[MAX_CALLS], n = ncalls;
    PMPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(n == ncalls, "ranks recorded %d and %d calls", n, ncalls);
    PMPI_Allreduce(decided, lo, n, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(decided, hi, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) CHECK(lo[i] == hi[i] && lo[i] >= 0, "call %d decided differently across ranks", i);
    int total = 0;
    PMPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("preload significance: %s (%d failures, %d calls)\n", total ? "FAIL" : "ok", total, n);
    MPI_Type_free(&cont);
    MPI_Type_free(&rvec);
    MPI_Type_free(&vec);
    MPI_Finalize();
    return total ? 1 : 0;
}
