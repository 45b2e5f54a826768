/*
 * sim_board under SimGrid (tests/python/test_simgrid.py compiles it with
 * smpicc beside bench/sim_board.c and runs it on 8 ranks): the agreements
 * give the right values on the communicators the boards must keep apart
 * (disjoint halves of one size running at once, overlapping groups with the
 * same lowest rank and size), on a duplicate, after growth and reuse, and
 * cost no simulated time; a disagreement is the same error everywhere; the
 * registry is gone once every communicator is freed. Prints "sim_board: ok"
 * from rank 0 and exits 0, or prints what failed and exits 1.
 *
 *   smpirun -np 8 ... sim_board_test          the checks
 *   smpirun -np 8 ... sim_board_test refused  exits 0 when sim_board_refused
 *                                             says no (run with contexts/nthreads:2)
 */
#include "sim_board.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#undef getpid /* smpicc's is the rank's; the registry is named after the process's */

static int failures = 0;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "sim_board_test rank %d: ", world_rank);        \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            failures++;                                                     \
        }                                                                   \
    } while (0)

static int world_rank = 0;

/* n agreements of growing length on comm, checked against the known max. */
static void max_rounds(MPI_Comm comm, int rounds, double base)
{
    int r = 0, p = 0;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    for (int k = 0; k < rounds; k++) {
        size_t n = (size_t)1 << (k % 12); /* 1 .. 2048: the slots grow and are reused */
        double *v = malloc(n * sizeof *v);
        if (v == NULL) {
            CHECK(0, "out of memory");
            return;
        }
        for (size_t i = 0; i < n; i++) v[i] = base + (double)((r * 7 + (int)i) % p) + k;
        int rc = sim_board_max(v, n, comm);
        CHECK(rc == MPI_SUCCESS, "max returned %d", rc);
        for (size_t i = 0; i < n && rc == MPI_SUCCESS; i++)
            if (v[i] != base + (double)(p - 1) + k) {
                CHECK(0, "round %d element %zu: %g, expected %g", k, i, v[i], base + (double)(p - 1) + k);
                break;
            }
        free(v);
    }
}

