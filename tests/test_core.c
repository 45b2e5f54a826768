/* Unit tests of lib/core: the shared math, argument checks and buffers. */
#include "ck_core.h"

#include <stdio.h>

#include "unit_check.h"

static void test_pow2(void)
{
    CHECK(ck_is_pow2(1) && ck_is_pow2(2) && ck_is_pow2(1024));
    CHECK(!ck_is_pow2(0) && !ck_is_pow2(3) && !ck_is_pow2(-4) && !ck_is_pow2(1023));
    int floors[][2] = {{1, 1}, {2, 2}, {3, 2}, {7, 4}, {8, 8}, {9, 8}, {1000, 512}, {0x7fffffff, 0x40000000}};
    for (size_t i = 0; i < sizeof floors / sizeof floors[0]; i++)
        CHECK(ck_pow2_floor(floors[i][0]) == floors[i][1]);
    int ceils[][2] = {{1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {17, 5}, {32, 5}, {33, 6}};
    for (size_t i = 0; i < sizeof ceils / sizeof ceils[0]; i++)
        CHECK(ck_log2_ceil(ceils[i][0]) == ceils[i][1]);
}

static void test_blocks(void)
{
    /* blocks tile [0, count) in order, sizes differ by at most one, bigger first */
    size_t counts[] = {0, 1, 2, 6, 7, 8, 9, 1009, 65536};
    int ps[] = {1, 2, 3, 7, 8, 13, 32};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
            size_t n = counts[ci], next = 0;
            int p = ps[pi], ok = 1;
            for (int b = 0; b < p; b++) {
                ok &= ck_block_offset(n, p, b) == next;
                size_t c = ck_block_count(n, p, b);
                ok &= c == n / (size_t)p || c == n / (size_t)p + 1;
                if (b > 0) ok &= c <= ck_block_count(n, p, b - 1);
                next += c;
            }
            ok &= next == n && ck_block_offset(n, p, p) == n;
            CHECK(ok);
        }
}

static void test_ranks(void)
{
    for (int p = 1; p <= 9; p++)
        for (int root = 0; root < p; root++)
            for (int r = 0; r < p; r++) {
                int rel = ck_rel_rank(r, root, p);
                CHECK(rel >= 0 && rel < p && ck_abs_rank(rel, root, p) == r);
                if (r == root) CHECK(rel == 0);
            }
}

static void test_args(void)
{
    int rank, size;
    CHECK(ck_check_args(MPI_COMM_WORLD, MPI_INT, 10, &rank, &size) == MPI_SUCCESS);
    CHECK(ck_check_args(MPI_COMM_NULL, MPI_INT, 10, &rank, &size) == MPI_ERR_COMM);
    CHECK(ck_check_args(MPI_COMM_WORLD, MPI_DATATYPE_NULL, 10, &rank, &size) == MPI_ERR_TYPE);
    CHECK(ck_check_args(MPI_COMM_WORLD, MPI_INT, CK_MAX_COUNT, &rank, &size) == MPI_SUCCESS);
    CHECK(ck_check_args(MPI_COMM_WORLD, MPI_INT, CK_MAX_COUNT + 1, &rank, &size) == MPI_ERR_COUNT);
    CHECK(ck_check_args(MPI_COMM_WORLD, MPI_INT, (size_t)-1, &rank, &size) == MPI_ERR_COUNT);
    CHECK(ck_check_root(0, 1) == MPI_SUCCESS && ck_check_root(1, 1) == MPI_ERR_ROOT);
    CHECK(ck_check_root(-1, 4) == MPI_ERR_ROOT);
    CHECK(ck_check_buf(NULL, 0, MPI_INT) == MPI_SUCCESS && ck_check_buf(NULL, 1, MPI_INT) == MPI_ERR_BUFFER);
    CHECK(ck_check_buf(MPI_IN_PLACE, 1, MPI_INT) == MPI_SUCCESS);
    /* MPI_BOTTOM (NULL) with a datatype of absolute addresses is a buffer. */
    int x[2];
    MPI_Aint addr;
    MPI_Datatype absolute;
    MPI_Get_address(x, &addr);
    MPI_Type_create_hindexed_block(1, 2, &addr, MPI_INT, &absolute);
    MPI_Type_commit(&absolute);
    CHECK(ck_check_buf(MPI_BOTTOM, 1, absolute) == MPI_SUCCESS);
    /* Predefined ops on derived datatypes are refused, user ops are not. */
    CHECK(ck_check_op_type(MPI_SUM, MPI_INT) == MPI_SUCCESS);
    CHECK(ck_check_op_type(MPI_SUM, absolute) == MPI_ERR_OP);
    CHECK(ck_check_op_type(MPI_MAXLOC, MPI_2INT) == MPI_SUCCESS);
    MPI_Type_free(&absolute);
    int comm = -1;
    CHECK(ck_check_op(MPI_SUM, 1, &comm) == MPI_SUCCESS && comm == 1);
    CHECK(ck_check_op(MPI_OP_NULL, 0, NULL) == MPI_ERR_OP);
}

