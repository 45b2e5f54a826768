/*
 * Agreements through host memory under SimGrid (sim_board.h).
 *
 * What makes it possible: SimGrid runs every rank as an actor of one host
 * process. SMPI privatises the program's globals per rank, but the heap, the
 * process environment and SimGrid's own objects are shared. So the ranks of a
 * communicator can meet on a "board" in the heap: each adds its values, waits
 * on a SimGrid barrier (a simcall: no simulated time, no simulated message),
 * and reads the result.
 *
 * What it assumes: the actors run one at a time in one host thread, SimGrid's
 * default. Nothing here is locked or atomic, because between two simcalls an
 * actor is never interrupted. Parallel contexts (--cfg=contexts/nthreads:N,
 * N != 1, 0 meaning one thread per core) would run actors concurrently and
 * break that: sim_board_refused() reports them, and collkit-bench refuses to
 * run under them (main.c). It also assumes one SMPI instance per process
 * (smpirun's default, and how collkit launches): the boards are keyed by
 * MPI_COMM_WORLD ranks, which two instances would share.
 *
 * Finding a board without messages: a communicator's board is keyed by the
 * MPI_COMM_WORLD rank of each of its ranks, in order, so communicators with
 * different groups (disjoint or overlapping) never share one. Communicators
 * with the same group do, and that is correct: an agreement blocks until
 * every rank of the group took part, so a program that completes with
 * messages enters the agreements of such communicators in the same order on
 * every rank, and the shared board sees that one order. The boards hang off
 * a registry in the heap, whose address lives in the process environment
 * under a name with the host process id (an inherited or stale variable can
 * never be taken for it). Each rank caches its communicator's board in an
 * attribute (MPI's per-communicator cache): the lookup, O(p) per rank, runs
 * once per communicator and rank; freeing the communicator drops the
 * reference, and the last one frees the board.
 *
 * One barrier per agreement: a board has two slots, and agreement g uses
 * slot g mod 2. Slot g mod 2 is written again only by agreement g + 2, which
 * no rank can enter before every rank has entered agreement g + 1, that is,
 * has finished reading agreement g.
 */
#include "sim_board.h"

#include <simgrid/barrier.h>
#include <xbt/config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* smpicc's forced include (smpi_helpers.h) routes malloc & co through
 * smpi/auto-shared-malloc-thresh, which may fold large blocks into one
 * shared, garbage-filled mapping: the boards hold real data shared on
 * purpose, so they take libc's. And getpid is the rank's there: the
 * environment name needs the host process's. */
#undef malloc
#undef calloc
#undef realloc
#undef free
#undef getpid

typedef enum { OP_MAX, OP_COPY, OP_TEXT } board_op;

typedef struct {
    int arrived;     /* ranks that added their part so far */
    int err;         /* MPI code every rank returns */
    board_op op;     /* what the first rank asked: the others must ask the same */
    int src;         /* OP_COPY, OP_TEXT: the rank whose bytes the others read */
    size_t bytes;
    int have;        /* OP_MAX: buf holds a first contribution */
    size_t cap;
    unsigned char *buf;
} board_slot;

typedef struct sim_board {
    struct sim_board *next;
    int p;
    int *world;      /* MPI_COMM_WORLD rank of each rank of the group: the key */
    long refs;       /* communicator attributes that point here */
    sg_bar_t bar;
    unsigned long gen; /* the agreement that the next rank to arrive takes part in */
    board_slot slot[2];
} sim_board;

typedef struct {
    sim_board *head;
} board_registry;

/* Per rank (a privatised global); a program built without privatisation
 * would share it, which is fine too: every rank then uses one keyval. */
static int board_keyval = MPI_KEYVAL_INVALID;

/* Ends the rank's "computation" before host work that is not simulated
 * computation, and resumes it after, like every MPI call does: with
 * smpi/simulate-computation on, the host time of a board (and of the other
 * actors that ran while this one waited on the barrier) would otherwise be
 * charged as computation. smpi_bench_begin also switches the data segment
 * back to this rank's under mmap privatisation. */
#define OUTSIDE_SIMULATION(stmt) \
    do {                         \
        smpi_bench_end();        \
        stmt;                    \
        smpi_bench_begin();      \
    } while (0)

int sim_board_refused(char *why, size_t len)
{
    int n = sg_cfg_get_int("contexts/nthreads");
    if (n == 1) return 0;
    snprintf(why, len,
             "collkit-bench: SimGrid runs its actors in parallel here (contexts/nthreads:%d); the harness's "
             "agreements share host memory between ranks and need contexts/nthreads:1, SimGrid's default",
             n);
    return 1;
}

static void registry_name(char *name, size_t len)
{
    snprintf(name, len, "COLLKIT_SIM_BOARDS_%ld", (long)getpid());
}

