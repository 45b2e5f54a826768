/* The autotuner (COLLKIT_AUTOTUNE=1; docs/preload.md, "Autotune"): the
 * program's own calls are the benchmark.
 *
 * A class is what the rules and the profile key a call by, read only from
 * values equal on every rank: the collective, the communicator, the block
 * bytes, the root of a rooted collective, the datatype and op of a reduction,
 * and MPI_IN_PLACE where every rank must pass it alike (allreduce, allgather,
 * alltoall, reduce_scatter). Every rank therefore sees the same classes and
 * the same sequence of calls in each, and numbers them alike.
 *
 * A class's candidates are the library's own collective and each libcollkit
 * algorithm that can run the call (ckp_fallback_reason) and that
 * COLLKIT_AUTOTUNE_CANDIDATES allows. It explores in stages: in each, every
 * candidate still in the race runs `stage` calls, round robin, the order
 * rotated every round, each timed on every rank: its arrival and exit on one
 * clock (world rank 0's, the profile's offsets: clock.c). At the end of a
 * stage (a look) the ranks agree with one allreduce (MPI_MAX) on the shim's
 * duplicate of the communicator, after the program's call returned, on each
 * call's working time: what the collective took after the arrivals its
 * result depends on (working_rule.h, the rule of program/waits.py; bcast
 * and scatter broadcast the root's arrivals first). The rest of the call,
 * waiting for a late rank, is the program's imbalance: no candidate changes
 * it, so it is recorded beside (wait_s) and never raced on. Every rank holds
 * the same numbers and takes the same decisions.
 *
 * What a look decides (racing, settling, the budget) is the policy's
 * (autotune_policy.c): another selection rule changes that file only. A
 * class the program calls no more than `after` times
 * (COLLKIT_AUTOTUNE_AFTER) stays on the library, untimed. */
#include "autotune.h"
#include "ck_preload.h"
#include "autotune_policy.h"
#include "ck_hash.h"
#include "profile.h"
#include "working_rule.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_STAGE 4

#define BUCKETS 1024
static tune_class *table[BUCKETS];
static tune_class *all_classes; /* in order of creation, for the rules */
static tune_class **all_tail = &all_classes;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

tune_class *ckp_autotune_classes(void) { return all_classes; }

/* Arrivals and exits on world rank 0's clock: CLOCK_MONOTONIC, which the
 * ranks of one node share, less the node's offset measured at MPI_Init
 * (clock.c). Drift after that is not followed: at 1 ppm it moves a rank
 * 1 us in a second, the same for every candidate of a stage's rotation. */
static ckp_clock tune_clock;
static double tune_offset;

void ckp_autotune_started(void)
{
    if (!ckp_tune_cfg.on) return;
    ckp_clock_start(&tune_clock);
    tune_offset = tune_clock.offset_init_s;
}

double ckp_autotune_now(void) { return ckp_clock_monotonic() - tune_offset; }

void ckp_autotune_stopped(void)
{
    if (ckp_tune_cfg.on) ckp_clock_release(&tune_clock);
}

static size_t hash_key(int coll, uint64_t comm, size_t bytes, int root, MPI_Datatype dt, MPI_Op op, int in_place)
{
    uint64_t h = CK_FNV1A_BASIS;
    const uint64_t v[] = {(uint64_t)coll, comm, (uint64_t)bytes, (uint64_t)(int64_t)root,
                          (uint64_t)(uintptr_t)dt, (uint64_t)(uintptr_t)op, (uint64_t)in_place};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) h = ck_fnv1a_u64(h, v[i]);
    return (size_t)(h % BUCKETS);
}

static int same_key(const tune_class *k, int coll, uint64_t comm, size_t bytes, int root, MPI_Datatype dt,
                    MPI_Op op, int in_place)
{
    return k->coll == coll && k->comm == comm && k->bytes == bytes && k->root == root && k->dt == dt &&
           k->op == op && k->in_place == in_place;
}

static int is_reduction(ck_collective c) { return ck_collective_has_op(c); }

/* MPI_IN_PLACE that every rank passes alike. */
static int in_place_everywhere(ck_collective c)
{
    return c == CK_ALLREDUCE || c == CK_ALLGATHER || c == CK_ALLTOALL || c == CK_REDUCE_SCATTER;
}

