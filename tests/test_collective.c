/*
 * Unit tests of the collective descriptors and the datatype table
 * (collkit.h): every tool sizes its buffers and calls algorithms through
 * them, so a wrong field would mislead all of them at once. The expectations
 * below are written from the MPI standard, not derived from the descriptors.
 *
 * Run under MPI at any size (the build runs it at 1 and 4 ranks): the table
 * checks are local; the call checks run every registry algorithm through
 * ck_algorithm_call and the library through ck_library_call on a small input
 * and compare both with the result the standard prescribes.
 */
#include <collkit/collkit.h>
#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_check.h"

/* ---------------------------------------------------------------- buffer sizes */

/* Per collective, in elements for a block count n at p ranks ('0': none,
 * 'N': n, 'P': p*n), three letters "send recv result" for each of: the root,
 * the root with MPI_IN_PLACE, another rank, another rank asking for
 * MPI_IN_PLACE (only the root may use it in rooted collectives). A collective
 * without a root has the same four at every rank. */
static const struct {
    const char *name;
    const char *sizes[4];
} sizes[] = {
    {"bcast", {"0NN", "0NN", "0NN", "0NN"}},
    {"reduce", {"NNN", "0NN", "N00", "N00"}},
    {"gather", {"NPP", "0PP", "N00", "N00"}},
    {"scatter", {"PNN", "P0N", "0NN", "0NN"}},
    {"allgather", {"NPP", "0PP", "NPP", "0PP"}},
    {"reduce_scatter", {"PNN", "0PN", "PNN", "0PN"}},
    {"allreduce", {"NNN", "0NN", "NNN", "0NN"}},
    {"alltoall", {"PPP", "0PP", "PPP", "0PP"}},
};
#define NCOLLS (sizeof sizes / sizeof sizes[0])

static size_t letter_elems(char c, size_t n, int p)
{
    return c == 'N' ? n : c == 'P' ? (size_t)p * n : 0;
}

static void test_sizes(void)
{
    CHECK(NCOLLS == CK_NUM_COLLECTIVES);
    const int ps[] = {1, 2, 4, 7, 16};
    const size_t ns[] = {0, 1, 3, 1000};
    for (size_t ci = 0; ci < NCOLLS; ci++) {
        ck_collective c;
        CHECK(ck_collective_parse(sizes[ci].name, &c) == 0);
        const ck_collective_desc *d = ck_collective_describe(c);
        CHECK(d != NULL);
        if (d == NULL) continue;
        for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++)
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                const int p = ps[pi], root = p - 1;
                const size_t n = ns[ni];
                for (int role = 0; role < 4; role++) {
                    const int other = role >= 2, in_place = role % 2;
                    if (other && p == 1) continue;
                    const int rank = other ? (root + 1) % p : root;
                    const char *e = sizes[ci].sizes[role];
                    size_t s = ck_collective_send_elems(d, n, p, rank, root, in_place);
                    size_t r = ck_collective_recv_elems(d, n, p, rank, root, in_place);
                    size_t res = ck_collective_result_elems(d, n, p, rank, root);
                    if (s != letter_elems(e[0], n, p) || r != letter_elems(e[1], n, p) ||
                        res != letter_elems(e[2], n, p)) {
                        failed++;
                        fprintf(stderr,
                                "%s p=%d n=%zu rank=%d root=%d in_place=%d: send/recv/result "
                                "%zu/%zu/%zu, expected %s\n",
                                d->name, p, n, rank, root, in_place, s, r, res, e);
                    } else {
                        passed++;
                    }
                    /* in_place_at: only where MPI allows it, and only at the root of a
                     * rooted collective. */
                    int expect_ip = in_place && c != CK_BCAST && !(other && d->has_root);
                    CHECK(ck_collective_in_place_at(d, in_place, rank, root) == expect_ip);
                }
            }
    }
}

/* ---------------------------------------------------------------- traits */

/* Written from the MPI standard and nccl-tests' PERFORMANCE.md: the bus
 * bandwidth factor is busbw_a + busbw_b * (p-1)/p. */
