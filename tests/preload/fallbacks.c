/* Run under libcollkit-preload (LD_PRELOAD): every fallback reason of the
 * shim, each shown taken (the shim's counters, looked up with dlsym) and the
 * result correct; plus the paths that must NOT fall back: MPI_IN_PLACE,
 * non-contiguous types mixed with contiguous ones across ranks, and the
 * helper communicator that keeps algorithm messages away from the program's
 * own pending receives; communicator handles reused. Sets COLLKIT_ALGORITHMS itself, before MPI_Init. */
#define _POSIX_C_SOURCE 200809L
#include "preload_check.h"

#include <collkit/collkit.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first algorithm with a constraint the shim cannot check, if any. */
static const ck_algorithm *unchecked_constraint(void)
{
    for (size_t i = 0; i < ck_algorithm_count(); i++) {
        const ck_algorithm *a = ck_algorithm_at(i);
        if (a->constraints & 0xffu & ~(unsigned)(CK_REQUIRES_COMMUTATIVE | CK_REQUIRES_POW2_RANKS))
            return a;
    }
    return NULL;
}

static void first_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, (size_t)*len * sizeof(int)); /* a op b = a: rank 0 wins */
}

static void pair_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < 2 * *len; i++) b[i] += a[i];
}

static void test_forced_and_in_place(int k_allreduce)
{
    int in[10], out[10];
    for (int i = 0; i < 10; i++) in[i] = rank * 100 + i;
    long before = calls_fn(CK_ALLREDUCE, k_allreduce);
    MPI_Allreduce(in, out, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, in, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 10; i++) {
        int want = 100 * size * (size - 1) / 2 + size * i;
        CHECK(out[i] == want && in[i] == want, "allreduce[%d] = %d / %d, want %d", i, out[i], in[i], want);
    }
    CHECK(calls_fn(CK_ALLREDUCE, k_allreduce) == before + 2, "allreduce did not run the forced algorithm");
}

static void test_intercomm(void)
{
    if (size < 2) return;
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter);
    long before = fallbacks_fn(CK_ALLREDUCE, CKP_FB_INTERCOMM);
    int v = rank, sum = -1, want = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, inter);
    for (int r = 0; r < size; r++)
        if (r % 2 != rank % 2) want += r; /* the remote group's values */
    CHECK(sum == want, "intercomm allreduce = %d, want %d", sum, want);
    CHECK(fallbacks_fn(CK_ALLREDUCE, CKP_FB_INTERCOMM) == before + 1, "no intercommunicator fallback");
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

static void test_datatype_and_op(void)
{
    MPI_Datatype pair;
    MPI_Op psum, first;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op_create(pair_sum, 1, &psum);
    MPI_Op_create(first_op, 0, &first);

    int in[6], out[6];
    for (int i = 0; i < 6; i++) in[i] = rank + i;
    long before = fallbacks_fn(CK_ALLREDUCE, CKP_FB_DATATYPE);
    MPI_Allreduce(in, out, 3, pair, psum, MPI_COMM_WORLD);
    for (int i = 0; i < 6; i++)
        CHECK(out[i] == size * (size - 1) / 2 + size * i, "derived-type allreduce[%d] = %d", i, out[i]);
    CHECK(fallbacks_fn(CK_ALLREDUCE, CKP_FB_DATATYPE) == before + 1, "no datatype fallback");

    before = fallbacks_fn(CK_ALLREDUCE, CKP_FB_OP);
    MPI_Allreduce(in, out, 6, MPI_INT, first, MPI_COMM_WORLD);
    for (int i = 0; i < 6; i++) CHECK(out[i] == i, "non-commutative allreduce[%d] = %d, want rank 0's %d", i, out[i], i);
    CHECK(fallbacks_fn(CK_ALLREDUCE, CKP_FB_OP) == before + 1, "no op fallback");

    long rbefore = fallbacks_fn(CK_REDUCE, CKP_FB_OP);
    int red[6] = {0};
    MPI_Reduce(in, red, 6, MPI_INT, first, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1)
        for (int i = 0; i < 6; i++) CHECK(red[i] == i, "non-commutative reduce[%d] = %d", i, red[i]);
    CHECK(fallbacks_fn(CK_REDUCE, CKP_FB_OP) == rbefore + 1, "no reduce op fallback");

    MPI_Op_free(&first);
    MPI_Op_free(&psum);
    MPI_Type_free(&pair);
}