static void settle(tune_class *k, int col, const char *why)
{
    k->state = SETTLED;
    k->choice = col;
    k->why = why;
    free(k->pending);
    free(k->order);
    k->pending = NULL;
    k->order = NULL;
}

void ckp_autotune_class_names(const tune_class *k, char dt[CKP_RACE_NAME], char op[CKP_RACE_NAME])
{
    if (!ck_collective_has_op((ck_collective)k->coll)) {
        strcpy(dt, "-");
        strcpy(op, "-");
        return;
    }
    int n = 0;
    char name[MPI_MAX_OBJECT_NAME] = "";
    if (k->dt != MPI_DATATYPE_NULL && PMPI_Type_get_name(k->dt, name, &n) != MPI_SUCCESS) name[0] = '\0';
    /* a name with a space would not survive the line's fields */
    for (char *s = name; *s; s++)
        if (*s == ' ' || *s == '\t') *s = '_';
    snprintf(dt, CKP_RACE_NAME, "%s", k->dt == MPI_DATATYPE_NULL ? "derived" : name[0] ? name : "unnamed");
    const char *o = ckp_op_name(k->op);
    snprintf(op, CKP_RACE_NAME, "%s", o ? o : "user");
}

/* COLLKIT_AUTOTUNE_FROM's race state of this class, if any: the same key
 * (the communicator's group, bytes, root, datatype, op, in place) and the
 * same candidates in the same order, so that its samples mean what they
 * did. A class whose candidates changed (another --candidates) starts over. */
static ckp_race *race_of(const tune_class *k)
{
    char dt[CKP_RACE_NAME], op[CKP_RACE_NAME], name[CKP_RACE_NAME];
    ckp_autotune_class_names(k, dt, op);
    for (size_t i = 0; i < ckp_cfg.races.n; i++) {
        ckp_race *r = &ckp_cfg.races.race[i];
        if (r->used || (int)r->coll != k->coll || r->group != k->comm || r->bytes != k->bytes || r->root != k->root ||
            r->in_place != k->in_place || r->ncand != k->ncand || strcmp(r->datatype, dt) != 0 ||
            strcmp(r->op, op) != 0)
            continue;
        int same = 1;
        for (int j = 0; j < k->ncand && same; j++)
            same = strcmp(ckp_column_name((ck_collective)k->coll, k->cand[j].col, name, sizeof name), r->cand[j].name) == 0;
        if (same) return r;
    }
    return NULL;
}

/* The race goes on where the state left it: its samples (taken over), looks,
 * settings, counts and times; the stage after its last look. */
static void continue_race(tune_class *k, ckp_race *r)
{
    r->used = 1;
    for (int j = 0; j < k->ncand; j++) {
        tune_cand *c = &k->cand[j];
        c->t = r->cand[j].t;
        r->cand[j].t = NULL;
        c->n = c->cap = r->cand[j].n;
        c->alive = r->cand[j].out_look == 0;
        c->out_look = r->cand[j].out_look;
        c->out_p = r->cand[j].out_p;
        ckp_sort(c->t, c->n);
    }
    k->calls = k->start_calls = r->calls;
    k->explored = r->explored;
    k->looks = r->looks;
    k->max_looks = r->max_looks;
    k->alpha = r->alpha;
    k->resume_at = r->resume_at;
    k->explore_s = r->working_s;
    k->wait_s = r->waiting_s;
    k->paused_s = r->paused_s;
    k->continued = 1;
    ckp_policy_tally(k);
    k->state = k->resume_at > k->calls ? PAUSED : EXPLORING;
}

static void begin_stage(tune_class *k, long stage)
{
    k->stage = stage;
    k->in_stage = 0;
    int n = 0;
    for (int i = 0; i < k->ncand; i++)
        if (k->cand[i].alive) k->order[n++] = i;
    k->alive = n;
}

/* A stage's buffer for n calls: its arrivals and exits while it runs, at the
 * look the agreement's values (CKP_WORK_VALUES a call), the failure flag and
 * the root's n arrivals (look()). */
static size_t pending_len(size_t n) { return ((CKP_WORK_VALUES + 1) * n + 1) * sizeof(double); }

/* The class's candidates: the library's own collective, every libcollkit
 * algorithm allowed that can run its calls, the library's own algorithms
 * allowed. From values equal on every rank only: the class's key and the
 * call's count, datatype, op and root, which its calls share. -1: out of
 * memory. */