static const struct {
    const char *name, *mpi_name;
    int has_root, has_op, per_block;
    ck_in_place_kind in_place;
    int replicated, from_root, result_is_own_block;
    double busbw_a, busbw_b;
} traits[] = {
    {"bcast", "MPI_Bcast", 1, 0, 0, CK_IN_PLACE_NONE, 1, 1, 0, 1, 0},
    {"reduce", "MPI_Reduce", 1, 1, 0, CK_IN_PLACE_SEND, 0, 0, 0, 1, 0},
    {"gather", "MPI_Gather", 1, 0, 1, CK_IN_PLACE_SEND, 0, 0, 0, 0, 1},
    {"scatter", "MPI_Scatter", 1, 0, 1, CK_IN_PLACE_RECV, 0, 1, 0, 0, 1},
    {"allgather", "MPI_Allgather", 0, 0, 1, CK_IN_PLACE_SEND, 1, 0, 0, 0, 1},
    {"reduce_scatter", "MPI_Reduce_scatter_block", 0, 1, 1, CK_IN_PLACE_SEND, 0, 0, 1, 0, 1},
    {"allreduce", "MPI_Allreduce", 0, 1, 0, CK_IN_PLACE_SEND, 1, 0, 0, 0, 2},
    {"alltoall", "MPI_Alltoall", 0, 0, 1, CK_IN_PLACE_SEND, 0, 0, 0, 0, 1},
};

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * (fabs(b) + 1.0); }

static void test_traits(void)
{
    CHECK(sizeof traits / sizeof *traits == CK_NUM_COLLECTIVES);
    for (size_t i = 0; i < sizeof traits / sizeof *traits; i++) {
        ck_collective c;
        if (ck_collective_parse(traits[i].name, &c) != 0) {
            CHECK(!"collective name parses");
            continue;
        }
        const ck_collective_desc *d = ck_collective_describe(c);
        CHECK(d->id == c && strcmp(d->name, traits[i].name) == 0);
        CHECK(strcmp(d->mpi_name, traits[i].mpi_name) == 0);
        CHECK(d->has_root == traits[i].has_root && ck_collective_has_root(c) == d->has_root);
        CHECK(d->has_op == traits[i].has_op && ck_collective_has_op(c) == d->has_op);
        CHECK(d->per_block == traits[i].per_block);
        CHECK(d->in_place == traits[i].in_place);
        CHECK(!!d->replicated == traits[i].replicated);
        CHECK(!!d->from_root == traits[i].from_root);
        CHECK(!!d->result_is_own_block == traits[i].result_is_own_block);
        CHECK(d->call != NULL && d->library_call != NULL && d->pmpi_call != NULL);
        const int ps[] = {1, 2, 4, 7, 64};
        for (size_t k = 0; k < sizeof ps / sizeof *ps; k++) {
            const int p = ps[k];
            double expect = traits[i].busbw_a + traits[i].busbw_b * (p - 1) / (double)p;
            CHECK(near(ck_collective_busbw_factor(d, p), expect));
            CHECK(near(ck_collective_vector_bytes(d, 1024.0, p),
                       traits[i].per_block ? 1024.0 * p : 1024.0));
        }
    }
    /* Spot values as nccl-tests prints them. */
    const ck_collective_desc *ar = ck_collective_describe(CK_ALLREDUCE);
    CHECK(near(ck_collective_busbw_factor(ar, 4), 1.5));
    CHECK(near(ck_collective_busbw_factor(ck_collective_describe(CK_ALLGATHER), 8), 0.875));
    CHECK(near(ck_collective_busbw_factor(ck_collective_describe(CK_BCAST), 8), 1.0));
    CHECK(ck_collective_busbw_factor(ar, 0) == 0.0);
}

/* ---------------------------------------------------------------- names */