static void test_count_and_root(void)
{
    int x = 5;
    long before = fallbacks_fn(CK_BCAST, CKP_FB_COUNT);
    MPI_Bcast(&x, 0, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(x == 5, "empty bcast changed the buffer");
    CHECK(fallbacks_fn(CK_BCAST, CKP_FB_COUNT) == before + 1, "no count fallback");

    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    before = fallbacks_fn(CK_BCAST, CKP_FB_ROOT);
    int rc = MPI_Bcast(&x, 1, MPI_INT, size, c);
    CHECK(rc != MPI_SUCCESS, "bcast with root %d returned success", size);
    CHECK(fallbacks_fn(CK_BCAST, CKP_FB_ROOT) == before + 1, "no root fallback");
    MPI_Comm_free(&c);
}

/* A registry constraint the shim cannot evaluate (today alltoall's fat-tree
 * algorithm) or a power-of-two algorithm at another p: the library runs. */
static void test_constraint(const ck_algorithm *a)
{
    if (!a || a->collective != CK_ALLTOALL) return;
    int reason = (a->constraints & ~(unsigned)CK_REQUIRES_POW2_RANKS & 0xffu) ? CKP_FB_CONSTRAINT : CKP_FB_RANKS;
    if (reason == CKP_FB_RANKS && (size & (size - 1)) == 0) return;
    long before = fallbacks_fn(CK_ALLTOALL, reason);
    int *s = malloc(sizeof(int) * (size_t)size), *r = malloc(sizeof(int) * (size_t)size);
    if (!s || !r) {
        CHECK(0, "out of memory");
        free(s);
        free(r);
        return;
    }
    for (int i = 0; i < size; i++) s[i] = rank * 1000 + i;
    MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) CHECK(r[i] == i * 1000 + rank, "constrained alltoall[%d] = %d", i, r[i]);
    CHECK(fallbacks_fn(CK_ALLTOALL, reason) == before + 1, "no constraint fallback for %s", a->name);
    free(s);
    free(r);
}

/* Gather and allgather with a strided type on odd ranks, contiguous on even
 * ones: the bytes moved must agree, and nothing falls back. */