static int add_candidates(tune_class *k, const ckp_comm *info, const ck_mpi_args *m)
{
    const ck_collective c = (ck_collective)k->coll;
    k->cand = calloc((size_t)ckp_nalgs[c] + (size_t)ckp_lib_nalgs(c) + 1, sizeof *k->cand);
    if (!k->cand) return -1;
    k->cand[k->ncand++] = (tune_cand){.col = CKP_LIBRARY, .alive = 1};
    for (int a = 0; a < ckp_nalgs[c]; a++) {
        if (!(ckp_tune_cfg.allowed[c] & (1u << a))) continue;
        if (ckp_fallback_reason(ckp_algs[c][a], c, info, k->bytes, m->rcount, m->rtype, m->op, m->root) >= 0)
            continue;
        k->cand[k->ncand++] = (tune_cand){.col = a, .alive = 1};
    }
    /* The library's own algorithms where it switches them per call: a CVAR
     * write before the call and one after, global to the process, so not
     * while other threads may call collectives at the same time. */
    /* Nor on an in-place reduce_scatter: MPICH 5.0.2's pairwise then writes
     * past the result block (MPI leaves that part of the buffer undefined;
     * the library's default keeps it), so the program could see a change
     * the default never makes. */
    const int lib_ok = !ckp_multi_threaded && !(c == CK_REDUCE_SCATTER && k->in_place);
    /* Under Open MPI each runs on a duplicate of the communicator
     * (dispatch.c, lib_comm), made at its first call there. */
    const MPI_Op op = is_reduction(c) ? m->op : MPI_OP_NULL;
    for (int i = 0; i < ckp_lib_nalgs(c) && lib_ok; i++)
        if ((ckp_tune_cfg.allowed_lib[c] & (1u << i)) && ckp_lib_alg_can(c, i, k->p, op))
            k->cand[k->ncand++] = (tune_cand){.col = CKP_LIB_COL(i), .alive = 1};
    return 0;
}

/* The race from its first stage, or from a race state's. */
static void start_race(tune_class *k, ckp_race *race)
{
    if (k->ncand == 1) {
        settle(k, CKP_LIBRARY, "no other candidate");
        return;
    }
    if (!race && (long)k->ncand * FIRST_STAGE > ckp_tune_cfg.max_calls) {
        settle(k, CKP_LIBRARY, "COLLKIT_AUTOTUNE_CALLS too few for one stage");
        return;
    }
    /* Samples per candidate at the looks: 4, 8, 16, ...; at least two
     * candidates share the calls until the last look. */
    long per = ckp_tune_cfg.max_calls / 2;
    k->max_looks = 1;
    for (long n = FIRST_STAGE; n * 2 <= per; n *= 2) k->max_looks++;
    /* A continued race is in the stage after its last look (4, 4, 8, 16, ... calls a candidate), at
     * most half the calls the class made in the last run, shared by the candidates still in the race:
     * a stage the run cannot finish would be cut off at its end, dropped, and the race would never
     * look again (a class of 300 calls a run, the next stage 320: seen in hpcc). */
    long stage = race && race->looks > 1 ? (long)FIRST_STAGE << (race->looks - 1) : FIRST_STAGE;
    if (race) {
        int alive = 0;
        for (int j = 0; j < race->ncand; j++) alive += race->cand[j].out_look == 0;
        k->stage_cap = race->run_calls / (2L * (alive > 0 ? alive : 1));
        if (k->stage_cap < 1) k->stage_cap = 1;
        if (stage > k->stage_cap) stage = k->stage_cap;
    }
    k->order = malloc((size_t)k->ncand * sizeof *k->order);
    k->pending = malloc(pending_len((size_t)k->ncand * (size_t)stage));
    if (!k->order || !k->pending) {
        settle(k, CKP_LIBRARY, "out of memory");
        return;
    }
    /* From values equal on every rank only (not the handles, not the order
     * in which this rank met its classes). */
    const uint64_t mix[] = {(uint64_t)k->coll, (uint64_t)k->bytes, (uint64_t)(int64_t)k->root,
                            (uint64_t)k->in_place, (uint64_t)k->p};
    uint64_t h = CK_FNV1A_BASIS;
    for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++) h = ck_fnv1a_u64(h, mix[i]);
    k->offset = (long)(h % (uint64_t)k->ncand);
    k->state = EXPLORING;
    if (race) continue_race(k, race);
    begin_stage(k, stage);
}