static void test_names(void)
{
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) {
        const char *name = ck_collective_name((ck_collective)c);
        ck_collective back = CK_NUM_COLLECTIVES;
        CHECK(name != NULL && ck_collective_parse(name, &back) == 0 && back == (ck_collective)c);
        CHECK(ck_collective_describe((ck_collective)c)->id == (ck_collective)c);
    }
    ck_collective out = CK_BCAST;
    CHECK(ck_collective_parse("Allreduce", &out) == -1);
    CHECK(ck_collective_parse("allreduce ", &out) == -1);
    CHECK(ck_collective_parse("", &out) == -1);
    CHECK(ck_collective_parse(NULL, &out) == -1);
    CHECK(out == CK_BCAST); /* untouched on failure */
    CHECK(ck_collective_name(CK_NUM_COLLECTIVES) == NULL);
    CHECK(ck_collective_describe(CK_NUM_COLLECTIVES) == NULL);
    CHECK(ck_collective_describe((ck_collective)-1) == NULL);
    CHECK(!ck_collective_has_root(CK_NUM_COLLECTIVES) && !ck_collective_has_op(CK_NUM_COLLECTIVES));
}

/* ---------------------------------------------------------------- datatypes */

static void test_datatypes(void)
{
    static const struct {
        const char *name;
        size_t size;
        int is_float;
    } expect[] = {{"int8", 1, 0}, {"int32", 4, 0}, {"int64", 8, 0}, {"float", 4, 1},
                  {"double", 8, 1}};
    const size_t n = sizeof expect / sizeof *expect;
    CHECK(ck_datatype_count() == n);
    for (size_t i = 0; i < n; i++) {
        const ck_datatype_desc *d = ck_datatype_find(expect[i].name);
        CHECK(d != NULL && d == ck_datatype_at(i));
        if (d == NULL) continue;
        CHECK(d->size == expect[i].size && !!d->is_float == expect[i].is_float);
        int mpi_size = -1;
        CHECK(MPI_Type_size(ck_datatype_mpi(d), &mpi_size) == MPI_SUCCESS &&
              mpi_size == (int)d->size);
    }
    CHECK(ck_datatype_at(n) == NULL);
    CHECK(ck_datatype_find("int16") == NULL && ck_datatype_find("Float") == NULL);
    CHECK(ck_datatype_find(NULL) == NULL);
    const ck_datatype_desc other = {"int8", 1, 0}; /* not an entry of the table */
    CHECK(ck_datatype_mpi(&other) == MPI_DATATYPE_NULL);
}

/* ---------------------------------------------------------------- calls */

/* Input element i of rank r: distinct across ranks and positions, small
 * enough that sums over a few ranks stay exact in int32. */
static int input(int r, size_t i) { return 1000 * (r + 1) + (int)i; }

static int sum_over_ranks(int p, size_t i)
{
    int s = 0;
    for (int q = 0; q < p; q++) s += input(q, i);
    return s;
}

/* What the standard says rank `rank` holds after the collective, element i
 * of its result; the test's own oracle, independent of the descriptors. */
static int expected(ck_collective c, int p, int rank, int root, size_t n, size_t i)
{
    const size_t b = n ? i / n : 0, j = n ? i % n : 0;
    switch (c) {
    case CK_BCAST: return input(root, i);
    case CK_REDUCE: return sum_over_ranks(p, i);
    case CK_GATHER:
    case CK_ALLGATHER: return input((int)b, j);
    case CK_SCATTER: return input(root, (size_t)rank * n + i);
    case CK_REDUCE_SCATTER: return sum_over_ranks(p, (size_t)rank * n + i);
    case CK_ALLREDUCE: return sum_over_ranks(p, i);
    case CK_ALLTOALL: return input((int)b, (size_t)rank * n + j);
    default: return -1;
    }
}

/* ---------------------------------------------------------------- MPI's arguments */

/* ck_mpi_roles_of at p = 4, root 1, scount 2 and rcount 3 (3 and 3 for the
 * reductions, whose two counts are one), for the root, the root in place and
 * a non-root (the collectives without a root: not in place, in place):
 * send elements, receive elements, rbuf holds input, rbuf takes a result,
 * the block is read on the send side. Written from the MPI standard. */