/* The combined openings keep the precedence of the single checks. */
static void test_shape_checks(void)
{
    int rank, size, x = 0;
    CHECK(ck_check_bcast(NULL, 1, MPI_INT, 1, MPI_COMM_WORLD, &rank, &size) ==
          (size > 1 ? MPI_ERR_BUFFER : MPI_ERR_ROOT));
    CHECK(ck_check_gather(&x, NULL, 1, MPI_INT, 0, MPI_COMM_NULL, &rank, &size) == MPI_ERR_COMM);
    CHECK(ck_check_gather(NULL, NULL, 1, MPI_INT, -1, MPI_COMM_WORLD, &rank, &size) ==
          MPI_ERR_ROOT);
    CHECK(ck_check_gather(&x, NULL, 1, MPI_INT, 0, MPI_COMM_WORLD, &rank, &size) ==
          (rank == 0 ? MPI_ERR_BUFFER : MPI_SUCCESS));
    CHECK(ck_check_scatter(NULL, &x, 1, MPI_INT, 0, MPI_COMM_WORLD, &rank, &size) ==
          (rank == 0 ? MPI_ERR_BUFFER : MPI_SUCCESS));
    CHECK(ck_check_reduce(NULL, NULL, 1, MPI_INT, MPI_OP_NULL, 0, NULL, size, MPI_COMM_WORLD,
                          &rank, &size) == MPI_ERR_ROOT);
    CHECK(ck_check_reduce(NULL, NULL, 1, MPI_INT, MPI_OP_NULL, 0, NULL, 0, MPI_COMM_WORLD, &rank,
                          &size) == MPI_ERR_OP);
    CHECK(ck_check_allreduce(NULL, NULL, 1, MPI_DATATYPE_NULL, MPI_OP_NULL, 0, NULL, MPI_COMM_WORLD,
                             &rank, &size) == MPI_ERR_TYPE);
    CHECK(ck_check_allreduce(NULL, &x, 1, MPI_INT, MPI_OP_NULL, 0, NULL, MPI_COMM_WORLD, &rank,
                             &size) == MPI_ERR_OP);
    CHECK(ck_check_allreduce(NULL, &x, 1, MPI_INT, MPI_SUM, 1, NULL, MPI_COMM_WORLD, &rank, &size) ==
          MPI_ERR_BUFFER);
    CHECK(ck_check_exchange(&x, NULL, 1, MPI_INT, MPI_COMM_WORLD, &rank, &size) ==
          MPI_ERR_BUFFER);
}

/* The fold pairings: virtual ranks cover every rank once in rank order, a
 * dropped rank and its partner point at each other, the survivor plays. */
static void test_fold(void)
{
    const ck_fold_keep kinds[] = {CK_FOLD_KEEP_ODD, CK_FOLD_KEEP_EVEN, CK_FOLD_TAIL, CK_FOLD_HIGH};
    for (int p = 1; p <= 70; p++) {
        const int p2 = ck_pow2_floor(p), rem = ck_fold_rem(p);
        for (int kind = 0; kind < 4; kind++) {
            for (int root = 0; root < p; root += p > 4 ? p / 3 : 1) {
                int ok = 1, players = 0;
                for (int r = 0; r < p; r++) {
                    ck_fold f = ck_fold_of(r, root, p, kinds[kind]);
                    if (f.vrank >= 0) players++;
                    ok &= f.vrank < p2 && (f.vrank >= 0 || f.partner >= 0);
                    if (f.partner >= 0) {
                        ck_fold g = ck_fold_of(f.partner, root, p, kinds[kind]);
                        ok &= g.partner == r && (g.vrank < 0) != (f.vrank < 0);
                    }
                    if (kinds[kind] <= CK_FOLD_KEEP_EVEN && f.vrank >= 0) {
                        int rel = ck_rel_rank(r, root, p);
                        ok &= ck_fold_real(f.vrank, rem, kinds[kind]) == rel &&
                              ck_fold_owner(rel, rem) == f.vrank &&
                              rel - ck_fold_first(f.vrank, rem) <
                                  ck_fold_width(f.vrank, rem);
                    }
                    if (kinds[kind] == CK_FOLD_TAIL && f.vrank >= 0)
                        ok &= ck_fold_tail_real(f.vrank, p2 - rem) == ck_rel_rank(r, root, p);
                }
                CHECK(ok && players == p2);
            }
        }
    }
    /* MPICH's pairing keeps the odd rank, Bine's the even one. */
    CHECK(ck_fold_vrank(0, 2, CK_FOLD_KEEP_ODD) == -1 &&
          ck_fold_vrank(1, 2, CK_FOLD_KEEP_ODD) == 0);
    CHECK(ck_fold_vrank(0, 2, CK_FOLD_KEEP_EVEN) == 0 &&
          ck_fold_vrank(1, 2, CK_FOLD_KEEP_EVEN) == -1);
    CHECK(ck_fold_real(1, 2, CK_FOLD_KEEP_ODD) == 3 && ck_fold_real(1, 2, CK_FOLD_KEEP_EVEN) == 2);
    CHECK(ck_fold_real(2, 2, CK_FOLD_KEEP_ODD) == 4 && ck_fold_real(2, 2, CK_FOLD_KEEP_EVEN) == 4);
}