static MPI_Comm create_of(const int *members, int n)
{
    MPI_Group world, g;
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, members, &g);
    MPI_Comm_create(MPI_COMM_WORLD, g, &c);
    MPI_Group_free(&g);
    MPI_Group_free(&world);
    return c;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    int p = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc > 1 && strcmp(argv[1], "refused") == 0) {
        char why[256];
        int refused = sim_board_refused(why, sizeof why);
        if (world_rank == 0) printf("%s\n", refused ? why : "not refused");
        MPI_Finalize();
        return refused ? 0 : 1;
    }
    if (p != 8) {
        if (world_rank == 0) fprintf(stderr, "sim_board_test needs 8 ranks\n");
        MPI_Finalize();
        return 1;
    }

    MPI_Comm all, dup, half, low, high;
    MPI_Comm_dup(MPI_COMM_WORLD, &all);

    /* No simulated time, however many agreements: an agreement can end no
     * earlier than its last rank arrives, and ends right then on every rank
     * (the ranks leave MPI_Comm_dup at different times). */
    double t[2] = {MPI_Wtime(), 0}, all_t[16];
    max_rounds(all, 30, 100.0);
    t[1] = MPI_Wtime();
    MPI_Allgather(t, 2, MPI_DOUBLE, all_t, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    double last_in = 0;
    for (int i = 0; i < p; i++)
        if (all_t[2 * i] > last_in) last_in = all_t[2 * i];
    for (int i = 0; i < p; i++)
        CHECK(all_t[2 * i + 1] == last_in, "rank %d left 30 agreements at %.12g s, the last arrived at %.12g s", i,
              all_t[2 * i + 1], last_in);

    /* Two disjoint halves of the same size at once, with different numbers
     * of agreements: each half meets on its own board. */
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
    max_rounds(half, world_rank % 2 ? 17 : 5, world_rank % 2 ? 1000.0 : 2000.0);

    /* Overlapping groups with the same lowest rank and size: {0,1,2,3} and
     * {0,4,5,6}. Ranks 1-3 and 4-6 agree at the same time, rank 0 in one,
     * then the other. A key of (lowest rank, size) would mix them. */
    const int a[] = {0, 1, 2, 3}, b[] = {0, 4, 5, 6};
    low = create_of(a, 4);
    high = create_of(b, 4);
    if (low != MPI_COMM_NULL) max_rounds(low, 9, 10.0);
    if (high != MPI_COMM_NULL) max_rounds(high, 4, 20.0);

    /* A duplicate has the same group, hence the same board: interleaved
     * agreements on both, in the same order on every rank. */
    MPI_Comm_dup(all, &dup);
    for (int k = 0; k < 6; k++) max_rounds(k % 2 ? dup : all, 1, 50.0 * k);

    /* Broadcast from rank 0. */
    double v[3] = {world_rank == 0 ? 1.5 : -1, world_rank == 0 ? 2.5 : -1, world_rank == 0 ? 3.5 : -1};
    int rc = sim_board_bcast(v, 3, all);
    CHECK(rc == MPI_SUCCESS && v[0] == 1.5 && v[1] == 2.5 && v[2] == 3.5, "bcast: %d %g %g %g", rc, v[0], v[1],
          v[2]);

    /* Texts to rank 0: from the last rank, cut to the length; from rank 0;
     * from nobody. */
    char mine[64], out[16];
    snprintf(mine, sizeof mine, "rank %d says a long thing", world_rank);
    memset(out, 'x', sizeof out);
    rc = sim_board_text_to_root(p - 1, mine, out, sizeof out, all);
    CHECK(rc == MPI_SUCCESS, "text returned %d", rc);
    if (world_rank == 0) CHECK(strcmp(out, "rank 7 says a l") == 0, "text from rank 7: '%.16s'", out);
    rc = sim_board_text_to_root(0, mine, out, sizeof out, all);
    if (world_rank == 0) CHECK(rc == MPI_SUCCESS && strcmp(out, "rank 0 says a l") == 0, "own text: '%.16s'", out);
    rc = sim_board_text_to_root(-1, mine, out, sizeof out, all);
    CHECK(rc == MPI_SUCCESS, "no text returned %d", rc);

    /* Ranks that disagree on the length: the same error on every rank, and
     * the board goes on working. */
    double w[2] = {1, 2};
    rc = sim_board_max(w, world_rank == 3 ? 1 : 2, all);
    int rcs[8];
    MPI_Allgather(&rc, 1, MPI_INT, rcs, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < p; i++) CHECK(rcs[i] == MPI_ERR_ARG, "rank %d got %d on a disagreement", i, rcs[i]);
    max_rounds(all, 3, 7.0);

    /* Every communicator freed: the last reference takes the registry. */
    MPI_Comm_free(&dup);
    MPI_Comm_free(&all);
    MPI_Comm_free(&half);
    if (low != MPI_COMM_NULL) MPI_Comm_free(&low);
    if (high != MPI_COMM_NULL) MPI_Comm_free(&high);
    MPI_Barrier(MPI_COMM_WORLD);
    char name[64];
    snprintf(name, sizeof name, "COLLKIT_SIM_BOARDS_%ld", (long)getpid());
    CHECK(getenv(name) == NULL, "%s is still set after every communicator was freed", name);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank looked before any makes a board again */

    /* A communicator made again after that gets a fresh board. */
    MPI_Comm_dup(MPI_COMM_WORLD, &all);
    max_rounds(all, 4, 3.0);
    MPI_Comm_free(&all);

    int total = 0;
    MPI_Reduce(&failures, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (world_rank == 0 && total == 0) printf("sim_board: ok\n");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