static const struct {
    ck_collective c;
    int rank, in_place;
    size_t send, recv;
    int in, out, from_send;
} roles[] = {
    {CK_BCAST, 1, 0, 0, 3, 1, 0, 0},          {CK_BCAST, 2, 0, 0, 3, 0, 1, 0},
    {CK_REDUCE, 1, 0, 3, 3, 0, 1, 0},         {CK_REDUCE, 1, 1, 0, 3, 1, 1, 0},
    {CK_REDUCE, 2, 0, 3, 0, 0, 0, 1},         {CK_GATHER, 1, 0, 2, 12, 0, 1, 0},
    {CK_GATHER, 1, 1, 0, 12, 1, 1, 0},        {CK_GATHER, 2, 0, 2, 0, 0, 0, 1},
    {CK_SCATTER, 1, 0, 8, 3, 0, 1, 0},        {CK_SCATTER, 1, 1, 8, 0, 0, 0, 1},
    {CK_SCATTER, 2, 0, 0, 3, 0, 1, 0},        {CK_ALLGATHER, 2, 0, 2, 12, 0, 1, 0},
    {CK_ALLGATHER, 2, 1, 0, 12, 1, 1, 0},     {CK_REDUCE_SCATTER, 2, 0, 12, 3, 0, 1, 0},
    {CK_REDUCE_SCATTER, 2, 1, 0, 12, 1, 1, 0}, {CK_ALLREDUCE, 2, 0, 3, 3, 0, 1, 0},
    {CK_ALLREDUCE, 2, 1, 0, 3, 1, 1, 0},      {CK_ALLTOALL, 2, 0, 8, 12, 0, 1, 0},
    {CK_ALLTOALL, 2, 1, 0, 12, 1, 1, 0},
};