static void first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] = ((int *)in)[i];
}

static void test_ops(void)
{
    MPI_Op op;
    MPI_Op_create(first, 0, &op);
    int comm = -1;
    CHECK(ck_check_op(op, 0, &comm) == MPI_SUCCESS && comm == 0);
    CHECK(ck_check_op(op, 1, NULL) == MPI_ERR_OP);
    /* reduce_local keeps MPI's order: inout = in (op) inout */
    int in[3] = {1, 2, 3}, inout[3] = {7, 8, 9};
    CHECK(ck_reduce_local(in, inout, 3, MPI_INT, op) == MPI_SUCCESS);
    CHECK(inout[0] == 1 && inout[1] == 2 && inout[2] == 3);
    MPI_Op_free(&op);
}

static void test_buffers(void)
{
    /* a strided type with a gap: every other int of pairs, lb shifted */
    MPI_Datatype vec, shifted;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, -(MPI_Aint)sizeof(int), 4 * (MPI_Aint)sizeof(int), &shifted);
    MPI_Type_commit(&shifted);
    ck_tmp t = {0};
    CHECK(ck_tmp_alloc(&t, 5, shifted) == MPI_SUCCESS && t.buf != NULL);
    int src[20], dst[20];
    for (int i = 0; i < 20; i++) src[i] = i, dst[i] = -1;
    /* with lb = -1 int, element 0 starts one int before the pointer */
    CHECK(ck_copy(src + 1, dst + 1, 4, shifted) == MPI_SUCCESS);
    int ok = 1;
    for (int e = 0; e < 4; e++) {
        int base = 1 + 4 * e;
        ok &= dst[base] == base && dst[base + 2] == base + 2;
        ok &= dst[base + 1] == -1;
    }
    CHECK(ok);
    /* the temporary holds the same layout */
    CHECK(ck_copy(src + 1, t.buf, 4, shifted) == MPI_SUCCESS);
    ck_tmp_free(&t);
    ck_tmp_free(&t); /* freeing twice is safe */
    CHECK(t.mem == NULL);
    int a[4] = {1, 2, 3, 4}, b[4] = {0};
    CHECK(ck_copy(a, b, 4, MPI_INT) == MPI_SUCCESS && b[3] == 4);
    CHECK(ck_copy(a, b, CK_MAX_COUNT + 1, MPI_INT) == MPI_ERR_COUNT);
    MPI_Type_free(&shifted);
    MPI_Type_free(&vec);
}

static void test_registry(void)
{
    size_t n = ck_algorithm_count();
    CHECK(n > 0 && ck_algorithm_at(n) == NULL);
    for (size_t i = 0; i < n; i++) {
        const ck_algorithm *a = ck_algorithm_at(i);
        CHECK(ck_algorithm_find(a->collective, a->name) == a);
        CHECK(a->description[0] && a->origin[0] && a->fn.bcast != NULL);
        for (size_t j = 0; j < i; j++) {
            const ck_algorithm *b = ck_algorithm_at(j);
            CHECK(!(b->collective == a->collective && strcmp(a->name, b->name) == 0));
        }
    }
    ck_collective c;
    CHECK(ck_collective_parse("reduce_scatter", &c) == 0 && c == CK_REDUCE_SCATTER);
    CHECK(ck_collective_parse("allgatherv", &c) == -1);
    CHECK(ck_algorithm_find(CK_BCAST, "no_such") == NULL);
    CHECK(ck_algorithm_find(CK_NUM_COLLECTIVES, "linear") == NULL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    test_pow2();
    test_blocks();
    test_ranks();
    test_args();
    test_shape_checks();
    test_fold();
    test_ops();
    test_buffers();
    test_registry();
    printf("%d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
