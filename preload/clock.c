/* The profile's clock (docs/application-loop.md, "Profile"): one timeline
 * for every rank's trace and sample. Ranks of one node share CLOCK_MONOTONIC;
 * each other node's leader (its lowest world rank) measures its clock's
 * offset to world rank 0's by ping-pong, at MPI_Init and again at
 * MPI_Finalize, and hands it to its node's ranks. The reader maps a local
 * time t to rank 0's as t - offset(t), offset linear between the two.
 *
 * Everything here runs on the preload's own duplicate of MPI_COMM_WORLD with
 * PMPI_ calls, so no message of the program's can match one of these, and
 * only while profiling: twice per run, never per call. */
#include "ck_preload.h"
#include "profile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* More round trips give a better chance of one undisturbed one; ten fit in
 * a few milliseconds per leader even on an oversubscribed node. */
#define CLOCK_PINGS 10
#define CLOCK_TAG_GO 1
#define CLOCK_TAG_PING 2

double ckp_clock_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ckp_clock_setup(ckp_clock *c, int profiling, char *err, size_t errlen)
{
    const char *v = getenv("COLLKIT_PROFILE_CLOCK");
    const int set = v && *v;
    c->exchange_all = 0;
    c->world = MPI_COMM_NULL;
    c->node = MPI_COMM_NULL;
    if (set && !profiling) {
        snprintf(err, errlen, "COLLKIT_PROFILE_CLOCK is set without COLLKIT_PROFILE; fix: set "
                              "COLLKIT_PROFILE=DIR too, or unset COLLKIT_PROFILE_CLOCK");
        return -1;
    }
    if (!set || strcmp(v, "auto") == 0) return 0;
    if (strcmp(v, "exchange") == 0) {
        c->exchange_all = 1;
        return 0;
    }
    snprintf(err, errlen, "COLLKIT_PROFILE_CLOCK: '%.64s' is neither auto nor exchange; fix: unset it (auto) "
                          "or set COLLKIT_PROFILE_CLOCK=exchange", v);
    return -1;
}

/* splitmix64's finaliser: spreads the time's and the pid's few changing bits. */
static uint64_t spread(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t make_run_id(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    const uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return spread(ns ^ spread((uint64_t)getpid()));
}

/* One measurement, every rank: the ranks that measure (mine: this one) ping
 * world rank 0 in turn, one at a time so that their round trips never queue
 * behind each other at rank 0; then each other node's leader hands its
 * result to its node. at/offset/error: local CLOCK_MONOTONIC then, local
 * minus rank 0's, and the bound on the offset's error. */
static void measure(ckp_clock *c, double *at, double *offset, double *error)
{
    int rank = 0, size = 1, mine = c->method == CKP_CLOCK_EXCHANGE;
    PMPI_Comm_rank(c->world, &rank);
    PMPI_Comm_size(c->world, &size);
    *at = ckp_clock_monotonic();
    *offset = 0.0;
    *error = 0.0;
    int *who = malloc((size_t)size * sizeof *who);
    if (!who) {
        /* Without the list nobody can be told when to go: every rank gives
         * the same answer (MPI's own out-of-memory is as fatal). */
        fprintf(stderr, "collkit-preload: COLLKIT_PROFILE: out of memory for the clock's exchange\n");
        PMPI_Abort(MPI_COMM_WORLD, 2);
        return;
    }
    PMPI_Allgather(&mine, 1, MPI_INT, who, 1, MPI_INT, c->world);
    if (rank == 0) {
        for (int r = 1; r < size; r++) {
            if (!who[r]) continue;
            int go = 0;
            PMPI_Send(&go, 1, MPI_INT, r, CLOCK_TAG_GO, c->world);
            for (int k = 0; k < CLOCK_PINGS; k++) {
                double ping = 0.0;
                PMPI_Recv(&ping, 1, MPI_DOUBLE, r, CLOCK_TAG_PING, c->world, MPI_STATUS_IGNORE);
                const double now = ckp_clock_monotonic();
                PMPI_Send(&now, 1, MPI_DOUBLE, r, CLOCK_TAG_PING, c->world);
            }
        }
    } else if (mine) {
        int go = 0;
        double best_rtt = -1.0;
        PMPI_Recv(&go, 1, MPI_INT, 0, CLOCK_TAG_GO, c->world, MPI_STATUS_IGNORE);
        for (int k = 0; k < CLOCK_PINGS; k++) {
            double theirs = 0.0;
            const double t1 = ckp_clock_monotonic();
            PMPI_Send(&t1, 1, MPI_DOUBLE, 0, CLOCK_TAG_PING, c->world);
            PMPI_Recv(&theirs, 1, MPI_DOUBLE, 0, CLOCK_TAG_PING, c->world, MPI_STATUS_IGNORE);
            const double t2 = ckp_clock_monotonic();
            /* Rank 0 read its clock somewhere inside the round trip: the
             * middle is the best guess, half the trip bounds the error. */
            if (best_rtt < 0 || t2 - t1 < best_rtt) {
                best_rtt = t2 - t1;
                *at = 0.5 * (t1 + t2);
                *offset = *at - theirs;
                *error = 0.5 * best_rtt;
            }
        }
    }
    free(who);
    /* A node other than rank 0's takes its leader's numbers: one clock. */
    if (!c->exchange_all && c->node_leader != 0) {
        double v[3] = {*at, *offset, *error};
        PMPI_Bcast(v, 3, MPI_DOUBLE, 0, c->node);
        *at = v[0];
        *offset = v[1];
        *error = v[2];
    }
}

void ckp_clock_start(ckp_clock *c)
{
    int rank = 0;
    PMPI_Comm_dup(MPI_COMM_WORLD, &c->world);
    PMPI_Comm_rank(c->world, &rank);
    c->run_id = rank == 0 ? make_run_id() : 0;
    PMPI_Bcast(&c->run_id, 1, MPI_UINT64_T, 0, c->world);
    /* Ordered by world rank, so the node's rank 0 is its lowest world rank. */
    PMPI_Comm_split_type(c->world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &c->node);
    c->node_leader = rank;
    PMPI_Bcast(&c->node_leader, 1, MPI_INT, 0, c->node);
    if (c->exchange_all) c->method = rank == 0 ? CKP_CLOCK_REFERENCE : CKP_CLOCK_EXCHANGE;
    else if (c->node_leader == 0) c->method = CKP_CLOCK_REFERENCE;
    else c->method = rank == c->node_leader ? CKP_CLOCK_EXCHANGE : CKP_CLOCK_SAME_NODE;
    c->measured_final = 0;
    c->final_s = c->offset_final_s = 0.0;
    measure(c, &c->init_s, &c->offset_init_s, &c->error_s);
}

void ckp_clock_finish(ckp_clock *c)
{
    if (c->world == MPI_COMM_NULL) return;
    double error = 0.0;
    measure(c, &c->final_s, &c->offset_final_s, &error);
    if (error > c->error_s) c->error_s = error;
    c->measured_final = 1;
    ckp_clock_release(c);
}

void ckp_clock_release(ckp_clock *c)
{
    if (c->world == MPI_COMM_NULL) return;
    PMPI_Comm_free(&c->node);
    PMPI_Comm_free(&c->world);
}

const char *ckp_clock_method_name(int method)
{
    return method == CKP_CLOCK_REFERENCE ? "reference" : method == CKP_CLOCK_SAME_NODE ? "same-node" : "exchange";
}