static void test_noncontiguous(int k_gather, int k_allgather)
{
    MPI_Datatype strided;
    MPI_Type_vector(3, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    int src[6], *all = calloc((size_t)size * 3, sizeof(int)), *all2 = calloc((size_t)size * 6, sizeof(int));
    if (!all || !all2) {
        CHECK(0, "out of memory");
        free(all);
        free(all2);
        MPI_Type_free(&strided);
        return;
    }
    for (int i = 0; i < 6; i++) src[i] = (i % 2) ? -1 : rank * 10 + i / 2;
    int packed[3] = {rank * 10, rank * 10 + 1, rank * 10 + 2};
    const int odd = rank % 2;
    long g0 = calls_fn(CK_GATHER, k_gather), a0 = calls_fn(CK_ALLGATHER, k_allgather);
    MPI_Gather(odd ? (void *)src : (void *)packed, odd ? 1 : 3, odd ? strided : MPI_INT, all, 3, MPI_INT, 0,
               MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < 3 * size; i++) CHECK(all[i] == (i / 3) * 10 + i % 3, "gather[%d] = %d", i, all[i]);
    /* Receive side strided on even ranks: block r (extent 5 ints) at every other int. */
    for (int i = 0; i < 6 * size; i++) all2[i] = -7;
    if (odd) MPI_Allgather(packed, 3, MPI_INT, all2, 3, MPI_INT, MPI_COMM_WORLD);
    else MPI_Allgather(packed, 3, MPI_INT, all2, 1, strided, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int j = 0; j < 3; j++) {
            int got = odd ? all2[3 * r + j] : all2[5 * r + 2 * j];
            CHECK(got == r * 10 + j, "allgather block %d[%d] = %d", r, j, got);
        }
    CHECK(calls_fn(CK_GATHER, k_gather) == g0 + 1, "gather did not run on collkit");
    CHECK(calls_fn(CK_ALLGATHER, k_allgather) == a0 + 1, "allgather did not run on collkit");
    free(all);
    free(all2);
    MPI_Type_free(&strided);
}

/* A receive the program posted with wildcards before a collkit collective
 * must still get the program's message, not an algorithm's. */
static void test_private_messages(void)
{
    if (size < 2) return;
    int got = -1, marker = 4242;
    MPI_Request req = MPI_REQUEST_NULL;
    if (rank == 0) MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
    int v[64], w[64];
    for (int i = 0; i < 64; i++) v[i] = rank;
    MPI_Allreduce(v, w, 64, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Alltoall(v, 1, MPI_INT, w, 1, MPI_INT, MPI_COMM_WORLD);
    if (rank == 1) MPI_Send(&marker, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Status st;
        MPI_Wait(&req, &st);
        CHECK(got == marker && st.MPI_SOURCE == 1 && st.MPI_TAG == 3, "wildcard receive got %d from %d tag %d",
              got, st.MPI_SOURCE, st.MPI_TAG);
    }
}

static void test_alltoall_in_place(void)
{
    int *b = malloc(sizeof(int) * 2 * (size_t)size);
    if (!b) {
        CHECK(0, "out of memory");
        return;
    }
    for (int i = 0; i < 2 * size; i++) b[i] = rank * 1000 + i;
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, 2, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int j = 0; j < 2; j++)
            CHECK(b[2 * r + j] == r * 1000 + 2 * rank + j, "in-place alltoall[%d]", 2 * r + j);
    free(b);
}

/* In-place reduce_scatter_block: block 0 gets the result, the rest of the
 * buffer stays as it was (Open MPI and MPICH keep it; mpi4py tests it). */
static void test_reduce_scatter_in_place(int k)
{
    const int n = 3;
    int *b = malloc(sizeof(int) * (size_t)(n * size));
    if (!b) {
        CHECK(0, "out of memory");
        return;
    }
    for (int i = 0; i < n * size; i++) b[i] = rank + i;
    long before = calls_fn(CK_REDUCE_SCATTER, k);
    MPI_Reduce_scatter_block(MPI_IN_PLACE, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        CHECK(b[i] == size * (size - 1) / 2 + size * (rank * n + i), "in-place reduce_scatter[%d] = %d", i, b[i]);
    for (int i = n; i < n * size; i++)
        CHECK(b[i] == rank + i, "in-place reduce_scatter changed element %d past the result", i);
    CHECK(calls_fn(CK_REDUCE_SCATTER, k) == before + 1, "reduce_scatter did not run on collkit");
    free(b);
}

/* Communicators of changing sizes made and freed in turn: MPICH hands a freed
 * handle to the next communicator, and the shim's per-handle memo
 * (shared.c) must never give the new one the old one's size and rank. */
static void test_handles_reused(int k_allreduce)
{
    long before = calls_fn(CK_ALLREDUCE, k_allreduce);
    for (int iter = 0; iter < 40; iter++) {
        const int k = 1 + iter % 3;
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_WORLD, rank % k, rank, &c);
        int in = rank, out = -1, want = 0;
        for (int r = rank % k; r < size; r += k) want += r;
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, c);
        CHECK(out == want, "iteration %d, split by %d: allreduce %d, want %d", iter, k, out, want);
        int w = -1;
        MPI_Allreduce(&in, &w, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(w == size * (size - 1) / 2, "iteration %d: world allreduce %d", iter, w);
        MPI_Comm_free(&c);
    }
    CHECK(calls_fn(CK_ALLREDUCE, k_allreduce) >= before + 40, "rabenseifner not run on the split communicators");
}

int main(int argc, char **argv)
{
    const ck_algorithm *constrained = unchecked_constraint();
    char spec[512];
    snprintf(spec, sizeof spec,
             "allreduce=rabenseifner,reduce=rabenseifner,bcast=binomial_doubling,gather=binomial,"
             "allgather=ring,reduce_scatter=swing,alltoall=%s",
             constrained && constrained->collective == CK_ALLTOALL ? constrained->name : "bruck");
    setenv("COLLKIT_ALGORITHMS", spec, 1);
    MPI_Init(&argc, &argv);
    preload_check_begin(1);
    test_forced_and_in_place(alg_index(CK_ALLREDUCE, "rabenseifner"));
    test_intercomm();
    test_datatype_and_op();
    test_count_and_root();
    test_noncontiguous(alg_index(CK_GATHER, "binomial"), alg_index(CK_ALLGATHER, "ring"));
    test_private_messages();
    test_alltoall_in_place();
    test_reduce_scatter_in_place(alg_index(CK_REDUCE_SCATTER, "swing"));
    test_constraint(constrained);
    test_handles_reused(alg_index(CK_ALLREDUCE, "rabenseifner"));
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("preload fallbacks: %s (%d failures)\n", total ? "FAIL" : "ok", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