/* A class at its first call: its key; in a race at once where a race state
 * of COLLKIT_AUTOTUNE_FROM continues it (race states name their
 * candidates); else settled where a rule of it matches; else the library,
 * untimed, until its call past COLLKIT_AUTOTUNE_AFTER, where its candidates
 * and first stage are made (ckp_autotune_begin). Most classes of a program
 * are called a few times and never get that far: their first call costs a
 * key and a count, not the candidates' checks and buffers (hpcc: some 30
 * such classes, 8-15 us of working time each while they were made at once). */
static tune_class *make_class(ck_collective c, MPI_Comm comm, const ckp_comm *info, const ck_mpi_args *m,
                              size_t bytes, int root, MPI_Datatype dt, MPI_Op op, int in_place)
{
    tune_class *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    k->coll = (int)c;
    k->comm = info->tune_key;
    k->bytes = bytes;
    k->root = root;
    k->dt = dt;
    k->op = op;
    k->in_place = in_place;
    k->p = info->size;
    k->world = comm == MPI_COMM_WORLD;
    k->choice = CKP_LIBRARY;
    k->alpha = ckp_tune_cfg.alpha;
    k->state = EXPLORING;
    if (ckp_tune_cfg.from && ckp_cfg.races.n) {
        if (add_candidates(k, info, m) != 0) {
            settle(k, CKP_LIBRARY, "out of memory");
            return k;
        }
        ckp_race *race = race_of(k);
        if (race) {
            start_race(k, race);
            return k;
        }
    }
    /* A rule's libcollkit algorithm where it can run the calls (as under
     * COLLKIT_RULES), else the library; the library's own algorithms decide
     * for themselves what they can run. */
    for (size_t i = 0; ckp_tune_cfg.from && i < ckp_cfg.nrules; i++) {
        const ckp_rule *r = &ckp_cfg.rules[i];
        if (r->coll != c || k->p < r->pmin || k->p > r->pmax || bytes < r->bmin || bytes > r->bmax) continue;
        const int col = r->alg < 0 ? CKP_LIBRARY : r->alg;
        const int ok =
            col == CKP_LIBRARY ? 1
            : col > CKP_LIBRARY
                ? ckp_lib_alg_can(c, col - CKP_LIB_COL(0), k->p, is_reduction(c) ? m->op : MPI_OP_NULL)
                : ckp_fallback_reason(ckp_algs[c][col], c, info, bytes, m->rcount, m->rtype, m->op, m->root) < 0;
        k->from_rules = 1;
        settle(k, ok ? col : CKP_LIBRARY, "from the rules");
        return k;
    }
    if (k->cand) start_race(k, NULL); /* its candidates made for the race states already */
    return k;
}

/* A reduction's datatype and op as the key holds them: a predefined op as
 * itself, a user op as MPI_OP_NULL; a named datatype as itself, a derived
 * one as MPI_DATATYPE_NULL. A program that makes a type or an op per call
 * would otherwise make a class per call; such a class is `loose`, and each
 * of its calls is checked again (ckp_autotune_begin). */
static int predefined_op(MPI_Op op) { return ck_op_of(op) != NULL; }


/* A communicator as the classes key it: its group, the world ranks of its
 * members in order, so that communicators a program makes and frees per
 * iteration share their classes and what they learned. Every member
 * computes the same key, without a message. Sharing is safe: a correct
 * program calls the collectives of communicators over one group in one
 * order at every rank (a blocking collective may synchronise, MPI 4.1
 * section 6.14), so every rank numbers a shared class's calls alike. Not
 * where several threads may call at once (two communicators' calls may then
 * interleave differently per rank), nor for a group outside MPI_COMM_WORLD
 * (spawned or connected processes): there, the instance (odd keys; groups'
 * are even). */
