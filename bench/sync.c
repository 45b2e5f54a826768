/* Iteration separation: dissemination barrier, clock offsets, windows. */
#include "sync.h"

#include "tags.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>

int sync_dissemination(MPI_Comm comm, int rank, int p, int *flag)
{
    int mine = *flag;
    for (int d = 1; d < p; d *= 2) {
        int in = 0;
        int rc = MPI_Sendrecv(&mine, 1, MPI_INT, (rank + d) % p, BENCH_TAG_BARRIER, &in, 1, MPI_INT,
                              (rank - d + p) % p, BENCH_TAG_BARRIER, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
        /* OR is idempotent, so seeing a rank's flag along two paths is harmless. */
        mine |= in;
    }
    *flag = mine;
    return MPI_SUCCESS;
}

/* More exchanges give a better chance of one undisturbed round trip; ten is
 * what fits in a few milliseconds per rank even when oversubscribed. */
#define PINGS 10

int sync_clock_offset(MPI_Comm comm, int rank, int p, double *offset, double *error)
{
    int rc = MPI_SUCCESS;
    *offset = 0.0;
    if (error != NULL) *error = 0.0;
#ifdef SMPI_H
    /* One simulated clock for every rank: the offset is exactly 0, where a
     * ping-pong would estimate it with the endpoints' unequal send and
     * receive costs (smpi/os, smpi/or) as its error. */
    (void)comm, (void)rank, (void)p;
    return rc;
#else
    if (rank == 0) {
        /* One rank at a time: concurrent ping-pongs would queue behind each
         * other at rank 0 and inflate the round trips. */
        for (int r = 1; r < p; r++) {
            double best_rtt = -1.0, best = 0.0;
            for (int k = 0; k < PINGS; k++) {
                double ping = 0.0, theirs;
                double t1 = MPI_Wtime();
                rc = MPI_Send(&ping, 1, MPI_DOUBLE, r, BENCH_TAG_CLOCK, comm);
                if (rc != MPI_SUCCESS) return rc;
                rc = MPI_Recv(&theirs, 1, MPI_DOUBLE, r, BENCH_TAG_CLOCK, comm, MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS) return rc;
                double t2 = MPI_Wtime();
                /* Their clock was read about halfway through the round trip. */
                if (best_rtt < 0 || t2 - t1 < best_rtt) {
                    best_rtt = t2 - t1;
                    best = theirs - 0.5 * (t1 + t2);
                }
            }
            /* The offset and its uncertainty: the reply was read somewhere
             * inside the best round trip, so half of it bounds the error. */
            double answer[2] = {best, 0.5 * best_rtt};
            rc = MPI_Send(answer, 2, MPI_DOUBLE, r, BENCH_TAG_CLOCK, comm);
            if (rc != MPI_SUCCESS) return rc;
        }
        return MPI_SUCCESS;
    }
    for (int k = 0; k < PINGS; k++) {
        double ping;
        rc = MPI_Recv(&ping, 1, MPI_DOUBLE, 0, BENCH_TAG_CLOCK, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
        double now = MPI_Wtime();
        rc = MPI_Send(&now, 1, MPI_DOUBLE, 0, BENCH_TAG_CLOCK, comm);
        if (rc != MPI_SUCCESS) return rc;
    }
    double answer[2];
    rc = MPI_Recv(answer, 2, MPI_DOUBLE, 0, BENCH_TAG_CLOCK, comm, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    *offset = answer[0];
    if (error != NULL) *error = answer[1];
    return MPI_SUCCESS;
#endif
}

/* Closer than this to the start, only spin. */
#define SPIN_ONLY_S 100e-6

int sync_wait_until(double local_start)
{
    double now = MPI_Wtime();
    if (now > local_start) return 1;
#ifdef SMPI_H
    /* A spin on MPI_Wtime never advances simulated time; SMPI's nanosleep
     * (smpi_helpers.h) sleeps in it, exactly, so every rank starts the call
     * at the same simulated instant. */
    double wait = local_start - now;
    struct timespec t = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
    nanosleep(&t, NULL);
    return 0;
#else
    /* Spin rather than sleep: a sleep's wake-up jitter is larger than the
     * windows this method exists to make tight. Far from the start, yield
     * instead: with a core per rank that returns at once (still a spin), and
     * with more ranks than cores it lets the ranks still on their way run. */
    while (now < local_start) {
        if (local_start - now > SPIN_ONLY_S) sched_yield();
        now = MPI_Wtime();
    }
    return 0;
#endif
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int sync_floor_us(MPI_Comm comm, int rank, int p, double *floor_us)
{
    *floor_us = 0.0;
    if (p < 2 || (rank != 0 && rank != p - 1)) return MPI_SUCCESS;
    /* The median, not the minimum: the minimum of many round trips is the
     * luckiest one, while a collective's median must beat a typical message
     * to be suspicious. Warm-ups set up the connection first. */
    enum { WARMUP = 5 };
    double half[FLOOR_PINGS];
    const int peer = rank == 0 ? p - 1 : 0;
    char byte = 0;
    for (int i = 0; i < WARMUP + FLOOR_PINGS; i++) {
        int rc;
        if (rank == 0) {
            double t0 = MPI_Wtime();
            rc = MPI_Send(&byte, 1, MPI_CHAR, peer, BENCH_TAG_FLOOR, comm);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(&byte, 1, MPI_CHAR, peer, BENCH_TAG_FLOOR, comm, MPI_STATUS_IGNORE);
            if (i >= WARMUP) half[i - WARMUP] = (MPI_Wtime() - t0) * 0.5e6;
        } else {
            rc = MPI_Recv(&byte, 1, MPI_CHAR, peer, BENCH_TAG_FLOOR, comm, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS) rc = MPI_Send(&byte, 1, MPI_CHAR, peer, BENCH_TAG_FLOOR, comm);
        }
        if (rc != MPI_SUCCESS) return rc;
    }
    if (rank == 0) {
        qsort(half, FLOOR_PINGS, sizeof half[0], cmp_double);
        *floor_us = half[FLOOR_PINGS / 2];
    }
    return MPI_SUCCESS;
}