static void test_mpi_roles(void)
{
    char sb[1], rb[1];
    for (size_t i = 0; i < sizeof roles / sizeof *roles; i++) {
        const ck_collective c = roles[i].c;
        const int red = ck_collective_has_op(c);
        ck_mpi_args m = {sb, red ? 3 : 2, MPI_INT, rb, 3, MPI_INT, MPI_SUM, 1, MPI_COMM_WORLD};
        if (roles[i].in_place && c == CK_SCATTER) m.rbuf = MPI_IN_PLACE;
        else if (roles[i].in_place) m.sbuf = MPI_IN_PLACE;
        ck_mpi_roles r;
        CHECK(ck_mpi_roles_of(c, &m, 4, roles[i].rank, &r) == 0);
        if (r.send_elems != roles[i].send || r.recv_elems != roles[i].recv ||
            r.recv_in != roles[i].in || r.recv_out != roles[i].out ||
            r.block_from_send != roles[i].from_send) {
            fprintf(stderr, "roles of %s rank %d in_place %d: %zu %zu %d %d %d\n",
                    ck_collective_name(c), roles[i].rank, roles[i].in_place, r.send_elems,
                    r.recv_elems, r.recv_in, r.recv_out, r.block_from_send);
            CHECK(!"ck_mpi_roles_of matches the standard");
        }
    }
    /* A count of 0 still reads the block on the side that is significant. */
    ck_mpi_args z = {NULL, 0, MPI_DATATYPE_NULL, rb, 0, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD};
    ck_mpi_roles r;
    CHECK(ck_mpi_roles_of(CK_BCAST, &z, 4, 2, &r) == 0 && !r.block_from_send && r.recv_elems == 0);
    z.rcount = -1;
    CHECK(ck_mpi_roles_of(CK_BCAST, &z, 4, 2, &r) == -1);
    z.rcount = 1;
    CHECK(ck_mpi_roles_of(CK_NUM_COLLECTIVES, &z, 4, 0, &r) == -1);
    /* Issue #32: a side that is not significant at a rank may be NULL, -1,
     * MPI_DATATYPE_NULL; only the significant counts are validated, and the
     * ignored ones never reach the roles. p = 4, root 1. */
    const ck_mpi_args scat = {NULL, -1, MPI_DATATYPE_NULL, rb, 3, MPI_INT, MPI_OP_NULL, 1, MPI_COMM_WORLD};
    CHECK(ck_mpi_roles_of(CK_SCATTER, &scat, 4, 2, &r) == 0 && r.send_elems == 0 && r.recv_elems == 3 &&
          !r.block_from_send);
    CHECK(ck_mpi_roles_of(CK_SCATTER, &scat, 4, 1, &r) == -1); /* the root's send count is read */
    const ck_mpi_args scat_ip = {sb, 2, MPI_INT, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, MPI_OP_NULL, 1,
                                 MPI_COMM_WORLD};
    CHECK(ck_mpi_roles_of(CK_SCATTER, &scat_ip, 4, 1, &r) == 0 && r.send_elems == 8 && r.recv_elems == 0 &&
          r.block_from_send);
    const ck_mpi_args gath = {sb, 2, MPI_INT, NULL, -1, MPI_DATATYPE_NULL, MPI_OP_NULL, 1, MPI_COMM_WORLD};
    CHECK(ck_mpi_roles_of(CK_GATHER, &gath, 4, 2, &r) == 0 && r.send_elems == 2 && r.recv_elems == 0 &&
          r.block_from_send);
    CHECK(ck_mpi_roles_of(CK_GATHER, &gath, 4, 1, &r) == -1); /* the root's receive count is read */
    const ck_mpi_args gath_ip = {MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, 2, MPI_INT, MPI_OP_NULL, 1,
                                 MPI_COMM_WORLD};
    CHECK(ck_mpi_roles_of(CK_GATHER, &gath_ip, 4, 1, &r) == 0 && r.send_elems == 0 && r.recv_elems == 8 &&
          r.recv_in && r.recv_out && !r.block_from_send);
    const ck_mpi_args a2a_ip = {MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, 2, MPI_INT, MPI_OP_NULL, 0,
                                MPI_COMM_WORLD};
    CHECK(ck_mpi_roles_of(CK_ALLTOALL, &a2a_ip, 4, 3, &r) == 0 && r.recv_elems == 8 && r.recv_in);
    CHECK(ck_mpi_roles_of(CK_ALLGATHER, &a2a_ip, 4, 3, &r) == 0 && r.recv_elems == 8 && r.recv_in);
    CHECK(ck_mpi_roles_of(CK_BCAST, NULL, 4, 0, &r) == -1);
}

/* ck_mpi_block_bytes on the same calls, the two sides told apart by their
 * sizes (5 shorts sent, 3 ints received): the block comes from the side the
 * table above says, and a side that is not significant (NULL, -1,
 * MPI_DATATYPE_NULL) or an empty block is never asked its datatype's size. */