static uint64_t comm_key(MPI_Comm comm, const ckp_comm *info)
{
    const uint64_t instance = (info->serial << 1) | 1u;
    int cmp = MPI_UNEQUAL;
    if (ckp_multi_threaded || PMPI_Comm_compare(comm, MPI_COMM_WORLD, &cmp) != MPI_SUCCESS) return instance;
    uint64_t h = ck_fnv1a_u64(CK_FNV1A_BASIS, (uint64_t)info->size);
    if (cmp == MPI_IDENT || cmp == MPI_CONGRUENT) return ((h ^ 0x776f726c64u) & ~(uint64_t)1) | 2; /* "world" */
    /* In blocks on the stack: no allocation that could fail on one rank
     * only and give it another key than the others. */
    enum { BLOCK = 256 };
    int mine[BLOCK], world[BLOCK];
    MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
    int ok = PMPI_Comm_group(comm, &g) == MPI_SUCCESS && PMPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS;
    for (int at = 0; ok && at < info->size; at += BLOCK) {
        const int n = info->size - at < BLOCK ? info->size - at : BLOCK;
        for (int i = 0; i < n; i++) mine[i] = at + i;
        ok = PMPI_Group_translate_ranks(g, n, mine, wg, world) == MPI_SUCCESS;
        for (int i = 0; ok && i < n; i++) {
            ok = world[i] != MPI_UNDEFINED;
            h = ck_fnv1a_u64(h, (uint64_t)world[i]);
        }
    }
    if (g != MPI_GROUP_NULL) PMPI_Group_free(&g);
    if (wg != MPI_GROUP_NULL) PMPI_Group_free(&wg);
    h &= ~(uint64_t)1;
    return !ok ? instance : h ? h : 2; /* 0 means "not yet computed" */
}

static tune_class *find_class(ck_collective c, MPI_Comm comm, ckp_comm *info, const ck_mpi_args *m, size_t bytes)
{
    if (info->tune_key == 0) info->tune_key = comm_key(comm, info);
    const int red = is_reduction(c);
    const int root = ck_collective_has_root(c) ? m->root : -1;
    MPI_Datatype dt = red ? m->rtype : MPI_DATATYPE_NULL;
    MPI_Op op = red ? m->op : MPI_OP_NULL;
    const int in_place = in_place_everywhere(c) && m->sbuf == MPI_IN_PLACE;
    tune_class *k = ckp_multi_threaded ? NULL : info->tune_last;
    if (k && same_key(k, (int)c, info->tune_key, bytes, root, dt, op, in_place)) return k;
    if (red && !predefined_op(op)) op = MPI_OP_NULL;
    if (red && !ckp_type_named(dt)) dt = MPI_DATATYPE_NULL;
    if (k && same_key(k, (int)c, info->tune_key, bytes, root, dt, op, in_place)) return k;
    if (ckp_multi_threaded) pthread_mutex_lock(&table_lock);
    size_t h = hash_key((int)c, info->tune_key, bytes, root, dt, op, in_place);
    for (k = table[h]; k; k = k->next)
        if (same_key(k, (int)c, info->tune_key, bytes, root, dt, op, in_place)) break;
    if (!k && (k = make_class(c, comm, info, m, bytes, root, dt, op, in_place)) != NULL) {
        k->next = table[h];
        table[h] = k;
        *all_tail = k;
        all_tail = &k->created;
    }
    if (ckp_multi_threaded) pthread_mutex_unlock(&table_lock);
    else info->tune_last = k;
    return k;
}

