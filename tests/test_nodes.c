/*
 * Unit tests of the node structure (ck_nodes_get, lib/core/nodes.c) and of
 * the node-aware algorithms on shapes the matrix's two communicators never
 * make: nodes whose ranks are not consecutive, and a communicator whose
 * nodes are uneven. Run at 6 ranks with COLLKIT_RANKS_PER_NODE=2 (ctest):
 * virtual nodes {0,1} {2,3} {4,5} of MPI_COMM_WORLD. The expectations are
 * written out by hand from that rule.
 */
#include <collkit/collkit.h>
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

#include "unit_check.h"

/* Allgather and allreduce (sum) of small int vectors, checked against the
 * values every rank can compute. */
static void check_algorithms(MPI_Comm comm, int expect_refusal)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    enum { COUNT = 5 };
    int *rbuf = malloc((size_t)p * COUNT * sizeof *rbuf), sbuf[COUNT], sum[COUNT];
    if (!rbuf) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int i = 0; i < COUNT; i++) sbuf[i] = 100 * rank + i;

    int rc = ck_allgather_parallel_rings(sbuf, rbuf, COUNT, MPI_INT, comm);
    if (expect_refusal) {
        CHECK(rc != MPI_SUCCESS);
    } else {
        CHECK(rc == MPI_SUCCESS);
        int ok = 1;
        for (int r = 0; r < p; r++)
            for (int i = 0; i < COUNT; i++) ok &= rbuf[r * COUNT + i] == 100 * r + i;
        CHECK(ok);
    }
    int (*const allreduce[])(const void *, void *, size_t, MPI_Datatype, MPI_Op, MPI_Comm) = {
        ck_allreduce_parallel_rings, ck_allreduce_bine_hierarchical};
    for (int a = 0; a < 2; a++) {
        rc = allreduce[a](sbuf, sum, COUNT, MPI_INT, MPI_SUM, comm);
        /* bine_hierarchical takes any node shape. */
        if (expect_refusal && a == 0) {
            CHECK(rc != MPI_SUCCESS);
            continue;
        }
        CHECK(rc == MPI_SUCCESS);
        int ok = 1;
        for (int i = 0; i < COUNT; i++) ok &= sum[i] == 100 * p * (p - 1) / 2 + p * i;
        CHECK(ok);
    }
    free(rbuf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int wrank, wsize, k = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (wsize != 6 || ck_ranks_per_node_env(&k) != MPI_SUCCESS || k != 2) {
        if (wrank == 0) fprintf(stderr, "test_nodes: run at 6 ranks with COLLKIT_RANKS_PER_NODE=2\n");
        MPI_Finalize();
        return 2;
    }

    /* MPI_COMM_WORLD: three nodes of two consecutive ranks. */
    const ck_nodes *nd = NULL, *again = NULL;
    CHECK(ck_nodes_get(MPI_COMM_WORLD, &nd) == MPI_SUCCESS);
    CHECK(nd->size == 6 && nd->nodes == 3 && nd->equal && nd->consecutive && nd->virtual_nodes);
    CHECK(nd->node == wrank / 2 && nd->local_rank == wrank % 2 && nd->local_size == 2);
    CHECK(ck_nodes_rank(nd, 2, 1) == 5 && nd->node_first[3] == 6);
    /* Cached: the same structure, no second split. */
    CHECK(ck_nodes_get(MPI_COMM_WORLD, &again) == MPI_SUCCESS && again == nd);
    check_algorithms(MPI_COMM_WORLD, 0);

    /* Even world ranks first: comm ranks 0..5 are world 0, 2, 4, 1, 3, 5, so
     * node {w0, w1} is comm ranks {0, 3}: equal, not consecutive. */
    MPI_Comm scattered;
    MPI_Comm_split(MPI_COMM_WORLD, 0, (wrank % 2) * wsize + wrank, &scattered);
    MPI_Comm_set_errhandler(scattered, MPI_ERRORS_RETURN);
    CHECK(ck_nodes_get(scattered, &nd) == MPI_SUCCESS);
    CHECK(nd->nodes == 3 && nd->equal && !nd->consecutive);
    const int node_of[6] = {0, 1, 2, 0, 1, 2}, local_of[6] = {0, 0, 0, 1, 1, 1};
    int same = 1;
    for (int r = 0; r < 6; r++) same &= nd->node_of[r] == node_of[r] && nd->local_of[r] == local_of[r];
    CHECK(same);
    CHECK(ck_nodes_rank(nd, 1, 1) == 4);
    check_algorithms(scattered, 0);
    MPI_Comm_free(&scattered);

    /* World ranks 0..4: nodes {0,1} {2,3} {4}, uneven; parallel_rings refuses
     * on every rank, bine_hierarchical runs. */
    MPI_Comm uneven;
    MPI_Comm_split(MPI_COMM_WORLD, wrank < 5 ? 0 : MPI_UNDEFINED, wrank, &uneven);
    if (uneven != MPI_COMM_NULL) {
        MPI_Comm_set_errhandler(uneven, MPI_ERRORS_RETURN);
        CHECK(ck_nodes_get(uneven, &nd) == MPI_SUCCESS);
        CHECK(nd->nodes == 3 && !nd->equal && nd->consecutive);
        CHECK(nd->local_size == (wrank == 4 ? 1 : 2));
        check_algorithms(uneven, 1);
        MPI_Comm_free(&uneven);
    }

    int counts[2] = {passed, failed}, total[2];
    MPI_Reduce(counts, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (wrank == 0) printf("%d passed, %d failed\n", total[0], total[1]);
    MPI_Bcast(total, 2, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return total[1] ? 1 : 0;
}