static void test_block_bytes(void)
{
    char sb[1], rb[1];
    const size_t sent = 5 * sizeof(short), received = 3 * sizeof(int);
    for (size_t i = 0; i < sizeof roles / sizeof *roles; i++) {
        const ck_collective c = roles[i].c;
        ck_mpi_args m = {sb, 5, MPI_SHORT, rb, 3, MPI_INT, MPI_SUM, 1, MPI_COMM_WORLD};
        if (roles[i].in_place && c == CK_SCATTER) m.rbuf = MPI_IN_PLACE;
        else if (roles[i].in_place) m.sbuf = MPI_IN_PLACE;
        ck_mpi_roles r;
        size_t bytes = 0;
        CHECK(ck_mpi_roles_of(c, &m, 4, roles[i].rank, &r) == 0);
        CHECK(ck_mpi_block_bytes(&r, &m, &bytes) == MPI_SUCCESS);
        if (bytes != (roles[i].from_send ? sent : received)) {
            fprintf(stderr, "block bytes of %s rank %d in_place %d: %zu\n", ck_collective_name(c), roles[i].rank,
                    roles[i].in_place, bytes);
            CHECK(!"ck_mpi_block_bytes reads the significant side");
        }
    }
    /* p = 4, root 1: the sides these ranks do not read hold MPI's "anything". */
    const struct {
        ck_collective c;
        int rank;
        ck_mpi_args m;
        size_t bytes;
    } ignored[] = {
        {CK_SCATTER, 2, {NULL, -1, MPI_DATATYPE_NULL, rb, 3, MPI_INT, MPI_OP_NULL, 1, MPI_COMM_WORLD},
         received},
        {CK_GATHER, 2, {sb, 5, MPI_SHORT, NULL, -1, MPI_DATATYPE_NULL, MPI_OP_NULL, 1, MPI_COMM_WORLD}, sent},
        {CK_REDUCE, 2, {sb, 5, MPI_SHORT, NULL, -1, MPI_DATATYPE_NULL, MPI_SUM, 1, MPI_COMM_WORLD}, sent},
        {CK_GATHER, 1, {MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, 3, MPI_INT, MPI_OP_NULL, 1, MPI_COMM_WORLD},
         received},
        {CK_SCATTER, 1, {sb, 5, MPI_SHORT, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, MPI_OP_NULL, 1, MPI_COMM_WORLD},
         sent},
        /* An empty block: 0 bytes even where its datatype is no datatype. */
        {CK_BCAST, 2, {NULL, 0, MPI_DATATYPE_NULL, rb, 0, MPI_DATATYPE_NULL, MPI_OP_NULL, 1, MPI_COMM_WORLD}, 0},
        {CK_ALLTOALL, 0, {sb, 0, MPI_DATATYPE_NULL, rb, 0, MPI_DATATYPE_NULL, MPI_OP_NULL, 0, MPI_COMM_WORLD}, 0},
    };
    for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++) {
        ck_mpi_roles r;
        size_t bytes = 99;
        CHECK(ck_mpi_roles_of(ignored[i].c, &ignored[i].m, 4, ignored[i].rank, &r) == 0);
        CHECK(ck_mpi_block_bytes(&r, &ignored[i].m, &bytes) == MPI_SUCCESS && bytes == ignored[i].bytes);
    }
}

/* Runs one call (algorithm a, or the library's collective of c when a is
 * NULL: through ck_library_call, or ck_pmpi_call with MPI's own arguments
 * when via_pmpi) on every rank and checks this rank's result; returns 0 or 1. */
static int run_one(ck_collective c, const ck_algorithm *a, size_t n, int root, MPI_Comm comm,
                   int via_pmpi)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    const ck_collective_desc *d = ck_collective_describe(c);
    const size_t ns = ck_collective_send_elems(d, n, p, rank, root, 0);
    const size_t nr = ck_collective_recv_elems(d, n, p, rank, root, 0);
    const size_t nres = ck_collective_result_elems(d, n, p, rank, root);
    int *s = malloc((ns ? ns : 1) * sizeof *s), *r = malloc((nr ? nr : 1) * sizeof *r);
    if (s == NULL || r == NULL) {
        fprintf(stderr, "test_collective: out of memory\n");
        MPI_Abort(comm, 3);
    }
    for (size_t i = 0; i < ns; i++) s[i] = input(rank, i);
    /* bcast has no send buffer: its input is the root's receive buffer. */
    for (size_t i = 0; i < nr; i++) r[i] = c == CK_BCAST && rank == root ? input(rank, i) : -7;
    /* MPI's arguments: bcast's buffer is the receive side, reductions give
     * their count and datatype on both sides. */
    const ck_mpi_args m = {c == CK_BCAST ? NULL : s, c == CK_BCAST ? 0 : (int)n,
                           c == CK_BCAST ? MPI_DATATYPE_NULL : MPI_INT, r, (int)n, MPI_INT,
                           MPI_SUM, root, comm};
    int rc = a          ? ck_algorithm_call(a, s, r, n, MPI_INT, MPI_SUM, root, comm)
             : via_pmpi ? ck_pmpi_call(c, &m)
                        : ck_library_call(c, s, r, n, MPI_INT, MPI_SUM, root, comm);
    int bad = rc != MPI_SUCCESS;
    for (size_t i = 0; !bad && i < nres; i++)
        if (r[i] != expected(c, p, rank, root, n, i)) {
            bad = 1;
            fprintf(stderr, "%s/%s p=%d rank=%d root=%d n=%zu: element %zu is %d, expected %d\n",
                    d->name, a ? a->name : "(library)", p, rank, root, n, i, r[i],
                    expected(c, p, rank, root, n, i));
        }
    if (rc != MPI_SUCCESS)
        fprintf(stderr, "%s/%s p=%d rank=%d: returned %d\n", d->name, a ? a->name : "(library)",
                p, rank, rc);
    free(s);
    free(r);
    return bad;
}