void ckp_autotune_begin(ck_collective c, MPI_Comm comm, const ckp_comm *info, const ck_mpi_args *m,
                        size_t bytes, ckp_tune_call *tc)
{
    tc->cls = NULL;
    tc->col = CKP_LIBRARY;
    tc->timed = 0;
    tc->slow_s = 0.0;
    tune_class *k = find_class(c, comm, (ckp_comm *)info, m, bytes);
    if (!k) return; /* out of memory: the library, untimed */
    tc->cls = k;
    k->calls++;
    if (!k->cand && k->state == EXPLORING && k->calls > ckp_tune_cfg.after) {
        if (add_candidates(k, info, m) != 0) settle(k, CKP_LIBRARY, "out of memory");
        else start_race(k, NULL);
    }
    if (k->state == PAUSED && k->calls > k->resume_at) k->state = EXPLORING;
    if (k->state != EXPLORING || k->calls <= ckp_tune_cfg.after) {
        tc->col = k->choice;
    } else {
        /* Round j of the stage runs its alive candidates rotated by j (and
         * by the class's own offset: a class called once still runs one
         * candidate of its own, not always the library). */
        long round = k->in_stage / k->alive, pos = (k->in_stage + round + k->offset) % k->alive;
        tc->col = k->cand[k->order[pos]].col;
        tc->timed = 1;
    }
    /* A loose class (a user op, a derived datatype) may hold calls its
     * candidate cannot run (a non-commutative op after a commutative one):
     * those run the library and are not counted, alike on every rank (the
     * reason reads only values equal on every rank). */
    if (tc->col < CKP_LIBRARY && (k->op == MPI_OP_NULL || k->dt == MPI_DATATYPE_NULL) && is_reduction(c) &&
        ckp_fallback_reason(ckp_algs[c][tc->col], c, info, bytes, m->rcount, m->rtype, m->op, m->root) >= 0) {
        tc->col = CKP_LIBRARY;
        tc->timed = 0;
    }
    /* The same for the library's algorithm under Open MPI (a non-commutative op). */
    if (tc->col > CKP_LIBRARY && k->op == MPI_OP_NULL && is_reduction(c) &&
        !ckp_lib_alg_can(c, tc->col - CKP_LIB_COL(0), info->size, m->op)) {
        tc->col = CKP_LIBRARY;
        tc->timed = 0;
    }
    /* Test-only (COLLKIT_AUTOTUNE_TEST_SLOW): looked up on exploring calls
     * alone, so that a settled class never reads it. */
    for (int i = 0; tc->timed && i < ckp_tune_cfg.nslow; i++)
        if (ckp_tune_cfg.slow[i].coll == (int)c && ckp_tune_cfg.slow[i].col == tc->col &&
            (ckp_tune_cfg.slow[i].rank < 0 || ckp_tune_cfg.slow[i].rank == info->rank))
            tc->slow_s += ckp_tune_cfg.slow[i].us * 1e-6;
}

static int reserve(tune_cand *c, size_t n)
{
    if (c->cap >= n) return 0;
    double *t = realloc(c->t, n * sizeof *t);
    if (!t) return -1;
    c->t = t;
    c->cap = n;
    return 0;
}

/* The end of a stage: agree, eliminate, settle or go on. Every rank reaches
 * it at the same call of the class. What may fail (memory) is reserved
 * before the agreement and its failure travels in it (the last element), so
 * that no rank decides alone; after it, only agreed numbers are read, and
 * every rank decides alike. */
static void look(tune_class *k, const ckp_comm *info)
{
    const long n = k->in_stage;
    long next = k->looks == 0 ? k->stage : 2 * k->stage; /* 4, 4, 8, 16: totals 4, 8, 16, 32 */
    if (k->stage_cap > 0 && next > k->stage_cap) next = k->stage_cap;
    const ckp_dep_kind kind = ckp_dep_kind_of((ck_collective)k->coll);
    const int is_root = k->root == info->rank;
    int fail = 0;
    size_t most = 0;
    for (int i = 0; i < k->ncand; i++) {
        tune_cand *c = &k->cand[i];
        if (!c->alive) continue;
        if (reserve(c, c->n + (size_t)k->stage) != 0) fail = 1;
        if (c->n + (size_t)k->stage > most) most = c->n + (size_t)k->stage;
    }
    double *scratch = malloc(2 * 2 * most * sizeof *scratch);
    double *grown = realloc(k->pending, pending_len((size_t)(next * k->alive)));
    if (grown) k->pending = grown;
    if (!scratch || !grown) fail = 1;
    /* The stage's pairs (a, e) at [2j, 2j + 1] become the call's values at
     * [V j, V j + V); from the last call down, so none is read after it is
     * overwritten. The root's arrivals, where a rank needs them, after. */
    double *v = k->pending, *root_arrival = v + CKP_WORK_VALUES * n + 1;
    int rc = MPI_SUCCESS;
    if (ckp_dep_needs_root_arrival(kind)) {
        if (is_root)
            for (long j = 0; j < n; j++) root_arrival[j] = v[2 * j];
        rc = PMPI_Bcast(root_arrival, (int)n, MPI_DOUBLE, k->root, info->dup);
    }
    for (long j = n - 1; j >= 0; j--) {
        const double a = v[2 * j], e = v[2 * j + 1];
        /* without the root's arrivals (a failed broadcast) the look ends below: any gate will do */
        const double gate = rc == MPI_SUCCESS && ckp_dep_needs_root_arrival(kind) ? root_arrival[j] : a;
        ckp_work_contribute(kind, is_root, a, e, gate, v + CKP_WORK_VALUES * j);
    }
    v[CKP_WORK_VALUES * n] = rc != MPI_SUCCESS ? 2.0 : fail; /* 2: the broadcast failed, 1: memory */
    const int count = CKP_WORK_VALUES * (int)n + 1;
    int rc2 = PMPI_Allreduce(MPI_IN_PLACE, v, count, MPI_DOUBLE, MPI_MAX, info->dup);
    if (rc2 != MPI_SUCCESS || v[CKP_WORK_VALUES * n] != 0.0) {
        free(scratch);
        settle(k, CKP_LIBRARY, rc2 != MPI_SUCCESS || v[CKP_WORK_VALUES * n] == 2.0 ? "the agreement failed"
                                                                                  : "out of memory");
        return;
    }
    for (long j = 0; j < n; j++) {
        long round = j / k->alive, pos = (j + round + k->offset) % k->alive;
        tune_cand *c = &k->cand[k->order[pos]];
        double working, whole;
        ckp_work_agreed(kind, v + CKP_WORK_VALUES * j, &working, &whole);
        c->t[c->n++] = working;
        k->explore_s += working;
        k->wait_s += whole - working;
    }
    k->looks++;
    for (int i = 0; i < k->ncand; i++)
        if (k->cand[i].alive) ckp_sort(k->cand[i].t, k->cand[i].n);
    const ckp_verdict verdict = ckp_policy_look(k, next, scratch);
    free(scratch);
    if (verdict.settle) settle(k, verdict.choice, verdict.why);
    else begin_stage(k, next);
}

