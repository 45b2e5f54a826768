/* Issue #51: under Open MPI (coll_tuned_use_dynamic_rules=1), the
 * autotuner's library:ring candidate runs tuned's ring on a duplicate of the
 * program's communicator made while coll_tuned_allreduce_algorithm said ring
 * (tuned reads it only when a communicator is made).
 *
 * Run at 4 ranks with COLLKIT_AUTOTUNE=1, COLLKIT_AUTOTUNE_AFTER=0 and
 * COLLKIT_AUTOTUNE_CANDIDATES=allreduce=library:ring. A logging user op
 * (commutative) records the lengths it is called with: ring at 4 ranks on N
 * ints reduces three blocks of N/4 in each call, which tuned's default
 * (recursive doubling here) never does. The first stage runs every candidate
 * 4 calls, so ring must appear at least 4 times. Every result is checked,
 * on MPI_COMM_WORLD and on a communicator made and freed (its duplicates go
 * with it), and a non-commutative op of the same class never runs ring (a
 * forced tuned reduction does not keep the order). MPI_COMM_SELF runs the
 * library. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define N 1024
#define CALLS 64

static int rank, size, failures;
static int lens[64], nlens;

static void logging_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    if (nlens < 64) lens[nlens] = *len;
    nlens++;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* The same sum, declared non-commutative: the shim must take MPI's word for it. */
static void ordered_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    logging_sum(in, inout, len, dt);
}

/* One allreduce: the result checked; 1 when the op's calls were ring's. */
static int one_call(MPI_Comm comm, MPI_Op op, int base)
{
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    static int in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = base + me * 3 + i;
    nlens = 0;
    int rc = MPI_Allreduce(in, out, N, MPI_INT, op, comm);
    if (rc != MPI_SUCCESS) {
        failures++;
        fprintf(stderr, "rank %d: allreduce returned %d\n", rank, rc);
        return 0;
    }
    for (int i = 0; i < N; i++) {
        const int want = p * (base + i) + 3 * p * (p - 1) / 2;
        if (out[i] != want) {
            failures++;
            fprintf(stderr, "rank %d: WRONG out[%d] = %d, want %d\n", rank, i, out[i], want);
            break;
        }
    }
    int ring = nlens == p - 1 && p > 1;
    for (int i = 0; ring && i < nlens; i++) ring = lens[i] == N / p;
    return ring;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op sum, ordered;
    MPI_Op_create(logging_sum, 1, &sum);
    MPI_Op_create(ordered_sum, 0, &ordered);
    int ring_world = 0, ring_made = 0, ring_ordered = 0;
    for (int i = 0; i < CALLS; i++) ring_world += one_call(MPI_COMM_WORLD, sum, i);
    for (int round = 0; round < 3; round++) {
        MPI_Comm made;
        MPI_Comm_dup(MPI_COMM_WORLD, &made);
        for (int i = 0; i < CALLS / 2; i++) ring_made += one_call(made, sum, i);
        for (int i = 0; i < 8; i++) ring_ordered += one_call(made, ordered, i);
        MPI_Comm_free(&made);
    }
    for (int i = 0; i < 8; i++) one_call(MPI_COMM_SELF, sum, i);
    if (ring_world + ring_made < 4) {
        failures++;
        fprintf(stderr, "rank %d: ring ran %d + %d calls, want at least 4\n", rank, ring_world, ring_made);
    }
    if (ring_ordered) {
        failures++;
        fprintf(stderr, "rank %d: a non-commutative op ran ring %d times\n", rank, ring_ordered);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("preload library dup: ok (ring %d calls on the world, %d on made communicators)\n", ring_world,
               ring_made);
    MPI_Op_free(&sum);
    MPI_Op_free(&ordered);
    MPI_Finalize();
    return all != 0;
}