static board_registry *registry_find(void)
{
    char name[64];
    registry_name(name, sizeof name);
    const char *s = getenv(name);
    if (s == NULL) return NULL;
    return (board_registry *)(uintptr_t)strtoull(s, NULL, 16);
}

static board_registry *registry_create(void)
{
    board_registry *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    char name[64], value[32];
    registry_name(name, sizeof name);
    snprintf(value, sizeof value, "%llx", (unsigned long long)(uintptr_t)r);
    if (setenv(name, value, 1) != 0) {
        free(r);
        return NULL;
    }
    return r;
}

static void board_free(sim_board *b)
{
    if (b == NULL) return;
    if (b->bar != NULL) sg_barrier_destroy(b->bar);
    for (int k = 0; k < 2; k++) free(b->slot[k].buf);
    free(b->world);
    free(b);
}

/* Drops one reference; the last one unlinks and frees the board, and the
 * registry with it when it was the last board. */
static void board_release(sim_board *b)
{
    if (--b->refs > 0) return;
    board_registry *r = registry_find();
    if (r != NULL) {
        for (sim_board **at = &r->head; *at != NULL; at = &(*at)->next) {
            if (*at == b) {
                *at = b->next;
                break;
            }
        }
        if (r->head == NULL) {
            char name[64];
            registry_name(name, sizeof name);
            (void)unsetenv(name);
            free(r);
        }
    }
    board_free(b);
}

/* MPI_Comm_free's callback for the attribute. */
static int board_detach(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    board_release(value);
    return MPI_SUCCESS;
}

/* The board of the group whose MPI_COMM_WORLD ranks are world[0..p-1],
 * found or created, with one more reference; it takes world either way.
 * NULL when out of memory. */
static sim_board *board_attach(int p, int *world)
{
    board_registry *r = registry_find();
    if (r == NULL && (r = registry_create()) == NULL) {
        free(world);
        return NULL;
    }
    for (sim_board *b = r->head; b != NULL; b = b->next) {
        if (b->p == p && memcmp(b->world, world, (size_t)p * sizeof *world) == 0) {
            free(world);
            b->refs++;
            return b;
        }
    }
    sim_board *b = calloc(1, sizeof *b);
    if (b == NULL) {
        free(world);
        return NULL;
    }
    b->p = p;
    b->world = world;
    b->bar = sg_barrier_init((unsigned)p);
    if (b->bar == NULL) {
        board_free(b);
        return NULL;
    }
    b->refs = 1;
    b->next = r->head;
    r->head = b;
    return b;
}

/* This rank's board for comm (p > 1 ranks), cached in an attribute. */
static int board_of(MPI_Comm comm, int p, sim_board **out)
{
    int rc = MPI_SUCCESS;
    if (board_keyval == MPI_KEYVAL_INVALID) {
        /* Not copied by MPI_Comm_dup: the duplicate finds the same board
         * through the registry on its first agreement. */
        rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, board_detach, &board_keyval, NULL);
        if (rc != MPI_SUCCESS) return rc;
    }
    void *cached = NULL;
    int flag = 0;
    rc = MPI_Comm_get_attr(comm, board_keyval, &cached, &flag);
    if (rc != MPI_SUCCESS) return rc;
    if (flag) {
        *out = cached;
        return MPI_SUCCESS;
    }
    /* The configuration cannot change during a run: checked once per
     * communicator and rank, here, not per agreement. */
    char why[256];
    if (sim_board_refused(why, sizeof why)) return MPI_ERR_OTHER;

    int *idx = malloc((size_t)p * sizeof *idx);
    int *world = malloc((size_t)p * sizeof *world);
    MPI_Group group = MPI_GROUP_NULL, wgroup = MPI_GROUP_NULL;
    if (idx == NULL || world == NULL) rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS) rc = MPI_Comm_group(comm, &group);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_group(MPI_COMM_WORLD, &wgroup);
    if (rc == MPI_SUCCESS) {
        for (int i = 0; i < p; i++) idx[i] = i;
        rc = MPI_Group_translate_ranks(group, p, idx, wgroup, world);
    }
    if (group != MPI_GROUP_NULL) (void)MPI_Group_free(&group);
    if (wgroup != MPI_GROUP_NULL) (void)MPI_Group_free(&wgroup);
    free(idx);
    if (rc != MPI_SUCCESS) {
        free(world);
        return rc;
    }
    sim_board *b = NULL;
    OUTSIDE_SIMULATION(b = board_attach(p, world));
    if (b == NULL) return MPI_ERR_NO_MEM;
    rc = MPI_Comm_set_attr(comm, board_keyval, b);
    if (rc != MPI_SUCCESS) {
        board_release(b);
        return rc;
    }
    *out = b;
    return MPI_SUCCESS;
}