static void test_calls(MPI_Comm comm)
{
    int p;
    MPI_Comm_size(comm, &p);
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) {
        const ck_collective cc = (ck_collective)c;
        const int root = ck_collective_has_root(cc) ? p - 1 : 0;
        int bad = run_one(cc, NULL, 3, root, comm, 0) | run_one(cc, NULL, 3, root, comm, 1), any = 0;
        /* Every algorithm of the collective, through the uniform call. */
        for (size_t i = 0; i < ck_algorithm_count(); i++) {
            const ck_algorithm *a = ck_algorithm_at(i);
            if (a->collective != cc) continue;
            if ((a->constraints & CK_REQUIRES_POW2_RANKS) && (p & (p - 1)) != 0) continue;
            const size_t n = a->min_count > 3 ? a->min_count : 3;
            bad |= run_one(cc, a, n, root, comm, 0);
            any = 1;
        }
        int gbad = 0;
        MPI_Allreduce(&bad, &gbad, 1, MPI_INT, MPI_MAX, comm);
        CHECK(gbad == 0);
        CHECK(any); /* every collective has at least one algorithm at p = 1, 4 */
    }

    /* Refusals: no algorithm, an algorithm without a function, a collective
     * out of range. */
    int buf[4] = {0};
    CHECK(ck_algorithm_call(NULL, buf, buf, 1, MPI_INT, MPI_SUM, 0, comm) == MPI_ERR_ARG);
    ck_algorithm empty = *ck_algorithm_at(0);
    empty.fn.bcast = NULL;
    CHECK(ck_algorithm_call(&empty, buf, buf, 1, MPI_INT, MPI_SUM, 0, comm) == MPI_ERR_ARG);
    ck_algorithm stray = *ck_algorithm_at(0);
    stray.collective = CK_NUM_COLLECTIVES;
    CHECK(ck_algorithm_call(&stray, buf, buf, 1, MPI_INT, MPI_SUM, 0, comm) == MPI_ERR_ARG);
    CHECK(ck_library_call(CK_NUM_COLLECTIVES, buf, buf, 1, MPI_INT, MPI_SUM, 0, comm) ==
          MPI_ERR_ARG);
    const ck_mpi_args m = {buf, 1, MPI_INT, buf + 1, 1, MPI_INT, MPI_SUM, 0, comm};
    CHECK(ck_pmpi_call(CK_NUM_COLLECTIVES, &m) == MPI_ERR_ARG);
    CHECK(ck_pmpi_call(CK_ALLREDUCE, NULL) == MPI_ERR_ARG);
    CHECK(ck_library_call(CK_ALLREDUCE, buf, buf, CK_MAX_COUNT + 1, MPI_INT, MPI_SUM, 0, comm) ==
          MPI_ERR_COUNT);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    /* Errors come back as codes, not aborts: the refusals are checked. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    test_sizes();
    test_traits();
    test_names();
    test_datatypes();
    test_mpi_roles();
    test_block_bytes();
    test_calls(MPI_COMM_WORLD);
    int gfailed = 0;
    MPI_Allreduce(&failed, &gfailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) printf("test_collective: p=%d, %d checks passed, %d failed\n", p, passed, gfailed);
    MPI_Finalize();
    return gfailed == 0 ? 0 : 1;
}