/* At MPI_Finalize, a look at the stage each class over the world's group
 * was in, where every candidate still in the race has run in it: its whole
 * rounds then count and go on in the race state, so that a class called too few
 * times a run to finish its first stage (calls past COLLKIT_AUTOTUNE_AFTER
 * under 4 x its candidates) still adds up over runs chained with
 * --autotune-from. Only the world's group: it alone is still whole at
 * MPI_Finalize on every rank; a subgroup's communicators may be freed.
 * Every rank meets these classes in one order (a correct program calls
 * collectives over one group in one order everywhere) and decides from
 * values equal on every rank (states, counts), so all take the same looks. */
void ckp_autotune_close(void)
{
    if (!ckp_tune_cfg.on) return;
    ckp_settled_flush();
    ckp_comm *world = NULL;
    if (ckp_comm_of(MPI_COMM_WORLD, &world) != MPI_SUCCESS) return;
    if (world->tune_key == 0) world->tune_key = comm_key(MPI_COMM_WORLD, world);
    ckp_comm closing = *world;
    closing.dup = MPI_COMM_NULL;
    for (tune_class *k = all_classes; k; k = k->created) {
        if (k->comm != world->tune_key || k->state != EXPLORING || !k->cand || k->in_stage < k->alive) continue;
        /* The looks' own communicator, so that they never meet a message of the program's. */
        if (closing.dup == MPI_COMM_NULL && PMPI_Comm_dup(MPI_COMM_WORLD, &closing.dup) != MPI_SUCCESS) return;
        /* Whole rounds only (each a call of every candidate in the race), so
         * that a run adds as many samples to every candidate. */
        k->in_stage -= k->in_stage % k->alive;
        look(k, &closing);
    }
    if (closing.dup != MPI_COMM_NULL) PMPI_Comm_free(&closing.dup);
}

void ckp_autotune_end(ckp_tune_call *tc, const ckp_comm *info, double arrival, double exit)
{
    tune_class *k = tc->cls;
    if (!k || !tc->timed) return;
    if (tc->slow_s > 0.0) {
        /* Test-only: the candidate made slow on purpose. This rank leaves
         * the call that much later, as if the time were spent inside it:
         * held here, and its exit moved. */
        for (const double until = ckp_autotune_now() + tc->slow_s; ckp_autotune_now() < until;) continue;
        exit += tc->slow_s;
    }
    k->pending[2 * k->in_stage] = arrival;
    k->pending[2 * k->in_stage + 1] = exit;
    k->in_stage++;
    k->explored++;
    if (k->in_stage == k->stage * k->alive) look(k, info);
}