/* One agreement on board b, as rank `rank`: OP_MAX merges every rank's
 * `bytes` of doubles from in and gives the maximum to every rank's out;
 * OP_COPY gives rank src's `bytes` from in to out on every other rank;
 * OP_TEXT gives rank src's string in, cut to `bytes` with its terminator, to
 * out on rank dst. Returns the same code on every rank. */
static int board_agree(sim_board *b, int rank, board_op op, int src, int dst, const void *in, void *out,
                       size_t bytes)
{
    unsigned long g = b->gen;
    board_slot *s = &b->slot[g & 1];
    if (s->arrived == 0) {
        /* The first rank sets the agreement up; slot g mod 2 was last read
         * by agreement g - 2, over by now (the comment at the top). */
        s->err = MPI_SUCCESS;
        s->op = op;
        s->src = src;
        s->bytes = bytes;
        s->have = 0;
        if (bytes > s->cap) {
            unsigned char *nb = malloc(bytes);
            if (nb == NULL) {
                s->err = MPI_ERR_NO_MEM;
            } else {
                free(s->buf);
                s->buf = nb;
                s->cap = bytes;
            }
        }
    } else if (s->op != op || s->src != src || s->bytes != bytes) {
        /* The ranks disagree on what they agree on: a harness bug that
         * messages would have turned into a hang or a truncation. */
        if (s->err == MPI_SUCCESS) s->err = MPI_ERR_ARG;
    }
    if (s->err == MPI_SUCCESS && bytes > 0) { /* no bytes: no buffer either */
        if (op == OP_MAX) {
            double *acc = (double *)(void *)s->buf;
            const double *v = in;
            size_t n = bytes / sizeof(double);
            if (!s->have) {
                memcpy(acc, v, bytes);
                s->have = 1;
            } else {
                for (size_t i = 0; i < n; i++)
                    if (v[i] > acc[i]) acc[i] = v[i];
            }
        } else if (rank == src && op == OP_COPY) {
            memcpy(s->buf, in, bytes);
        } else if (rank == src) {
            size_t k = strnlen(in, bytes - 1);
            memcpy(s->buf, in, k);
            s->buf[k] = '\0';
        }
    }
    if (++s->arrived == b->p) {
        s->arrived = 0;
        b->gen = g + 1;
    }
    /* Releases every rank at once, when the last one arrives. */
    sg_barrier_wait(b->bar);
    if (s->err != MPI_SUCCESS) return s->err;
    if (bytes == 0) return MPI_SUCCESS;
    if (op == OP_MAX || (op == OP_COPY && rank != src))
        memcpy(out, s->buf, bytes);
    else if (op == OP_TEXT && rank == dst)
        memcpy(out, s->buf, strlen((const char *)s->buf) + 1);
    return MPI_SUCCESS;
}

/* Rank and board of comm; *b = NULL when comm has one rank. A rank whose
 * lookup fails returns before the barrier, so the others wait for it: as
 * with messages, collkit-bench aborts the launch on any agreement error
 * (main.c, die_mpi), which ends the simulation. */
static int setup(MPI_Comm comm, int *rank, sim_board **b)
{
    int p = 1;
    int rc = MPI_Comm_size(comm, &p);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(comm, rank);
    if (rc != MPI_SUCCESS) return rc;
    *b = NULL;
    return p > 1 ? board_of(comm, p, b) : MPI_SUCCESS;
}

/* An agreement on n doubles in place: their maximum (OP_MAX) or rank src's (OP_COPY). */
static int board_doubles(double *v, size_t n, MPI_Comm comm, board_op op, int src)
{
    int rank = 0;
    sim_board *b = NULL;
    int rc = setup(comm, &rank, &b);
    if (rc != MPI_SUCCESS || b == NULL) return rc;
    if (n > SIZE_MAX / sizeof *v) return MPI_ERR_COUNT;
    OUTSIDE_SIMULATION(rc = board_agree(b, rank, op, src, -1, v, v, n * sizeof *v));
    return rc;
}

int sim_board_max(double *v, size_t n, MPI_Comm comm) { return board_doubles(v, n, comm, OP_MAX, -1); }

int sim_board_bcast(double *v, size_t n, MPI_Comm comm) { return board_doubles(v, n, comm, OP_COPY, 0); }

int sim_board_text_to_root(int src, const char *mine, char *out, size_t len, MPI_Comm comm)
{
    if (src < 0 || len == 0) return MPI_SUCCESS;
    int rank = 0;
    sim_board *b = NULL;
    int rc = setup(comm, &rank, &b);
    if (rc != MPI_SUCCESS) return rc;
    if (src == 0) {
        /* Rank 0's own text: nothing to send, as with messages. */
        if (rank == 0) snprintf(out, len, "%s", mine);
        return MPI_SUCCESS;
    }
    if (b == NULL) return MPI_ERR_RANK; /* one rank, and src is not it */
    OUTSIDE_SIMULATION(rc = board_agree(b, rank, OP_TEXT, src, 0, mine, out, len));
    return rc;
}
